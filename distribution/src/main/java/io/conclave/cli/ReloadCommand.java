package io.conclave.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code conclave reload}: asks the agent to read its configuration files again, as SIGHUP does; what can change at run
 * time is applied (log level, TLS files, the agent's ACL token, HTTP limits), what cannot is named in the agent's log.
 */
@Command(name = "reload", description = "Makes the agent read its configuration files again and apply what can change while it runs"
        + " (log_level, TLS files, acl.tokens.agent, limits); the keys that need a restart are named in its log. Needs agent:write.",
        footer = {"  conclave reload", "  conclave reload -http-addr 10.0.0.12:8500 -token \"$TOKEN\""})
final class ReloadCommand extends HttpCommand implements Callable<Integer> {

    @Override
    public Integer call() {
        if (put("/v1/agent/reload", TIMEOUT) == null) {
            return 1;
        }
        System.out.println("Configuration reload triggered");
        return 0;
    }
}
