package io.conclave.example.filemembership;

import io.conclave.api.PluginContext;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipProvider;
import io.conclave.api.membership.MembershipSettings;

/**
 * Provider {@code file}: membership from a file, named in the configuration as
 * {@code "plugins": {"membership": "file"}, "plugin_config": {"file": {"path": "servers.txt"}}}. A provider is what
 * {@link java.util.ServiceLoader} finds; it names itself, ranks itself, and makes the {@link Membership} when the agent
 * starts.
 */
public final class FileMembershipProvider implements MembershipProvider {

    public static final String NAME = "file";

    @Override
    public String name() {
        return NAME;
    }

    /** Below the gossip plugin's: it is used only when the configuration asks for it by name. */
    @Override
    public int priority() {
        return 10;
    }

    @Override
    public String description() {
        return "the servers' Raft addresses listed in a file (plugin_config.file.path), re-read every 2 s";
    }

    @Override
    public Membership create(PluginContext context, MembershipSettings settings) {
        String path = context.configuration().getString("path");
        if (path == null || path.isBlank()) {
            throw new IllegalArgumentException("plugin_config.file.path is required: the file that lists the servers' Raft addresses");
        }
        return new FileMembership(context, settings, java.nio.file.Path.of(path));
    }
}
