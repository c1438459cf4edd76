package io.conclave.cli;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave join ADDR...}: asks a running agent to join the cluster through each address
 * ({@code PUT /v1/agent/join/<address>}), and prints what Consul's {@code join} prints. Fails (1) when no address
 * could be joined.
 */
@Command(name = "join", description = "Tells a running agent to join the cluster through the given addresses.",
        footer = {"  conclave join 10.0.0.12 10.0.0.13:8301"})
final class JoinCommand extends HttpCommand implements Callable<Integer> {

    /** A join may wait for the provider's own timeouts; the agent answers within 30 s. */
    static final Duration JOIN_TIMEOUT = Duration.ofSeconds(60);

    @Parameters(paramLabel = "ADDR", arity = "0..*",
            description = "Gossip addresses of members of the cluster: host or host:port.")
    List<String> addresses = List.of();

    @Override
    public Integer call() {
        if (addresses.isEmpty()) {
            System.err.println("At least one address to join must be specified.");
            return 1;
        }
        int joined = 0;
        for (String address : addresses) {
            Answer answer = exchange("PUT", "/v1/agent/join/" + pathSegment(address), null, JOIN_TIMEOUT);
            if (answer.ok()) {
                joined++;
            } else {
                System.err.println("Error joining address '" + address + "': " + answer.error());
            }
        }
        if (joined == 0) {
            System.err.println("Failed to join any nodes.");
            return 1;
        }
        System.out.println("Successfully joined cluster by contacting " + joined + " nodes.");
        return 0;
    }
}
