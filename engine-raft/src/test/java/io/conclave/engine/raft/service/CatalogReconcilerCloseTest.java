package io.conclave.engine.raft.service;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MembershipEvent;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What reaches a reconciler after the agent closed it: dropped, never thrown into the caller's thread. */
class CatalogReconcilerCloseTest {

    @Test
    void when_events_come_after_close_then_they_are_dropped_without_an_exception() {
        // (before: a RejectedExecutionException into the event loop that completed a catalog read during a clean stop,
        // logged as an unhandled ERROR with its stack trace)
        CatalogReconciler reconciler = new CatalogReconciler(null, null, List::of, "s1", true);
        reconciler.start();
        reconciler.close();
        Member member = new Member("n1", "127.0.0.1", 8301, Map.of(), MemberStatus.ALIVE);
        assertDoesNotThrow(() -> reconciler.membershipChanged(new MembershipEvent(MembershipEvent.Type.JOINED, member)));
        assertDoesNotThrow(() -> reconciler.catalogChanged(7, null, null));
    }
}
