package io.conclave.engine.raft.testing;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What the tests' logger (slf4j-simple, which writes each line to the {@code System.err} of the moment) writes while
 * it is open, also passed on to the standard error it replaced. One at a time: it swaps a global stream.
 */
public final class LogCapture implements AutoCloseable {

    private final PrintStream original = System.err;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    private LogCapture() {
        System.setErr(new PrintStream(new java.io.OutputStream() {
            @Override
            public void write(int b) {
                synchronized (captured) {
                    captured.write(b);
                }
                original.write(b);
            }

            @Override
            public void write(byte[] bytes, int offset, int length) {
                synchronized (captured) {
                    captured.write(bytes, offset, length);
                }
                original.write(bytes, offset, length);
            }
        }, true, StandardCharsets.UTF_8));
    }

    public static synchronized LogCapture start() {
        return new LogCapture();
    }

    /** The lines written so far. */
    public String text() {
        synchronized (captured) {
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    @Override
    public void close() {
        System.setErr(original);
    }
}
