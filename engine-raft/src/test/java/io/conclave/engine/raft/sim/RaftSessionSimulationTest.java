package io.conclave.engine.raft.sim;

import io.conclave.api.storage.LogEntry;
import io.conclave.engine.raft.core.ProposalOutcome;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvTxn;
import io.conclave.engine.raft.kv.Session;
import io.conclave.engine.raft.kv.SessionTtl;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sessions and locks inside the Raft simulator: every server runs the real core and applies its log to the product's
 * key/value state machine ({@link RealKvMachine}); every leader times TTLs with the product's {@link SessionTtl} by its
 * own clock (an offset of its own, and a rate up to 20 % off) and destroys an expired session with an entry that names
 * the renew it expired, retrying every second while it leads, as the server's {@code SessionKeeper} does. Clients, over
 * the simulated network, create sessions with TTLs of 1–3 s, renew them, pause for up to four TTLs, take a lock with a
 * transaction and then write fenced by it (a {@code check-index} on the lock's ModifyIndex, or a {@code check-session}).
 * Faults come from {@link RandomizedRun} (partitions, one-way cuts, crashes and restarts, pauses, leadership transfers)
 * with message loss, long delays, disk stalls and clock skew; clients are cut off from servers too.
 *
 * <p>The checkers, on every committed entry, besides the simulator's own: no TTL expiry takes effect sooner than the
 * session's TTL after its last renew took effect, in real time, whichever leader's clock timed it (an entry "takes
 * effect" when a majority first holds it: no leader can time from earlier); no fenced write is accepted unless its
 * writer's session holds the lock with the LockIndex the writer acquired; at the end every server holds the same state,
 * byte for byte. {@code -Dsim.seeds=N} (500 in the normal run), {@code -Dsim.seed=S} replays one.
 */
@Timeout(900)
class RaftSessionSimulationTest {

    static final String TEST = "RaftSessionSimulationTest";
    static final long MS = 1_000_000L;
    static final String LOCK = "lock/k";
    static final long FAULT_PHASE_MILLIS = 20_000;
    static final long REQUEST_TIMEOUT_MILLIS = 1_500;

    /** Counts over a run, so that a run that exercised nothing does not pass for one that checked. */
    static final class Counts {
        long expiries;
        long voidedExpiries;
        long fencedAccepted;
        long fencedRefused;
        long locks;
        long leaders;

        void add(Counts other) {
            expiries += other.expiries;
            voidedExpiries += other.voidedExpiries;
            fencedAccepted += other.fencedAccepted;
            fencedRefused += other.fencedRefused;
            locks += other.locks;
            leaders += other.leaders;
        }
    }

    /** The session keeper of every server, and the checkers, as the simulation's hooks. */
    static final class Keepers implements Simulation.NodeHooks {
        final Map<String, SessionTtl> ttls = new HashMap<>();
        final Counts counts = new Counts();
        /** Index → term → when a majority of the servers first held that entry on disk. */
        final Map<Long, Map<Long, Long>> onMajoritySince = new HashMap<>();
        /** Index → when its committed entry first was on a majority. */
        final Map<Long, Long> committedSince = new HashMap<>();
        /** The indexes checked already (on the first server that applied each). */
        final Set<Long> checked = new HashSet<>();
        /** Set by {@link #applying} for {@link #applied}: the state before the entry, as the checks need it. */
        private Session sessionBefore;
        private KvEntry lockBefore;
        private boolean checking;

        private KvStateMachine machine(SimNode node) {
            return ((RealKvMachine) node.stateMachine()).machine;
        }

        @Override
        public void started(SimNode node) {
            SessionTtl ttl = new SessionTtl();
            ttls.put(node.id, ttl);
            machine(node).onSessionChange(new KvStateMachine.SessionListener() {
                @Override
                public void created(Session session) {
                    ttl.arm(session, node.clockNanos());
                }

                @Override
                public void renewed(Session session) {
                    ttl.arm(session, node.clockNanos());
                }

                @Override
                public void destroyed(Session session, List<String> keys) {
                    ttl.forget(session.id());
                }
            });
        }

        @Override
        public void crashed(SimNode node) {
            ttls.get(node.id).follow();
        }

        @Override
        public void leads(SimNode node) {
            counts.leaders++;
            ttls.get(node.id).lead(node.clockNanos(), machine(node).sessions().values()); // every TTL starts again
        }

        @Override
        public void follows(SimNode node) {
            SessionTtl ttl = ttls.get(node.id);
            if (ttl.leading()) {
                ttl.follow();
            }
        }

        @Override
        public void ticked(SimNode node) {
            SessionTtl ttl = ttls.get(node.id);
            if (node.up && ttl.leading()) {
                for (SessionTtl.Expiry expiry : ttl.due(node.clockNanos())) {
                    invalidate(node, ttl, expiry);
                }
            }
        }

        /** As the keeper does: a destroy that names the renew it expired, tried again every second while this server leads. */
        private void invalidate(SimNode node, SessionTtl ttl, SessionTtl.Expiry expiry) {
            byte[] destroy = new KvCommand(KvCommand.Op.SESSION_DESTROY, expiry.id(), new byte[0], 0, expiry.renewIndex()).encode();
            Simulation sim = node.simulation;
            sim.proposeOwn(node, destroy, answer -> {
                if (answer.kind() != SimClient.Answer.Kind.OK) {
                    sim.schedule(1_000, () -> {
                        if (node.up && ttls.get(node.id) == ttl && ttl.leading()) {
                            invalidate(node, ttl, expiry);
                        }
                    });
                }
            });
        }

        @Override
        public void persisted(SimNode node, List<LogEntry> entries) {
            Simulation sim = node.simulation;
            int majority = sim.nodes().size() / 2 + 1;
            for (LogEntry entry : entries) {
                Map<Long, Long> byTerm = onMajoritySince.computeIfAbsent(entry.index(), index -> new HashMap<>());
                if (byTerm.containsKey(entry.term())) {
                    continue;
                }
                int holders = 0;
                for (SimNode other : sim.nodes()) {
                    SimNode.Disk disk = other.disk;
                    if (entry.index() >= disk.firstIndex && entry.index() <= disk.lastIndex()
                            && disk.entries.get((int) (entry.index() - disk.firstIndex)).term() == entry.term()) {
                        holders++;
                    }
                }
                if (holders >= majority) {
                    byTerm.put(entry.term(), sim.now());
                }
            }
        }

        @Override
        public void committed(SimNode node, LogEntry entry) {
            if (entry.type() != LogEntry.Type.COMMAND || committedSince.containsKey(entry.index())) {
                return; // the bootstrap's configuration is committed by every server before any disk holds it
            }
            Long since = onMajoritySince.getOrDefault(entry.index(), Map.of()).get(entry.term());
            if (since == null) {
                throw node.simulation.failure(node.id + " commits " + entry + " that no majority holds on disk");
            }
            committedSince.put(entry.index(), since);
        }

        @Override
        public void applying(SimNode node, LogEntry entry) {
            checking = checked.add(entry.index());
            if (!checking) {
                return;
            }
            KvCommand command = KvCommand.decode(entry.data());
            sessionBefore = command.op() == KvCommand.Op.SESSION_DESTROY ? machine(node).session(command.key()) : null;
            lockBefore = machine(node).get(LOCK);
        }

        @Override
        public void applied(SimNode node, LogEntry entry, String output) {
            if (!checking) {
                return;
            }
            KvCommand command = KvCommand.decode(entry.data());
            if (command.op() == KvCommand.Op.SESSION_DESTROY && command.cas() != KvCommand.NO_CAS) {
                checkExpiry(node.simulation, entry, output);
            } else if (command.op() == KvCommand.Op.TXN) {
                checkFencedWrite(node.simulation, command, output);
            }
        }

        /** A TTL expiry that took effect: no sooner than the TTL after the session's last renew took effect. */
        private void checkExpiry(Simulation sim, LogEntry entry, String output) {
            if (!output.equals("true") || sessionBefore == null) {
                counts.voidedExpiries++;
                return;
            }
            counts.expiries++;
            Long renewedAt = committedSince.get(sessionBefore.renewIndex());
            long expiredAt = committedSince.get(entry.index());
            if (renewedAt == null) {
                throw sim.failure("no commit seen of the renew at " + sessionBefore.renewIndex() + " of session " + sessionBefore.id());
            }
            long lived = expiredAt - renewedAt;
            if (lived * MS < sessionBefore.ttlNanos()) {
                throw sim.failure("session " + sessionBefore.id() + " expired by TTL " + lived + " ms after its last renew (at "
                        + sessionBefore.renewIndex() + ") took effect: sooner than its TTL of " + sessionBefore.ttlNanos() / MS + " ms");
            }
        }

        /** A write fenced by the lock that was accepted: its writer's session held the lock, with the writer's LockIndex. */
        private void checkFencedWrite(Simulation sim, KvCommand command, String output) {
            List<KvTxn.Op> ops = KvTxn.decodeOps(command.value());
            KvTxn.Op write = ops.stream().filter(op -> op.verb() == KvTxn.Verb.SET).findFirst().orElse(null);
            if (write == null) {
                return; // a lock or an unlock
            }
            if (!output.contains("\"Errors\":null")) {
                counts.fencedRefused++;
                return;
            }
            counts.fencedAccepted++;
            String[] writer = new String(write.value(), StandardCharsets.UTF_8).split(" ");
            if (lockBefore == null || !writer[0].equals(lockBefore.session()) || Long.parseLong(writer[1]) != lockBefore.lockIndex()) {
                throw sim.failure("a write fenced by session " + writer[0] + " (LockIndex " + writer[1] + ") was accepted while "
                        + LOCK + " was " + (lockBefore == null ? "absent" : "held by " + lockBefore.session() + " with LockIndex "
                        + lockBefore.lockIndex()));
            }
        }
    }

    /** A client of sessions and of the lock, as an application's leader election is. */
    static final class Client {
        final String name;
        final Simulation sim;
        final Random random;
        final long ttl;
        final long renewEvery;
        final boolean checkSession;
        final List<String> targets;
        String session;
        long fence = -1;
        long lockIndex;
        long nextRenew;
        long nextWrite;
        long pausedUntil;
        boolean renewing;
        boolean busy;
        String target;
        boolean running = true;

        Client(int number, Simulation sim, Random random) {
            this.name = "session-client" + number;
            this.sim = sim;
            this.random = random;
            this.ttl = (1 + random.nextInt(3)) * 1000L;
            this.renewEvery = (long) (ttl * (0.2 + random.nextDouble() * 0.25));
            this.checkSession = random.nextBoolean();
            this.targets = sim.nodes().stream().map(node -> node.id).toList();
        }

        void start() {
            sim.schedule(random.nextInt(10), this::step);
        }

        /** One request, sent to the server it believes leads, following refusals' hints, until an answer or its time-out. */
        void request(byte[] command, Consumer<String> onResult) {
            long deadline = sim.now() + REQUEST_TIMEOUT_MILLIS;
            attempt(command, deadline, onResult);
        }

        private void attempt(byte[] command, long deadline, Consumer<String> onResult) {
            if (target == null) {
                target = targets.get(random.nextInt(targets.size()));
            }
            boolean[] done = {false};
            sim.sendCommand(name, target, command, answer -> {
                if (done[0]) {
                    return;
                }
                done[0] = true;
                whenAwake(() -> {
                    if (answer.kind() == SimClient.Answer.Kind.OK) {
                        onResult.accept(answer.output());
                    } else if (sim.now() >= deadline) {
                        onResult.accept(null);
                    } else {
                        target = answer.kind() == SimClient.Answer.Kind.REFUSED
                                && answer.reason() == ProposalOutcome.Reason.NOT_LEADER ? answer.leaderHint() : null;
                        sim.schedule(target != null ? 5 : 30, () -> attempt(command, deadline, onResult));
                    }
                });
            });
            sim.schedule(Math.max(1, deadline - sim.now()), () -> {
                if (!done[0]) {
                    done[0] = true; // unknown: it may yet be applied
                    target = null;
                    whenAwake(() -> onResult.accept(null));
                }
            });
        }

        private void whenAwake(Runnable action) {
            if (sim.now() < pausedUntil) {
                sim.scheduleAt(pausedUntil, action);
            } else {
                action.run();
            }
        }

        void step() {
            if (!running) {
                return;
            }
            sim.schedule(10, this::step);
            if (sim.now() < pausedUntil) {
                return;
            }
            if (random.nextInt(700) == 0) { // a GC or a stopped VM: up to four TTLs, often about the expiry's moment
                double ttls = random.nextBoolean() ? random.nextDouble() * 4 : 1.5 + random.nextDouble();
                pausedUntil = sim.now() + (long) (ttls * ttl);
                nextRenew = pausedUntil;
                return;
            }
            if (sim.now() >= nextRenew && !renewing) {
                nextRenew = sim.now() + renewEvery;
                renew();
            }
            if (busy || session == null) {
                return;
            }
            if (fence < 0 && random.nextInt(30) == 0) {
                acquire();
            } else if (fence >= 0 && random.nextInt(300) == 0) {
                release();
            } else if (fence >= 0 && sim.now() >= nextWrite) {
                nextWrite = sim.now() + 50 + random.nextInt(100);
                write();
            } else if (random.nextInt(3_000) == 0) {
                String gone = session;
                session = null;
                fence = -1;
                busy = true;
                request(new KvCommand(KvCommand.Op.SESSION_DESTROY, gone, new byte[0], 0, KvCommand.NO_CAS).encode(), result -> busy = false);
            }
        }

        private void renew() {
            renewing = true;
            if (session == null) {
                String id = name + "-" + Long.toHexString(random.nextLong());
                Session created = new Session(id, name, "node", 0, Session.Behavior.RELEASE, ttl * MS, List.of(), 0, 0);
                request(new KvCommand(KvCommand.Op.SESSION_CREATE, id, created.encode(), 0, KvCommand.NO_CAS).encode(), result -> {
                    renewing = false;
                    if ("true".equals(result)) {
                        session = id;
                    } // unknown: it may exist; a session nobody renews expires by its TTL
                });
                return;
            }
            String renewed = session;
            request(new KvCommand(KvCommand.Op.SESSION_RENEW, renewed, new byte[0], 0, KvCommand.NO_CAS).encode(), result -> {
                renewing = false;
                if ("false".equals(result) && renewed.equals(session)) {
                    session = null; // invalidated: its lock is lost with it
                    fence = -1;
                }
            });
        }

        private void acquire() {
            busy = true;
            String holder = session;
            List<KvTxn.Op> ops = List.of(new KvTxn.Op(KvTxn.Verb.LOCK, LOCK, name.getBytes(StandardCharsets.UTF_8), 0, 0, holder));
            request(txn(ops), result -> {
                busy = false;
                if (result != null && result.contains("\"Errors\":null") && holder.equals(session)) {
                    JsonObject kv = new JsonObject(result).getJsonArray("Results").getJsonObject(0).getJsonObject("KV");
                    fence = kv.getLong("ModifyIndex");
                    lockIndex = kv.getLong("LockIndex");
                }
            });
        }

        private void release() {
            busy = true;
            fence = -1;
            List<KvTxn.Op> ops = List.of(new KvTxn.Op(KvTxn.Verb.UNLOCK, LOCK, new byte[0], 0, 0, session));
            request(txn(ops), result -> busy = false);
        }

        /** A write fenced by the lock: the lock's ModifyIndex unchanged since the acquire, or the lock still this session's. */
        private void write() {
            busy = true;
            byte[] value = (session + " " + lockIndex + " " + sim.now()).getBytes(StandardCharsets.UTF_8);
            KvTxn.Op check = checkSession ? new KvTxn.Op(KvTxn.Verb.CHECK_SESSION, LOCK, null, 0, 0, session)
                    : new KvTxn.Op(KvTxn.Verb.CHECK_INDEX, LOCK, null, 0, fence, null);
            request(txn(List.of(check, new KvTxn.Op(KvTxn.Verb.SET, "data/" + name, value, 0, 0, null))), result -> {
                busy = false;
                if (result != null && !result.contains("\"Errors\":null")) {
                    fence = -1; // fenced off: no longer the holder
                }
            });
        }

        private static byte[] txn(List<KvTxn.Op> ops) {
            return new KvCommand(KvCommand.Op.TXN, "", KvTxn.encode(ops), 0, KvCommand.NO_CAS).encode();
        }
    }

    static Counts run(long seed) {
        Random dice = new Random(seed ^ 0x5E55104AL);
        int servers = seed % 2 == 0 ? 3 : 5;
        RaftConfig config = RaftConfig.defaults().withPreVote(dice.nextInt(3) != 0).withCheckQuorum(dice.nextInt(4) != 0);
        Keepers keepers = new Keepers();
        Simulation sim = Simulation.builder(seed, TEST).servers(servers).raftConfig(config)
                .stateMachine(RealKvMachine::new).hooks(keepers)
                .faults(dice.nextDouble() * 0.03, dice.nextDouble() * 0.02, dice.nextDouble() * 0.05)
                .longDelays(dice.nextDouble() * 0.005, 500 + dice.nextInt(2_500))
                .diskSpikes(dice.nextDouble() * 0.1, 20 + dice.nextInt(300))
                .clockSkew(0.2)
                .snapshots(40 + dice.nextInt(160), dice.nextInt(30))
                .build();
        sim.awaitLeader(20_000);
        List<Client> clients = new ArrayList<>();
        for (int i = 1; i <= 4; i++) {
            Client client = new Client(i, sim, new Random(dice.nextLong()));
            clients.add(client);
            client.start();
        }
        long end = sim.now() + FAULT_PHASE_MILLIS;
        while (sim.now() < end) {
            sim.runFor(300 + dice.nextInt(1_200));
            if (dice.nextInt(8) == 0) { // a client cut off from some servers
                Client client = clients.get(dice.nextInt(clients.size()));
                for (SimNode node : sim.nodes()) {
                    if (dice.nextBoolean()) {
                        sim.network.block(client.name, node.id);
                        sim.network.block(node.id, client.name);
                    }
                }
            } else {
                RandomizedRun.injectFault(sim, dice, false);
            }
        }
        sim.heal();
        for (SimNode node : sim.nodes()) {
            if (!node.up) {
                sim.restart(node);
            }
        }
        sim.runFor(5_000);
        clients.forEach(client -> client.running = false);
        SimNode leader = sim.awaitLeader(20_000);
        boolean settled = sim.runUntil(() -> {
            SimNode now = sim.leader();
            if (now == null) {
                return false;
            }
            for (SimNode node : sim.nodes()) {
                if (node.applied() != now.core.commitIndex() || node.core.commitIndex() != now.core.commitIndex()) {
                    return false;
                }
            }
            return true;
        }, 20_000);
        if (!settled) {
            throw sim.failure("the servers did not all apply the leader's log after the faults healed (leader " + leader + ")");
        }
        byte[] expected = sim.leader().stateMachine().snapshot();
        for (SimNode node : sim.nodes()) {
            if (!Arrays.equals(expected, node.stateMachine().snapshot())) {
                throw sim.failure(node.id + " ended with another state than the leader's at index " + node.applied());
            }
        }
        keepers.counts.locks = sim.nodes().get(0).stateMachine() instanceof RealKvMachine real && real.machine.get(LOCK) != null
                ? real.machine.get(LOCK).lockIndex() : 0;
        return keepers.counts;
    }

    @Test
    void no_session_expires_before_its_ttl_and_no_stale_lock_holder_writes_in_the_raft_simulator() {
        Long only = Long.getLong("sim.seed");
        long first = only != null ? only : Long.getLong("sim.firstSeed", 1L);
        long count = only != null ? 1 : Long.getLong("sim.seeds", 500L);
        Counts total = new Counts();
        long started = System.nanoTime();
        for (long seed = first; seed < first + count; seed++) {
            try {
                total.add(run(seed));
            } catch (SimulationFailure failure) {
                throw failure;
            } catch (RuntimeException e) {
                throw SimulationFailure.of(seed, TEST, e);
            }
        }
        System.out.printf("raft session simulation: %d seeds in %d ms: %d TTL expiries (%d voided by a renew first), %d fenced writes "
                + "accepted, %d refused, LockIndex reached %d in all, %d leaderships%n", count, (System.nanoTime() - started) / 1_000_000,
                total.expiries, total.voidedExpiries, total.fencedAccepted, total.fencedRefused, total.locks, total.leaders);
        if (count >= 50 && (total.expiries == 0 || total.fencedAccepted == 0 || total.fencedRefused == 0 || total.locks == 0)) {
            throw new AssertionError("the runs never expired a session, took the lock, accepted or refused a fenced write: they test nothing");
        }
    }
}
