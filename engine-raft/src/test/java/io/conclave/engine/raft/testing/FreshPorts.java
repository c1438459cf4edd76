package io.conclave.engine.raft.testing;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Servers whose ports must be known before any of them starts (a Raft configuration or a static server list names
 * every server's address): the ports are found free and released, then bound by the servers, and another process or
 * test may take one in between. A start that fails because a port was taken ("Address already in use") is tried
 * again on fresh ports, and logged; any other failure is the test's. Where a server can listen on port 0 and tell
 * which port it got, a test does that instead and needs none of this.
 */
public final class FreshPorts {

    private static final Logger LOG = LoggerFactory.getLogger(FreshPorts.class);

    /**
     * Starts tried at most: a port found free is taken before its server binds it only when something else on the
     * machine asks the system for a port in that instant, so a second taken port in a row is already rare; five make
     * a test that fails on this alone a sign of something else (a port range used up), whose failure it then shows.
     */
    public static final int MAX_STARTS = 5;

    private FreshPorts() {
    }

    /** A start of servers on {@code ports}; {@code attempt} counts from 1 (a fresh data directory for a retry). */
    @FunctionalInterface
    public interface Start<T> {
        /** Starts the servers, or stops those it started and throws. */
        T start(List<Integer> ports, int attempt) throws Exception;
    }

    /**
     * Starts {@code what} on {@code count} distinct free loopback ports; a start that fails with a port taken
     * (see {@link #taken}) is tried again on new ports, up to {@link #MAX_STARTS} times, each retry logged at WARN.
     * Other failures are thrown at once; the last taken-port failure is thrown once the starts are used up.
     */
    public static <T> T start(String what, int count, Start<T> start) throws Exception {
        for (int attempt = 1; ; attempt++) {
            List<Integer> ports = free(count);
            try {
                return start.start(ports, attempt);
            } catch (Exception | Error failure) {
                Throwable bind = bindFailure(failure);
                if (bind == null || attempt == MAX_STARTS) {
                    throw failure;
                }
                LOG.warn("{}: a port of {} was taken between finding it free and binding it ({}); starting again on fresh"
                        + " ports (start {} of at most {})", what, ports, bind.toString(), attempt + 1, MAX_STARTS);
            }
        }
    }

    /**
     * {@code count} distinct ports free on loopback now: each found by binding port 0, all held until the last is
     * found (so that none is found twice), then released.
     */
    public static List<Integer> free(int count) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                held.add(socket);
                ports.add(socket.getLocalPort());
            }
            return ports;
        } finally {
            for (ServerSocket socket : held) {
                socket.close();
            }
        }
    }

    /**
     * Whether {@code failure} is, or was caused by, a bind to a port in use: Java's {@link BindException}, or Netty's
     * native transport's error, which says "Address already in use" without being one.
     */
    public static boolean taken(Throwable failure) {
        return bindFailure(failure) != null;
    }

    /** The cause of {@code failure} that says a port was in use; {@code null} if none does. */
    private static Throwable bindFailure(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            String message = cause.getMessage();
            if (cause instanceof BindException
                    || message != null && message.toLowerCase(Locale.ROOT).contains("address already in use")) {
                return cause;
            }
        }
        return null;
    }
}
