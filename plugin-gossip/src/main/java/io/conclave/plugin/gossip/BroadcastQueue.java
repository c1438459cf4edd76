package io.conclave.plugin.gossip;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Broadcasts waiting to be piggybacked, as memberlist's {@code TransmitLimitedQueue}: a newer broadcast about a
 * member replaces the older one; the least sent go first; each retires after {@code limit} transmissions. Bounded:
 * past {@link GossipLimits#MAX_QUEUED_BROADCASTS} the most sent are dropped. Not thread-safe: the node's context only.
 */
final class BroadcastQueue {

    private static final class Broadcast {
        final String key;
        final byte[] message;
        final long order;
        final Runnable onRetired;
        int transmits;

        Broadcast(String key, byte[] message, long order, Runnable onRetired) {
            this.key = key;
            this.message = message;
            this.order = order;
            this.onRetired = onRetired;
        }
    }

    private static final Comparator<Broadcast> LEAST_SENT_NEWEST_FIRST =
            Comparator.<Broadcast>comparingInt(b -> b.transmits).thenComparing(b -> -b.order);

    private final Map<String, Broadcast> byKey = new LinkedHashMap<>();
    private long nextOrder;

    /** Queues {@code message} about {@code key} (a member's name), replacing what was queued about it. */
    void add(String key, byte[] message, Runnable onRetired) {
        Broadcast previous = byKey.remove(key);
        if (previous != null && previous.onRetired != null) {
            previous.onRetired.run();
        }
        byKey.put(key, new Broadcast(key, message, nextOrder++, onRetired));
        if (byKey.size() > GossipLimits.MAX_QUEUED_BROADCASTS) {
            Broadcast mostSent = byKey.values().stream().max(LEAST_SENT_NEWEST_FIRST).orElseThrow();
            retire(mostSent);
        }
    }

    /**
     * The broadcasts to piggyback in a packet with {@code budgetBytes} left, least sent first; each counts one
     * transmission and retires at {@code limit}.
     */
    List<byte[]> take(int budgetBytes, int limit) {
        return select(budgetBytes, limit, true);
    }

    /**
     * The broadcasts {@link #take} would pick, without counting a transmission: for a packet to a member believed
     * failed, which may never receive it, so that it does not use up what the members that may be alive need.
     */
    List<byte[]> peek(int budgetBytes) {
        return select(budgetBytes, Integer.MAX_VALUE, false);
    }

    private List<byte[]> select(int budgetBytes, int limit, boolean count) {
        if (byKey.isEmpty()) {
            return List.of();
        }
        List<Broadcast> candidates = new ArrayList<>(byKey.values());
        candidates.sort(LEAST_SENT_NEWEST_FIRST);
        List<byte[]> taken = new ArrayList<>();
        int left = budgetBytes;
        for (Broadcast broadcast : candidates) {
            if (taken.size() == GossipLimits.MAX_MESSAGES_PER_PACKET - 1) {
                break;
            }
            if (broadcast.message.length > left) {
                continue;
            }
            left -= broadcast.message.length;
            taken.add(broadcast.message);
            if (count && ++broadcast.transmits >= limit) {
                retire(broadcast);
            }
        }
        return taken;
    }

    private void retire(Broadcast broadcast) {
        byKey.remove(broadcast.key);
        if (broadcast.onRetired != null) {
            broadcast.onRetired.run();
        }
    }

    /** Forgets every broadcast, telling those waiting on one. */
    void clear() {
        Iterator<Broadcast> iterator = byKey.values().iterator();
        List<Runnable> waiting = new ArrayList<>();
        while (iterator.hasNext()) {
            Broadcast broadcast = iterator.next();
            if (broadcast.onRetired != null) {
                waiting.add(broadcast.onRetired);
            }
            iterator.remove();
        }
        waiting.forEach(Runnable::run);
    }

    int size() {
        return byKey.size();
    }
}
