package io.conclave.example.filemembership;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.NodeIdentity;
import io.conclave.api.PluginContext;
import io.conclave.api.operator.RaftOperator;
import io.conclave.api.membership.GossipSettings;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MembershipSettings;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The file membership of the example: what it reads, what it reports when the file changes, what it refuses. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class FileMembershipTest {

    private final Vertx vertx = Vertx.vertx();

    @AfterEach
    void close() throws Exception {
        vertx.close().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    private Membership membership(Path file) {
        Context context = vertx.getOrCreateContext();
        PluginContext plugin = new PluginContext() {
            @Override
            public Vertx vertx() {
                return vertx;
            }

            @Override
            public Context context() {
                return context;
            }

            @Override
            public JsonObject configuration() {
                return new JsonObject().put("path", file.toString());
            }

            @Override
            public NodeIdentity node() {
                return new NodeIdentity("id-0", "s0", "dc1", "127.0.0.1:8300", "1");
            }

            @Override
            public Path dataDirectory() {
                return file.getParent();
            }

            @Override
            public Optional<RaftOperator> raftOperator() {
                return Optional.empty();
            }
        };
        MembershipSettings settings = new MembershipSettings("127.0.0.1", 8301, Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER,
                MemberTags.RAFT_ADDRESS, "127.0.0.1:8300"), List.of(), List.of(), GossipSettings.LAN, Optional.empty());
        return new FileMembershipProvider().create(plugin, settings);
    }

    /** One re-read now, as the 2 s timer does: the problem it found, or null. */
    private static String reread(Membership membership) throws Exception {
        return ((FileMembership) membership).reread().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    private static List<String> addresses(Membership membership) {
        return membership.members().stream().map(member -> member.tag(MemberTags.RAFT_ADDRESS)).toList();
    }

    @Test
    void when_the_file_lists_servers_then_each_is_a_server_member_and_changes_are_reported(@TempDir Path work) throws Exception {
        Path file = Files.writeString(work.resolve("servers.txt"), "# the cluster\n127.0.0.1:8300\n127.0.0.1:8310  # s1\n\n");
        Membership membership = membership(file);
        List<MembershipEvent> events = new CopyOnWriteArrayList<>();
        membership.subscribe(events::add);
        membership.start().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertEquals(List.of("127.0.0.1:8300", "127.0.0.1:8310"), addresses(membership), "itself first, not listed twice");
        Member s1 = membership.members().get(1);
        assertEquals("dc1", s1.tag(MemberTags.DATACENTER));
        assertEquals(MemberTags.ROLE_SERVER, s1.tag(MemberTags.ROLE));

        Files.writeString(file, "127.0.0.1:8300\n127.0.0.1:8320\n");
        assertEquals(null, reread(membership), "a good list");
        assertEquals(List.of("127.0.0.1:8300", "127.0.0.1:8320"), addresses(membership));
        assertTrue(events.stream().anyMatch(e -> e.type() == MembershipEvent.Type.JOINED && e.member().name().equals("127.0.0.1:8320")), events.toString());
        assertTrue(events.stream().anyMatch(e -> e.type() == MembershipEvent.Type.REAPED && e.member().name().equals("127.0.0.1:8310")), events.toString());

        Files.writeString(file, "127.0.0.1:8300\nnot an address\n");
        String problem = reread(membership);
        assertTrue(problem != null && problem.contains("line 2 is not host:port"), problem);
        assertEquals(List.of("127.0.0.1:8300", "127.0.0.1:8320"), addresses(membership));
        membership.stop().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS);
    }

    @Test
    void when_the_file_is_missing_or_bad_at_start_then_the_start_fails_saying_why(@TempDir Path work) {
        ExecutionException missing = assertThrows(ExecutionException.class,
                () -> membership(work.resolve("absent.txt")).start().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertTrue(missing.getCause().getMessage().contains("absent.txt") && missing.getCause().getMessage().contains("cannot read"),
                missing.getCause().getMessage());
        ExecutionException bad = assertThrows(ExecutionException.class, () -> membership(Files.writeString(work.resolve("bad.txt"),
                "127.0.0.1:8300\nhost-without-port\n")).start().toCompletionStage().toCompletableFuture().get(5, TimeUnit.SECONDS));
        assertTrue(bad.getCause().getMessage().contains("line 2 is not host:port"), bad.getCause().getMessage());
    }
}
