package io.conclave.cli;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave force-leave [-prune] NODE}: asks a running agent to mark a member as left, as Consul's
 * {@code force-leave} ({@code PUT /v1/agent/force-leave/<node>}): a failed member is no longer tried; with
 * {@code -prune} it is forgotten at once. Prints nothing on success, as Consul's does.
 */
@Command(name = "force-leave", description = "Forces a member of the cluster into the left state.",
        footer = {"  conclave force-leave server-3", "  conclave force-leave -prune server-3"})
final class ForceLeaveCommand extends HttpCommand implements Callable<Integer> {

    static final Duration FORCE_LEAVE_TIMEOUT = Duration.ofSeconds(60);

    @Option(names = "-prune", description = "Forget the member at once rather than keep it as left for a while.")
    boolean prune;

    @Parameters(paramLabel = "NODE", arity = "0..*", description = "The name of the member.")
    List<String> nodes = List.of();

    @Override
    public Integer call() {
        if (nodes.size() != 1) {
            System.err.println("A single node name must be specified to force leave.");
            return 1;
        }
        String path = "/v1/agent/force-leave/" + pathSegment(nodes.get(0)) + (prune ? "?prune" : "");
        Answer answer = exchange("PUT", path, null, FORCE_LEAVE_TIMEOUT);
        if (!answer.ok()) {
            System.err.println("Error force leaving: " + answer.error());
            return 1;
        }
        return 0;
    }
}
