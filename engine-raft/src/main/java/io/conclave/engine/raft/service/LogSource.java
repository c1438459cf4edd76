package io.conclave.engine.raft.service;

import java.util.function.Consumer;

/**
 * The process's log lines, as they are written, for {@code /v1/agent/monitor}: the logging back-end belongs to the
 * process (the command line's Logback), not to the engine, which sees only this.
 */
public interface LogSource {

    /** Levels, most verbose first, as Consul's monitor names them. */
    java.util.List<String> LEVELS = java.util.List.of("trace", "debug", "info", "warn", "error");

    /**
     * Hands {@code sink} every line logged from now on at {@code level} or above ({@link #LEVELS}), as text or one JSON
     * object a line, until the returned handle is closed. A level below the one the agent logs at is honoured while the
     * subscription lasts, without changing what the agent's own log shows. The sink is called on the logging thread: it
     * must not block (queue the line and return).
     *
     * @throws IllegalArgumentException for a level not in {@link #LEVELS}
     */
    AutoCloseable subscribe(String level, boolean json, Consumer<String> sink);

    /** Sets the level Conclave's loggers write at ({@code log_level}), at run time: what a reload changes. */
    void level(String level);

    /** A source with no lines, for an engine without a logging back-end it can follow (tests, embedders). */
    LogSource NONE = new LogSource() {
        @Override
        public AutoCloseable subscribe(String level, boolean json, Consumer<String> sink) {
            if (!LEVELS.contains(level)) {
                throw new IllegalArgumentException("unknown log level '" + level + "': " + LEVELS);
            }
            return () -> { };
        }

        @Override
        public void level(String level) {
        }
    };
}
