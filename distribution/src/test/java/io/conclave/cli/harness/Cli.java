package io.conclave.cli.harness;

import io.conclave.cli.ConclaveCommand;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Runs {@code conclave <args>} in this JVM, with its standard streams captured (and its input given). */
public final class Cli {

    public record Run(int exitCode, String out, String err, byte[] outBytes) {
    }

    private Cli() {
    }

    public static Run execute(String... args) {
        return executeWithInput(new byte[0], args);
    }

    public static synchronized Run executeWithInput(byte[] input, String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        InputStream in = System.in;
        ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
        ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
            System.setIn(new ByteArrayInputStream(input));
            int code = ConclaveCommand.execute(args);
            System.out.flush();
            return new Run(code, capturedOut.toString(StandardCharsets.UTF_8), capturedErr.toString(StandardCharsets.UTF_8),
                    capturedOut.toByteArray());
        } finally {
            System.setOut(out);
            System.setErr(err);
            System.setIn(in);
        }
    }
}
