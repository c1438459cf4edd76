package io.conclave.engine.raft.sim;

import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvEntry;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.KvTxn;
import io.conclave.engine.raft.kv.Session;
import io.conclave.engine.raft.kv.SessionTtl;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sessions and locks, seeded: three servers each running the real key/value state machine over one committed log
 * (each applying it with its own lag, crashing and replaying it from the start), leaders that change at random and
 * time TTLs with the real {@link SessionTtl} by their own clocks (offset and drift up to ±20 %), proposals that take
 * up to 150 ms to commit or are lost with their leader, and clients that renew, pause for up to four TTLs, take a lock
 * and write fenced by it (a transaction that checks the lock's ModifyIndex). The checkers: no session is destroyed by
 * a TTL expiry sooner than its TTL (real time) after the commit of its last renew; no fenced write is accepted unless
 * its writer's session holds the lock; every server ends with the same state, byte for byte.
 *
 * <p>This is a simulation of the session layer over a modelled log, where commit delays, lags and clock offsets are
 * chosen directly; {@link RaftSessionSimulationTest} runs the same layer inside the Raft simulator, over the real core.
 * {@code -Dsim.seeds=N} (500 in the normal run), {@code -Dsim.seed=S} replays one.
 */
@Timeout(300)
class SessionSimulationTest {

    static final long MS = 1_000_000L;
    static final long TICK = 10 * MS;
    static final long RUN = 30_000 * MS;
    static final String LOCK = "lock/k";

    /** One committed entry: its command, the real time it committed, and who is told its result. */
    record Committed(byte[] command, long at) {
    }

    record Proposal(byte[] command, long commitAt, int leaderEpoch, Consumer<String> onResult) {
    }

    static final class Server {
        final int id;
        final long offset;
        final double drift;
        KvStateMachine machine = new KvStateMachine();
        int applied;
        long lag;
        long downUntil;

        Server(int id, Random random) {
            this.id = id;
            this.offset = random.nextInt(1_000_000) * MS;
            this.drift = (random.nextDouble() * 0.4) - 0.2;
            this.lag = random.nextInt(100) * MS;
        }

        long clock(long now) {
            return offset + (long) (now * (1 + drift));
        }
    }

    static final class Client {
        final int id;
        final long ttl;
        final long renewEvery;
        String session;
        Long fence;
        long lockIndex;
        long nextRenew;
        long nextWrite;
        long pausedUntil;
        boolean creating;

        Client(int id, Random random) {
            this.id = id;
            this.ttl = (1 + random.nextInt(3)) * 1000 * MS;
            this.renewEvery = (long) (ttl * (0.2 + random.nextDouble() * 0.25));
        }
    }

    private static final class Run {
        final long seed;
        final Random random;
        final Server[] servers = new Server[3];
        final List<Client> clients = new ArrayList<>();
        final List<Committed> log = new ArrayList<>();
        final List<Proposal> pending = new ArrayList<>();
        final KvStateMachine reference = new KvStateMachine();
        final SessionTtl ttl = new SessionTtl();
        int leader = -1;
        int epoch;
        long nextLeaderChange;
        long now;
        int expiries;
        int fencedWrites;
        int refusedWrites;

        Run(long seed) {
            this.seed = seed;
            this.random = new Random(seed);
            for (int i = 0; i < servers.length; i++) {
                servers[i] = new Server(i, random);
                listen(servers[i]);
            }
            for (int i = 0; i < 4; i++) {
                clients.add(new Client(i, random));
            }
        }

        /** The leader's applies arm its TTLs, by its clock. */
        void listen(Server server) {
            server.machine.onSessionChange(new KvStateMachine.SessionListener() {
                @Override
                public void created(Session session) {
                    if (leader == server.id) {
                        ttl.arm(session, server.clock(now));
                    }
                }

                @Override
                public void renewed(Session session) {
                    if (leader == server.id) {
                        ttl.arm(session, server.clock(now));
                    }
                }

                @Override
                public void destroyed(Session session, List<String> keys) {
                    if (leader == server.id) {
                        ttl.forget(session.id());
                    }
                }
            });
        }

        void fail(String what) {
            throw new SimulationFailure(seed, "SessionSimulationTest", what + " at " + now / MS + " ms");
        }

        void propose(byte[] command, Consumer<String> onResult) {
            if (leader < 0 || servers[leader].downUntil > now) {
                onResult.accept(null); // no leader: certainly not applied
                return;
            }
            pending.add(new Proposal(command, now + (1 + random.nextInt(150)) * MS, epoch, onResult));
        }

        void run() {
            nextLeaderChange = 0;
            for (now = 0; now < RUN; now += TICK) {
                changeLeadership();
                crashes();
                commit();
                applyEverywhere(false);
                leaderTick();
                clientsAct();
            }
            for (Server server : servers) { // the end: every server up, every entry applied
                server.downUntil = 0;
            }
            applyEverywhere(true);
            byte[] expected = snapshot(reference);
            for (Server server : servers) {
                if (!Arrays.equals(expected, snapshot(server.machine))) {
                    fail("server " + server.id + " ended with another state than the log's");
                }
            }
        }

        void changeLeadership() {
            if (now < nextLeaderChange) {
                return;
            }
            if (leader >= 0 && random.nextInt(3) > 0) { // a leader change: no leader for a while (an election)
                leader = -1;
                epoch++;
                ttl.follow();
                nextLeaderChange = now + random.nextInt(2_000) * MS;
                return;
            }
            List<Integer> up = new ArrayList<>();
            for (Server server : servers) {
                if (server.downUntil <= now) {
                    up.add(server.id);
                }
            }
            if (up.isEmpty()) {
                nextLeaderChange = now + 100 * MS;
                return;
            }
            leader = up.get(random.nextInt(up.size()));
            epoch++;
            Server next = servers[leader];
            while (next.applied < log.size()) { // a new leader has every committed entry before it acts
                apply(next);
            }
            ttl.lead(next.clock(now), next.machine.sessions().values());
            nextLeaderChange = now + (1_000 + random.nextInt(6_000)) * MS;
        }

        void crashes() {
            if (random.nextInt(800) != 0) {
                return;
            }
            Server crashed = servers[random.nextInt(servers.length)];
            crashed.downUntil = now + random.nextInt(3_000) * MS;
            crashed.machine = new KvStateMachine(); // restarts and replays the log
            crashed.applied = 0;
            listen(crashed);
            if (leader == crashed.id) {
                leader = -1;
                epoch++;
                ttl.follow();
                nextLeaderChange = now + random.nextInt(2_000) * MS;
            }
        }

        void commit() {
            pending.sort((a, b) -> Long.compare(a.commitAt(), b.commitAt()));
            List<Proposal> still = new ArrayList<>();
            for (Proposal proposal : pending) {
                if (proposal.leaderEpoch() != epoch) {
                    proposal.onResult().accept(null); // lost with its leader: not applied
                } else if (proposal.commitAt() <= now) {
                    log.add(new Committed(proposal.command(), now));
                    long index = log.size();
                    KvCommand kv = KvCommand.decode(proposal.command());
                    Session before = kv.op() == KvCommand.Op.SESSION_DESTROY ? reference.session(kv.key()) : null;
                    String result = io.conclave.engine.raft.testing.KvAnswers.text(reference.apply(index, proposal.command()));
                    check(index, proposal.command(), result, before);
                    proposal.onResult().accept(result);
                } else {
                    still.add(proposal);
                }
            }
            pending.clear();
            pending.addAll(still);
        }

        /** The checkers, on the log's order, with the reference machine just past {@code index}. */
        void check(long index, byte[] command, String result, Session before) {
            KvCommand kv = KvCommand.decode(command);
            if (kv.op() == KvCommand.Op.SESSION_DESTROY && kv.cas() != KvCommand.NO_CAS && result.equals("true")) {
                expiries++;
                // measured from the session's actual last renew (as the log had it), not from the one the expiry names
                long renewedAt = log.get((int) before.renewIndex() - 1).at();
                long ttlOf = before.ttlNanos();
                if (now - renewedAt < ttlOf) {
                    fail("session " + kv.key() + " expired " + (now - renewedAt) / MS + " ms after its last renew committed, "
                            + "sooner than its TTL of " + ttlOf / MS + " ms");
                }
            }
            if (kv.op() == KvCommand.Op.TXN && result.contains("\"Errors\":null")) {
                fencedWrites++;
                String writer = new String(kv.value(), StandardCharsets.UTF_8).replaceAll(".*\"Value\":\"([^\"]*)\".*", "$1");
                String session = new String(java.util.Base64.getDecoder().decode(writer), StandardCharsets.UTF_8).split(" ")[0];
                KvEntry lock = reference.get(LOCK);
                if (lock == null || !session.equals(lock.session())) {
                    fail("a fenced write of session " + session + " was accepted while the lock was held by "
                            + (lock == null ? "nobody" : lock.session()));
                }
            } else if (kv.op() == KvCommand.Op.TXN) {
                refusedWrites++;
            }
        }

        void applyEverywhere(boolean all) {
            for (Server server : servers) {
                if (server.downUntil > now && !all) {
                    continue;
                }
                while (server.applied < log.size() && (all || log.get(server.applied).at() + server.lag <= now)) {
                    apply(server);
                }
            }
        }

        void apply(Server server) {
            server.machine.apply(server.applied + 1, log.get(server.applied).command());
            server.applied++;
        }

        void leaderTick() {
            if (leader < 0) {
                return;
            }
            for (SessionTtl.Expiry expiry : ttl.due(servers[leader].clock(now))) {
                propose(new KvCommand(KvCommand.Op.SESSION_DESTROY, expiry.id(), new byte[0], 0, expiry.renewIndex()).encode(), result -> {
                });
            }
        }

        void clientsAct() {
            for (Client client : clients) {
                if (client.pausedUntil > now) {
                    continue;
                }
                if (random.nextInt(1_000) == 0) { // a pause: a GC, a stopped VM; up to four TTLs, often about the expiry's moment
                    double ttls = random.nextBoolean() ? random.nextDouble() * 4 : 1.5 + random.nextDouble();
                    client.pausedUntil = now + (long) (ttls * client.ttl);
                    client.nextRenew = client.pausedUntil; // it renews as soon as it wakes
                    continue;
                }
                if (now >= client.nextRenew) {
                    client.nextRenew = now + client.renewEvery;
                    if (client.session == null && !client.creating) {
                        String id = "c" + client.id + "-" + Long.toHexString(random.nextLong());
                        client.creating = true;
                        propose(new KvCommand(KvCommand.Op.SESSION_CREATE, id, new Session(id, "c" + client.id, "n", 0,
                                Session.Behavior.RELEASE, client.ttl, List.of(), 0, 0).encode(), 0, KvCommand.NO_CAS).encode(), result -> {
                                    client.creating = false;
                                    if ("true".equals(result)) {
                                        client.session = id;
                                    }
                                });
                    } else if (client.session != null) {
                        String session = client.session;
                        propose(new KvCommand(KvCommand.Op.SESSION_RENEW, session, new byte[0], 0, KvCommand.NO_CAS).encode(), result -> {
                            if ("false".equals(result) && session.equals(client.session)) {
                                client.session = null; // gone: its locks are lost too
                                client.fence = null;
                            }
                        });
                    }
                }
                if (client.session != null && client.fence == null && random.nextInt(20) == 0) {
                    String session = client.session;
                    propose(new KvCommand(KvCommand.Op.LOCK, LOCK, new byte[0], 0, KvCommand.NO_CAS, session).encode(), result -> {
                        KvEntry lock = reference.get(LOCK);
                        if ("true".equals(result) && session.equals(client.session) && lock != null) {
                            client.fence = lock.modifyIndex();
                            client.lockIndex = lock.lockIndex();
                        }
                    });
                }
                if (client.fence != null && now >= client.nextWrite) {
                    client.nextWrite = now + 100 * MS;
                    String value = client.session + " " + client.lockIndex + " " + now;
                    List<KvTxn.Op> ops = List.of(new KvTxn.Op(KvTxn.Verb.CHECK_INDEX, LOCK, null, 0, client.fence, null),
                            new KvTxn.Op(KvTxn.Verb.SET, "data/k", value.getBytes(StandardCharsets.UTF_8), 0, 0, null));
                    propose(new KvCommand(KvCommand.Op.TXN, "", KvTxn.encode(ops), 0, KvCommand.NO_CAS).encode(), result -> {
                        if (result != null && !result.contains("\"Errors\":null")) {
                            client.fence = null; // fenced: no longer the holder
                        }
                    });
                }
            }
        }
    }

    static byte[] snapshot(KvStateMachine machine) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            machine.snapshot(bytes);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    @Test
    void no_session_expires_before_its_ttl_and_no_stale_lock_holder_writes_over_many_seeds() {
        Long only = Long.getLong("sim.seed");
        long first = Long.getLong("sim.firstSeed", 1L);
        long count = only != null ? 1 : Long.getLong("sim.seeds", 500L);
        long expiries = 0;
        long fenced = 0;
        long refused = 0;
        for (long i = 0; i < count; i++) {
            long seed = only != null ? only : first + i;
            Run run = new Run(seed);
            try {
                run.run();
            } catch (SimulationFailure failure) {
                throw failure;
            } catch (RuntimeException e) {
                throw SimulationFailure.of(seed, "SessionSimulationTest", e);
            }
            expiries += run.expiries;
            fenced += run.fencedWrites;
            refused += run.refusedWrites;
        }
        System.out.printf("session simulation: %d seeds, %d TTL expiries, %d fenced writes accepted, %d refused%n", count, expiries,
                fenced, refused);
        if (count >= 50 && (expiries == 0 || fenced == 0 || refused == 0)) {
            throw new AssertionError("the runs never expired a session, accepted or refused a fenced write: they test nothing");
        }
    }
}
