package io.conclave.engine.raft.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.engine.raft.core.CoreEvent;
import io.conclave.engine.raft.core.Role;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The {@link Timeline}'s ring, write gaps and waiters, and the {@link TimelineRecorder}'s reading of core events, on a
 * clock the test turns.
 */
class TimelineTest {

    private final AtomicLong clock = new AtomicLong(1_000_000);

    @Test
    void when_more_events_come_than_the_ring_holds_then_the_oldest_are_dropped_and_the_numbering_goes_on() {
        Timeline timeline = new Timeline(3, clock::get);
        for (int i = 1; i <= 5; i++) {
            timeline.record(Timeline.Type.ELECTION_STARTED, i, 10 * i, null, "election " + i);
        }
        List<Timeline.Event> kept = timeline.view().events();
        assertEquals(3, kept.size(), "bounded by its capacity");
        assertEquals(List.of(3L, 4L, 5L), kept.stream().map(Timeline.Event::sequence).toList(), "the oldest dropped");
        assertEquals(5, timeline.view().index());
    }

    @Test
    void when_the_size_is_out_of_bounds_then_the_timeline_is_refused() {
        assertThrows(IllegalArgumentException.class, () -> new Timeline(0, clock::get));
        assertThrows(IllegalArgumentException.class, () -> new Timeline(Timeline.MAX_EVENTS + 1, clock::get));
    }

    @Test
    void when_a_commit_follows_a_leader_change_then_its_write_gap_is_the_interval_between_the_commits_around_it() {
        Timeline timeline = new Timeline(10, clock::get);
        timeline.committed(5);
        clock.addAndGet(100);
        timeline.committed(6); // the last commit before the change, at 1_000_100
        clock.addAndGet(700);
        timeline.record(Timeline.Type.LEADER, 2, 6, "b", "new leader b");
        timeline.record(Timeline.Type.ELECTION_STARTED, 2, 6, null, "not measured");
        assertEquals(-1, timeline.view().events().get(0).writeGapMillis(), "open until the next commit");
        clock.addAndGet(300);
        timeline.committed(6); // not an advance: nothing closes
        assertEquals(-1, timeline.view().events().get(0).writeGapMillis());
        long before = timeline.index();
        timeline.committed(7);
        assertEquals(1000, timeline.view().events().get(0).writeGapMillis(), "from the commit before to the one after");
        assertEquals(-1, timeline.view().events().get(1).writeGapMillis(), "an election is not measured");
        assertEquals(before + 1, timeline.index(), "a closed gap is a change the readers see");
        clock.addAndGet(5000);
        timeline.committed(8);
        assertEquals(1000, timeline.view().events().get(0).writeGapMillis(), "closed once");
    }

    @Test
    void when_a_reader_waits_then_it_is_woken_once_by_the_next_change_and_a_cancelled_one_never() {
        Timeline timeline = new Timeline(10, clock::get);
        timeline.record(Timeline.Type.ELECTION_WON, 1, 1, null, "won");
        AtomicInteger woken = new AtomicInteger();
        AtomicInteger cancelledWoken = new AtomicInteger();
        timeline.await(1, woken::incrementAndGet);
        timeline.await(1, cancelledWoken::incrementAndGet).cancel();
        assertEquals(0, woken.get(), "nothing new yet");
        timeline.record(Timeline.Type.LEADER, 1, 1, "a", "new leader a");
        timeline.record(Timeline.Type.SNAPSHOT_TAKEN, 1, 20, null, "snapshot");
        assertEquals(1, woken.get(), "woken once");
        assertEquals(0, cancelledWoken.get());
        assertEquals(0, timeline.waiting());
        timeline.await(1, woken::incrementAndGet);
        assertEquals(2, woken.get(), "an index already passed wakes at once");
    }

    @Test
    void when_the_core_reports_elections_and_configurations_then_the_recorder_names_leaders_joins_promotions_and_removals() {
        Timeline timeline = new Timeline(50, clock::get);
        Server a = new Server("a", "10.0.0.1:8300", Suffrage.VOTER);
        Server b = new Server("b", "10.0.0.2:8300", Suffrage.VOTER);
        TimelineRecorder recorder = new TimelineRecorder(timeline, new ClusterConfiguration(List.of(a, b)));
        recorder.event(new CoreEvent.ElectionStarted(2, false), 2, 10);
        recorder.event(new CoreEvent.ElectionWon(2), 2, 10);
        recorder.event(new CoreEvent.RoleChanged(Role.LEADER, 2, "a"), 2, 10);
        recorder.event(new CoreEvent.RoleChanged(Role.LEADER, 2, "a"), 2, 11); // same leader: nothing
        Server c = new Server("c", "10.0.0.3:8300", Suffrage.NONVOTER);
        recorder.event(new CoreEvent.ConfigurationCommitted(new ClusterConfiguration(List.of(a, b, c)), 12), 2, 12);
        recorder.event(new CoreEvent.ConfigurationCommitted(new ClusterConfiguration(List.of(a, b, c.withSuffrage(Suffrage.VOTER))), 13),
                2, 13);
        recorder.event(new CoreEvent.ConfigurationCommitted(new ClusterConfiguration(List.of(a, c.withSuffrage(Suffrage.VOTER))), 14),
                3, 14);
        List<String> seen = timeline.view().events().stream().map(event -> event.type().label() + " " + event.server() + " "
                + event.term() + " " + event.index()).toList();
        assertEquals(List.of("election-started null 2 10", "election-won null 2 10", "leader a 2 10", "join c 2 12",
                "promote c 2 13", "remove b 3 14"), seen);
        assertTrue(timeline.view().events().get(3).detail().contains("non-voter"), timeline.view().events().get(3).detail());
    }
}
