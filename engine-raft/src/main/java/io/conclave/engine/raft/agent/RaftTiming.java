package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.core.RaftConfig;
import io.conclave.engine.raft.Limits;
import java.util.Set;

/**
 * How the agent turns its configured durations into the core's ticks. The node ticks twice per heartbeat interval
 * (once when the interval is an odd number of milliseconds), so that what the core counts in ticks — the silence
 * after which a follower holding evidence of its leader's death campaigns ({@link RaftConfig#fastFailover}), the
 * ranks between followers — is measured in half intervals rather than whole ones: with the default 100 ms heartbeats
 * a dead leader's followers campaign after 200 ms of silence instead of 300. Election timeouts, heartbeats and
 * every other setting keep their durations.
 *
 * @param tickMillis the node's tick
 * @param core       the core's settings in those ticks
 */
public record RaftTiming(long tickMillis, RaftConfig core) {

    /** Ticks per heartbeat interval when the interval allows it. */
    public static final int TICKS_PER_HEARTBEAT = 2;

    /** The core's settings for {@code raft} (pre-vote and check-quorum always on, which fast failover needs). */
    public static RaftTiming of(ConclaveConfig.Raft raft) {
        long heartbeat = raft.heartbeatInterval().toMillis();
        int heartbeatTicks = heartbeat % TICKS_PER_HEARTBEAT == 0 ? TICKS_PER_HEARTBEAT : 1;
        long tick = heartbeat / heartbeatTicks; // divides both election timeouts: the loader checks the heartbeat does
        RaftConfig core = new RaftConfig((int) (raft.electionTimeoutMin().toMillis() / tick),
                (int) (raft.electionTimeoutMax().toMillis() / tick), heartbeatTicks, true, true,
                RaftConfig.DEFAULT_MAX_ENTRIES_PER_MESSAGE, Limits.MAX_BATCH_BYTES, RaftConfig.DEFAULT_MAX_INFLIGHT_MESSAGES,
                RaftConfig.DEFAULT_MAX_UNCOMMITTED_ENTRIES, raft.maxUncommittedBytes(), RaftConfig.DEFAULT_MAX_HELD_PROPOSALS,
                RaftConfig.DEFAULT_MAX_PENDING_READS, RaftConfig.DEFAULT_DEPARTED_ACK_TICKS * heartbeatTicks,
                raft.fastFailover(), Set.of());
        return new RaftTiming(tick, core);
    }
}
