package io.conclave.engine.raft.transport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on loopback in front of one server's port, for tests of what a peer sees when a process dies, a
 * connection drops or the network goes quiet: {@link #die} closes every relayed connection (FIN, as a host does for
 * a killed process) and stops listening, so a new connection is refused; {@link #drop} closes the connections but
 * keeps listening (a transient fault); {@link #silence} keeps everything open and forwards nothing (a network cut).
 * Blocking sockets on threads of its own: test code, never on an event loop.
 */
final class Relay implements AutoCloseable {

    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile ServerSocket listener;
    private volatile boolean silent;
    private final int port;

    Relay(int targetPort) throws IOException {
        this.target = targetPort;
        ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        this.port = socket.getLocalPort();
        listen(socket);
    }

    int port() {
        return port;
    }

    /** Listens again on the same port (a process restarted there). */
    synchronized void revive() throws IOException {
        if (listener == null) {
            ServerSocket socket = new ServerSocket();
            socket.setReuseAddress(true);
            socket.bind(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
            listen(socket);
        }
    }

    /** The process behind it died: its connections close and its port refuses new ones. */
    synchronized void die() throws IOException {
        ServerSocket socket = listener;
        listener = null;
        if (socket != null) {
            socket.close();
        }
        drop();
    }

    /**
     * The process behind it is being killed: its connections close, then its port takes {@code resets} more
     * connections and resets each at once (the kernel still accepting on a listening socket it is about to close), and
     * refuses from then on.
     */
    void dieResetting(int resets) {
        resetsLeft.set(resets);
        drop();
    }

    private final java.util.concurrent.atomic.AtomicInteger resetsLeft = new java.util.concurrent.atomic.AtomicInteger();

    /** Its connections close (FIN on both sides); new ones are accepted. */
    void drop() {
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
        sockets.clear();
    }

    /** Bytes stop flowing either way, and nothing is closed: a cut network. */
    void silence(boolean on) {
        silent = on;
    }

    @Override
    public synchronized void close() throws IOException {
        silent = false;
        die();
    }

    private void listen(ServerSocket socket) {
        listener = socket;
        Thread accept = new Thread(() -> {
            while (!socket.isClosed()) {
                try {
                    Socket in = socket.accept();
                    if (resetsLeft.get() > 0) {
                        in.setSoLinger(true, 0); // closed with a RST, not a FIN
                        in.close();
                        if (resetsLeft.decrementAndGet() == 0) {
                            die();
                        }
                        continue;
                    }
                    Socket out = new Socket(InetAddress.getLoopbackAddress(), target);
                    in.setTcpNoDelay(true);
                    out.setTcpNoDelay(true);
                    sockets.add(in);
                    sockets.add(out);
                    if (listener != socket) { // died while this one was being connected: it goes with the others
                        closeQuietly(in);
                        closeQuietly(out);
                        continue;
                    }
                    pump(in, out);
                    pump(out, in);
                } catch (IOException closedOrRefused) {
                    // the listener closed, or the target is not there: the accepted socket is dropped with it
                }
            }
        }, "relay-accept-" + port);
        accept.setDaemon(true);
        accept.start();
    }

    private void pump(Socket from, Socket to) {
        Thread thread = new Thread(() -> {
            byte[] buffer = new byte[16 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    while (silent && !from.isClosed()) {
                        Thread.sleep(5); // held, not forwarded: the peer sees nothing, not an error
                    }
                    out.write(buffer, 0, read);
                    out.flush();
                }
            } catch (IOException | InterruptedException closed) {
                // one side closed: the other is closed below
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "relay-" + port);
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // already closed
        }
    }
}
