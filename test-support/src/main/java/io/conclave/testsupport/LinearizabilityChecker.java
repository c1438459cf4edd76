package io.conclave.testsupport;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Checks that a key/value history is linearizable: a Wing &amp; Gong search with Lowe's memoization of
 * (operations linearized, state), as Porcupine does, run per key (linearizability is compositional).
 * Operations whose outcome is unknown return at infinity: they may be linearized anywhere after their
 * invocation, including after every other operation — which is the same as never having happened.
 */
public final class LinearizabilityChecker {

    /** The answer for one key: linearizable or not, and whether the search gave up at its budget. */
    public record Result(boolean linearizable, boolean exhausted, String key, List<ClientOp> operations) {
    }

    private static final long STEP_BUDGET = 5_000_000;

    private LinearizabilityChecker() {
    }

    /** Checks each key's history; a search that exceeds its budget says so ({@link Result#exhausted}). */
    public static List<Result> check(List<ClientOp> history) {
        Map<String, List<ClientOp>> byKey = new HashMap<>();
        for (ClientOp op : history) {
            if (op.kind == ClientOp.Kind.GET && op.unknown()) {
                continue; // a read with no answer had no effect
            }
            byKey.computeIfAbsent(op.key, key -> new ArrayList<>()).add(op);
        }
        List<Result> results = new ArrayList<>();
        for (Map.Entry<String, List<ClientOp>> entry : byKey.entrySet()) {
            results.add(checkKey(entry.getKey(), entry.getValue()));
        }
        return results;
    }

    private static final class Node {
        final ClientOp op;
        final int id;
        final boolean call;
        final long time;
        Node match;
        Node previous;
        Node next;

        Node(ClientOp op, int id, boolean call, long time) {
            this.op = op;
            this.id = id;
            this.call = call;
            this.time = time;
        }
    }

    private record Step(boolean ok, String state) {
    }

    private static Step step(String state, ClientOp op) {
        return switch (op.kind) {
            case PUT -> new Step(true, op.value);
            case DELETE -> new Step(true, null);
            case GET -> new Step(Objects.equals(op.output, String.valueOf(state)), state);
            case CAS -> {
                boolean matches = Objects.equals(state, op.expected);
                if (op.unknown()) {
                    yield new Step(true, matches ? op.value : state);
                }
                yield matches ? new Step(op.output.equals("true"), op.value) : new Step(op.output.equals("false"), state);
            }
        };
    }

    private static Result checkKey(String key, List<ClientOp> ops) {
        List<Node> events = new ArrayList<>();
        for (int i = 0; i < ops.size(); i++) {
            ClientOp op = ops.get(i);
            Node call = new Node(op, i, true, op.invokeTime);
            Node ret = new Node(op, i, false, op.returnTime);
            call.match = ret;
            events.add(call);
            events.add(ret);
        }
        events.sort(Comparator.comparingLong((Node n) -> n.time).thenComparing(n -> !n.call));
        Node head = new Node(null, -1, false, Long.MIN_VALUE);
        Node tail = head;
        for (Node event : events) {
            tail.next = event;
            event.previous = tail;
            tail = event;
        }
        Map<BitSet, Set<String>> cache = new HashMap<>();
        ArrayDeque<Object[]> calls = new ArrayDeque<>();
        BitSet linearized = new BitSet(ops.size());
        String state = null;
        Node entry = head.next;
        long steps = 0;
        while (head.next != null) {
            if (++steps > STEP_BUDGET) {
                return new Result(true, true, key, ops);
            }
            if (entry.call) {
                Step result = step(state, entry.op);
                boolean moved = false;
                if (result.ok()) {
                    BitSet next = (BitSet) linearized.clone();
                    next.set(entry.id);
                    if (cache.computeIfAbsent(next, bits -> new HashSet<>()).add(String.valueOf(result.state()))) {
                        calls.push(new Object[] {entry, state});
                        state = result.state();
                        linearized.set(entry.id);
                        lift(entry);
                        entry = head.next;
                        moved = true;
                    }
                }
                if (!moved) {
                    entry = entry.next;
                }
            } else {
                if (calls.isEmpty()) {
                    return new Result(false, false, key, ops);
                }
                Object[] top = calls.pop();
                entry = (Node) top[0];
                state = (String) top[1];
                linearized.clear(entry.id);
                unlift(entry);
                entry = entry.next;
            }
        }
        return new Result(true, false, key, ops);
    }

    private static void lift(Node call) {
        call.previous.next = call.next;
        if (call.next != null) {
            call.next.previous = call.previous;
        }
        Node ret = call.match;
        ret.previous.next = ret.next;
        if (ret.next != null) {
            ret.next.previous = ret.previous;
        }
    }

    private static void unlift(Node call) {
        Node ret = call.match;
        ret.previous.next = ret;
        if (ret.next != null) {
            ret.next.previous = ret;
        }
        call.previous.next = call;
        if (call.next != null) {
            call.next.previous = call;
        }
    }
}
