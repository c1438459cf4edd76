package io.conclave.engine.raft.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link RaftLog#release} and {@link RaftLog#hydrate}: which payloads may leave memory (only command entries both
 * applied and durable), and which loaded entries may come back (only over a stub of the same index, term and type).
 */
class RaftLogReleaseTest {

    private static LogEntry command(long index, long term, int size) {
        return new LogEntry(index, term, LogEntry.Type.COMMAND, new byte[size]);
    }

    /** Entries 1 (a configuration) to 10 (commands of 100 bytes, term 1), all persisted and committed, applied to {@code applied}. */
    private static RaftLog log(long applied) {
        RaftLog log = new RaftLog();
        log.append(new LogEntry(1, 1, LogEntry.Type.CONFIGURATION, ConfigurationCodec.encode(
                new ClusterConfiguration(List.of(new Server("a", "local:a", Suffrage.VOTER))))));
        for (long index = 2; index <= 10; index++) {
            log.append(command(index, 1, 100));
        }
        log.takeUnpersisted();
        log.persistedTo(10, 1);
        log.commitTo(10);
        log.takeCommitted((int) applied);
        return log;
    }

    @Test
    void when_payloads_are_released_then_only_applied_and_durable_commands_lose_them_oldest_first() {
        RaftLog log = log(6);
        int configuration = log.entry(1).data().length;
        assertEquals(900 + configuration, log.payloadBytes());
        assertEquals(2, log.release(700 + configuration), "within a budget of 700 bytes and the configuration: the two oldest commands");
        assertTrue(log.isReleased(2) && log.isReleased(3) && !log.isReleased(4));
        assertEquals(3, log.release(0), "entries 4 to 6 next; 1 is a configuration, 7 to 10 are not applied");
        assertEquals(0, log.release(0), "nothing more until more is applied");
        assertFalse(log.isReleased(1), "a configuration keeps its payload");
        assertFalse(log.isReleased(7), "not applied yet");
        assertEquals(400 + configuration, log.payloadBytes());
        assertEquals(400 + configuration + 5 * RaftLog.STUB_BYTES, log.heldBytes());
        assertEquals(List.of(7L, 8L, 9L, 10L), log.slice(7, 100, 1 << 20).stream().map(LogEntry::index).toList());
        assertTrue(log.slice(5, 100, 1 << 20).isEmpty(), "nothing is sent from a stub on");
        assertEquals(List.of(1L), log.slice(1, 100, 1 << 20).stream().map(LogEntry::index).toList(), "up to the first stub");
    }

    @Test
    void when_an_entry_is_not_durable_yet_then_it_keeps_its_payload_even_applied() {
        RaftLog log = new RaftLog();
        for (long index = 1; index <= 4; index++) {
            log.append(command(index, 1, 100));
        }
        log.takeUnpersisted();
        log.persistedTo(2, 1); // 3 and 4 are being written
        log.commitTo(4);
        log.takeCommitted(4, 4); // (a leader applies during its persist only what is durable; here the bound is not kept)
        assertEquals(2, log.release(0), "only 1 and 2 are durable");
        assertFalse(log.isReleased(3));
    }

    @Test
    void when_loaded_entries_come_back_then_only_stubs_of_the_same_index_and_term_take_them() {
        RaftLog log = log(10);
        log.release(0);
        assertEquals(9, log.stubCount());
        int hydrated = log.hydrate(List.of(command(4, 1, 100), command(5, 2, 100), command(11, 1, 100),
                RaftLog.stub(command(6, 1, 100))));
        assertEquals(1, hydrated, "4 only: 5 is of another term, 11 is not in the log, 6 came back without its payload");
        assertFalse(log.isReleased(4));
        assertTrue(log.isReleased(5) && log.isReleased(6));
        assertEquals(1, log.hydrate(List.of(command(2, 1, 100), command(4, 1, 100))), "4 holds its payload already");
        assertEquals(200 + log.entry(1).data().length, log.payloadBytes());
        assertEquals(2, log.release(0), "loaded back, released again once no longer needed");
    }

