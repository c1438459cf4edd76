package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.service.LogSource;
import java.util.function.Supplier;

/**
 * What the process gives its agent beyond the configuration: its log lines and level ({@code /v1/agent/monitor}, a
 * reload's {@code log_level}), and how to read the configuration files again (a reload).
 *
 * @param logs   the process's logging back-end, or {@link LogSource#NONE}
 * @param reread reads the configuration files the agent was started from again (throws
 *               {@link io.conclave.engine.raft.config.ConfigException}); {@code null} when it was not started from files
 */
public record AgentControls(LogSource logs, Supplier<ConclaveConfig> reread) {

    /** No log stream, no files: an agent started from a configuration in code (tests, embedders). */
    public static final AgentControls NONE = new AgentControls(LogSource.NONE, null);
}
