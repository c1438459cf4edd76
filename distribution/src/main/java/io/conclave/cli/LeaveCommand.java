package io.conclave.cli;

import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code conclave leave}: asks the agent to leave the cluster gracefully — a leader hands leadership over
 * first, the server is removed, its Raft machinery stops at once (no vote request ever), it drains and exits.
 */
@Command(name = "leave", description = "Makes the agent leave the cluster gracefully and shut down.",
        footer = {"  conclave leave", "  conclave leave -http-addr 10.0.0.12:8500"})
final class LeaveCommand extends HttpCommand implements Callable<Integer> {

    @Override
    public Integer call() {
        String answer = put("/v1/agent/leave", Duration.ofSeconds(90));
        if (answer == null) {
            return 1;
        }
        System.out.println("Graceful leave complete");
        return 0;
    }
}