    @Test
    void when_the_next_entry_to_apply_is_a_stub_then_none_is_handed_out_until_it_is_loaded() {
        RaftLog log = new RaftLog();
        log.append(command(1, 1, 100));
        log.append(RaftLog.stub(command(2, 1, 100))); // restored from a long log
        log.append(command(3, 1, 100));
        log.takeUnpersisted();
        log.persistedTo(3, 1);
        log.commitTo(3);
        assertEquals(List.of(1L), log.takeCommitted(100).stream().map(LogEntry::index).toList(), "up to the stub");
        assertFalse(log.hasCommittedToHand(Long.MAX_VALUE));
        assertEquals(2, log.committedStubToLoad());
        log.hydrate(List.of(command(2, 1, 100), command(3, 1, 100)));
        assertEquals(0, log.committedStubToLoad());
        assertEquals(List.of(2L, 3L), log.takeCommitted(100).stream().map(LogEntry::index).toList());
    }

    @Test
    void when_a_reused_state_holds_the_stubs_then_they_are_handed_out_without_a_load() {
        RaftLog log = new RaftLog();
        log.append(RaftLog.stub(command(1, 1, 100)));
        log.append(RaftLog.stub(command(2, 1, 100)));
        log.takeUnpersisted();
        log.persistedTo(2, 1);
        log.commitTo(2);
        log.stubsAppliedUpTo = 1;
        assertEquals(List.of(1L), log.takeCommitted(100).stream().map(LogEntry::index).toList());
        assertEquals(2, log.committedStubToLoad(), "2 is past the reused state: loaded");
    }
    @Test
    void when_a_restart_reads_the_log_in_slices_then_exactly_the_commands_older_than_the_budget_are_stubs() {
        java.util.Random random = new java.util.Random(7);
        List<LogEntry> log = new java.util.ArrayList<>();
        for (long index = 11; index <= 90; index++) {
            LogEntry.Type type = index % 13 == 0 ? LogEntry.Type.NOOP : index % 17 == 0 ? LogEntry.Type.CONFIGURATION : LogEntry.Type.COMMAND;
            log.add(new LogEntry(index, 1 + index / 40, type, new byte[random.nextInt(200)]));
        }
        long exact = log.subList(60, log.size()).stream().mapToLong(entry -> entry.data().length).sum(); // the boundary itself
        for (long budget : new long[] {0, 1, 150, 999, 4_000, 1 << 20, exact - 1, exact, exact + 1}) {
            for (int slice : new int[] {1, 3, 64}) {
                RaftCore.Restorable restorable = RaftCore.restorable(11, 90,
                        from -> log.subList((int) (from - 11), (int) Math.min(log.size(), from - 11 + slice)), budget);
                long payloadsFrom = 91;
                for (int i = 0; i < log.size(); i++) { // the rule: a command is a stub when it and the newer ones pass the budget
                    long newer = log.subList(i, log.size()).stream().mapToLong(entry -> entry.data().length).sum();
                    LogEntry entry = log.get(i);
                    boolean stub = newer > budget && entry.type() == LogEntry.Type.COMMAND;
                    if (newer <= budget && payloadsFrom == 91) {
                        payloadsFrom = entry.index();
                    }
                    assertEquals(stub ? RaftCore.stubOf(entry) : entry, restorable.entries().get(i), "entry " + entry.index()
                            + " with a budget of " + budget + " read " + slice + " at a time");
                    assertEquals(stub, RaftCore.isStub(restorable.entries().get(i)), "entry " + entry.index() + " a stub");
                }
                assertEquals(log.size(), restorable.entries().size());
                assertEquals(payloadsFrom, restorable.payloadsFrom(), "budget " + budget);
            }
        }
        assertEquals(List.of(), RaftCore.restorable(91, 90, from -> List.of(), 100).entries(), "an empty log after the snapshot");
    }
}
