package io.conclave.plugin.gossip;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.membership.GossipSettings;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The gossip TCP port under slow senders (issue 35, point 4), on real sockets: hundreds of connections that announce
 * an 8 MiB frame and trickle its bytes, or send nothing at all, hold no slot past the frame deadline and cannot keep a
 * join out; what is cut or refused is counted; a refusal says why to the one refused.
 */
class StreamSlotsTest {

    private static final GossipSettings SETTINGS = GossipSettings.FAST;
    /** The frame deadline under {@link #SETTINGS}: ten probe intervals, at least 1 s (memberlist's TCPTimeout). */
    private static final long FRAME_DEADLINE_MILLIS = Math.max(SETTINGS.probeInterval().toMillis() * 10, 1000);
    private static final int SLOW_SENDERS = 300;
    private static final int SILENT = 300;

    private static Socket connect(int port) throws IOException {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 2_000);
        socket.setSoTimeout(1);
        return socket;
    }

    /** Whether the server closed (or reset) the connection; reads without blocking long. */
    private static boolean closedByServer(Socket socket) {
        try {
            InputStream in = socket.getInputStream();
            while (true) {
                int read = in.read();
                if (read < 0) {
                    return true;
                }
            }
        } catch (SocketTimeoutException stillOpen) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    @Test
    void when_hundreds_of_slow_senders_hold_connections_then_a_join_still_succeeds_and_they_are_cut_by_the_frame_deadline()
            throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(SETTINGS)) {
            GossipMembership target = cluster.start("target", Optional.empty());
            int port = Addresses.port(target.address());
            List<Socket> slow = new ArrayList<>();
            try {
                for (int i = 0; i < SLOW_SENDERS; i++) {
                    Socket socket = connect(port);
                    DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                    out.writeInt(GossipLimits.MAX_STREAM_BYTES); // an 8 MiB frame announced...
                    out.write(Wire.PUSH_PULL); // ...and its first byte
                    out.flush();
                    slow.add(socket);
                }
                for (int i = 0; i < SILENT; i++) {
                    slow.add(connect(port)); // connects and says nothing
                }
                long start = System.nanoTime();
                Thread trickle = new Thread(() -> {
                    while (!Thread.currentThread().isInterrupted()) {
                        for (Socket socket : slow.subList(0, SLOW_SENDERS)) {
                            try {
                                socket.getOutputStream().write(0);
                            } catch (IOException closed) {
                                // cut by the server: what the test waits for
                            }
                        }
                        try {
                            TimeUnit.MILLISECONDS.sleep(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }, "slow-senders");
                trickle.setDaemon(true);
                trickle.start();
                try {
                    GossipMembership joiner = cluster.start("joiner", Optional.empty());
                    int reached = joiner.join(List.of(target.address())).await(FRAME_DEADLINE_MILLIS, TimeUnit.MILLISECONDS);
                    assertEquals(1, reached, "the join through the member the slow senders hold");
                    System.out.printf("a join through a member held by %d slow and %d silent connections answered in %d ms%n",
                            SLOW_SENDERS, SILENT, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
                    LoopbackMembers.await(() -> slow.stream().allMatch(StreamSlotsTest::closedByServer),
                            Duration.ofMillis(FRAME_DEADLINE_MILLIS + 2_000), "every slow and silent connection cut, "
                                    + "frame deadline " + FRAME_DEADLINE_MILLIS + " ms");
                    long cutAfter = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                    System.out.printf("all %d cut %d ms after the last one connected%n", slow.size(), cutAfter);
                } finally {
                    trickle.interrupt();
                    trickle.join(5_000);
                }
                Map<String, Long> counters = target.counters();
                assertTrue(counters.get("gossip.streams.timed_out") > 0, "none cut at the frame deadline: " + counters);
                assertTrue(counters.get("gossip.streams.evicted") > 0, "none cut to make room for a newer one: " + counters);
                assertTrue(cluster.uncaught.isEmpty(), "uncaught: " + cluster.uncaught);
            } finally {
                for (Socket socket : slow) {
                    socket.close();
                }
            }
        }
    }

    @Test
    void when_more_large_frames_are_announced_than_the_budget_holds_then_the_oldest_give_way() throws Exception {
        int fit = (int) (GossipLimits.MAX_INCOMING_FRAME_BYTES / GossipLimits.MAX_STREAM_BYTES);
        int announced = fit + 12;
        try (LoopbackMembers cluster = new LoopbackMembers(SETTINGS)) {
            GossipMembership target = cluster.start("target", Optional.empty());
            List<Socket> large = new ArrayList<>();
            try {
                for (int i = 0; i < announced; i++) {
                    Socket socket = connect(Addresses.port(target.address()));
                    new DataOutputStream(socket.getOutputStream()).writeInt(GossipLimits.MAX_STREAM_BYTES);
                    large.add(socket);
                }
                LoopbackMembers.await(() -> target.counters().get("gossip.streams.evicted") == announced - fit, Duration.ofSeconds(5),
                        (announced - fit) + " of " + announced + " announced 8 MiB frames cut, " + fit + " fit in "
                                + (GossipLimits.MAX_INCOMING_FRAME_BYTES >> 20) + " MiB");
                assertTrue(large.subList(0, announced - fit).stream().allMatch(StreamSlotsTest::closedByServer), "the oldest gave way");
                assertTrue(large.subList(announced - fit, announced).stream().noneMatch(StreamSlotsTest::closedByServer),
                        "the newest are still being received");
            } finally {
                for (Socket socket : large) {
                    socket.close();
                }
            }
        }
    }

    @Test
    void when_a_frame_is_announced_over_the_limit_then_the_sender_is_told_why() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(SETTINGS)) {
            GossipMembership target = cluster.start("target", Optional.empty());
            try (Socket socket = new Socket("127.0.0.1", Addresses.port(target.address()))) {
                socket.setSoTimeout(5_000);
                new DataOutputStream(socket.getOutputStream()).writeInt(GossipLimits.MAX_STREAM_BYTES + 1_000);
                DataInputStream in = new DataInputStream(socket.getInputStream());
                byte[] frame = new byte[in.readInt()];
                in.readFully(frame);
                Wire.Message answer = Wire.decodeFrame(frame);
                assertTrue(answer instanceof Wire.Refused refused && refused.reason().contains("over the limit"), String.valueOf(answer));
            }
            assertEquals(1, target.counters().get("gossip.streams.refused"));
        }
    }

    /** Issue 35 saw "closed without an answer (it may expect encrypted gossip...)" when the member was in fact full. */
    @Test
    void when_a_member_refuses_a_join_then_the_error_says_it_refused_and_why() throws Exception {
        try (LoopbackMembers cluster = new LoopbackMembers(SETTINGS); ServerSocket busy = new ServerSocket(0, 1,
                java.net.InetAddress.getLoopbackAddress())) {
            Thread answer = new Thread(() -> {
                try (Socket socket = busy.accept()) {
                    DataInputStream in = new DataInputStream(socket.getInputStream());
                    in.readFully(new byte[in.readInt()]);
                    byte[] refusal = Wire.encode(new Wire.Refused("all 256 gossip TCP slots are busy"));
                    DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                    out.writeInt(refusal.length);
                    out.write(refusal);
                    out.flush();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }, "busy-member");
            answer.start();
            GossipMembership joiner = cluster.start("joiner", Optional.empty());
            Throwable error = joiner.join(List.of("127.0.0.1:" + busy.getLocalPort())).transform(result -> io.vertx.core.Future
                    .succeededFuture(result.cause())).await(10, TimeUnit.SECONDS);
            answer.join(5_000);
            assertTrue(error != null && error.getMessage().contains("refused the connection: all 256 gossip TCP slots are busy")
                    && !error.getMessage().contains("encrypt"), String.valueOf(error));
        }
    }
}
