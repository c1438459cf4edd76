package io.conclave.unsafe;

import java.util.Arrays;

/**
 * The reliability suite's test-only launcher: the distribution's own modules, with deliberate Raft bugs switched on
 * ({@code RaftConfig.UnsafeBug}, the simulator's switches), to show that the suite catches them on real processes.
 * It runs from the test classes, beside the distribution's {@code lib/} (never inside the zip):
 * {@code java --module-path lib --add-modules ALL-MODULE-PATH --add-exports io.conclave.engine.raft/io.conclave.engine.raft.runtime=ALL-UNNAMED
 * --add-exports io.conclave.cli/io.conclave.cli=ALL-UNNAMED -cp test-classes io.conclave.unsafe.UnsafeAgent BUG[,BUG] agent ...}.
 */
public final class UnsafeAgent {

    private UnsafeAgent() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: UnsafeAgent BUG[,BUG...] conclave-arguments...");
            System.exit(2);
        }
        // before the first logger (Agent's, just below): the distribution's conf/logback.xml, as ConclaveCommand.execute
        // points Logback at it; the test classes on this class path hold logback-test.xml, which writes to a file
        String home = System.getProperty("conclave.home");
        if (home != null && System.getProperty("logback.configurationFile") == null) {
            System.setProperty("logback.configurationFile", java.nio.file.Path.of(home, "conf", "logback.xml").toString());
        }
        Class.forName("io.conclave.engine.raft.runtime.UnsafeBugs").getMethod("enableForTests", String.class).invoke(null, args[0]);
        Object code = Class.forName("io.conclave.cli.ConclaveCommand").getMethod("execute", String[].class)
                .invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        System.exit((Integer) code);
    }
}
