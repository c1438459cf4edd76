package io.conclave.engine.raft.bench;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.engine.raft.builtin.ShutdownOnRemovePolicyProvider;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.core.RaftCore;
import io.conclave.engine.raft.core.Ready;
import io.conclave.engine.raft.core.Role;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The Raft core alone: three cores on one thread, in memory, messages handed over directly. Measures
 * proposals committed on the leader per second, to show the core is far from being the bottleneck.
 * Run: {@code mvn -B -pl engine-raft -am verify -Pbench -DskipTests} (see the README).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class CoreThroughputBenchmark {

    private static final int PROPOSALS_PER_ROUND = 1000;

    @Param({"100"})
    public int valueBytes;

    private final Map<String, RaftCore> cores = new HashMap<>();
    private final ArrayDeque<Message> queue = new ArrayDeque<>();
    private RaftCore leader;
    private byte[] value;
    private long requestId;

    @Setup(Level.Trial)
    public void setUp() {
        value = new byte[valueBytes];
        List<Server> servers = List.of(new Server("a", "a", Suffrage.VOTER), new Server("b", "b", Suffrage.VOTER),
                new Server("c", "c", Suffrage.VOTER));
        Random random = new Random(1);
        RaftConfig config = RaftConfig.defaults().withMessageLimits(1024, 4L << 20, 64);
        for (Server server : servers) {
            RaftCore core = new RaftCore(server.id(), config, new Random(random.nextLong()), ShutdownOnRemovePolicyProvider.POLICY);
            core.bootstrap(new ClusterConfiguration(servers));
            cores.put(server.id(), core);
        }
        leader = cores.get("a");
        while (leader.role() != Role.LEADER) {
            leader.tick();
            drain();
        }
    }

    /** One round: a thousand proposals on the leader, exchanged until all are committed everywhere. */
    @Benchmark
    @OperationsPerInvocation(PROPOSALS_PER_ROUND)
    public long proposeAndCommit() {
        long target = 0;
        for (int i = 0; i < PROPOSALS_PER_ROUND; i++) {
            target = ((io.conclave.engine.raft.core.ProposalOutcome.Appended) leader.propose(++requestId, value)).index();
        }
        while (leader.commitIndex() < target) {
            drain();
        }
        compact();
        return leader.commitIndex();
    }

    /** As the runtime does after a snapshot: the log in memory stays bounded, as in production. */
    private void compact() {
        for (RaftCore core : cores.values()) {
            long applied = core.commitIndex();
            if (applied - core.firstIndex() > 4 * PROPOSALS_PER_ROUND) {
                core.snapshotTaken(new SnapshotMeta("s" + applied, applied, core.termAt(applied), core.configurationAt(applied),
                        core.configurationIndexAt(applied), 0, 0), applied - PROPOSALS_PER_ROUND);
            }
        }
    }

    private void drain() {
        boolean progress = true;
        while (progress) {
            progress = false;
            for (RaftCore core : cores.values()) {
                while (core.hasReady()) {
                    Ready ready = core.ready();
                    queue.addAll(ready.messages());
                    core.advance(ready);
                    progress = true;
                }
            }
            List<Message> batch = new ArrayList<>(queue);
            queue.clear();
            for (Message message : batch) {
                cores.get(message.to()).step(message);
                progress = true;
            }
        }
    }
}
