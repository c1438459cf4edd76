package io.conclave.cli;

import io.conclave.api.ConclaveVersion;
import picocli.CommandLine.Command;

/** {@code conclave version}. */
@Command(name = "version", description = "Prints the Conclave version.",
        footer = {"  conclave version"})
final class VersionCommand implements Runnable {
    @Override
    public void run() {
        System.out.println("Conclave v" + ConclaveVersion.current());
        System.out.println("Java " + Runtime.version());
    }
}
