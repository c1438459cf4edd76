package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.http.HttpApi;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import java.time.Duration;

/**
 * What an {@link Agent} runs: a server's ({@link AgentAssembly}: Raft, the services, autopilot) or a client agent's
 * ({@link ClientAssembly}: membership, the forwarding to servers). Each builds its parts top to bottom in
 * {@link #assemble} and takes them down in the reverse order in {@link #close}; both block their caller (the agent's
 * starting or stopping thread), never an event loop.
 */
interface Assembly {

    /** Builds everything, in order; on failure the caller closes what was built. */
    void assemble();

    /**
     * Leaves the cluster: completes once the leave is done (a server: its removal committed; a client: its leave
     * announced), after which the agent drains and stops by itself; fails when it cannot.
     */
    Future<Void> leave();

    /** Before a stop without leaving (SIGTERM): a leading server hands leadership over, waiting at most {@code handOver}. */
    void handOverBeforeStop(Duration handOver);

    /**
     * Reloads the configuration files (SIGHUP): see {@link Reloader}. Blocking: call off the event loops.
     *
     * @throws io.conclave.engine.raft.config.ConfigException for a configuration that does not parse: nothing changed
     */
    void reload();

    /** Takes everything down, in the reverse order; what was never built is skipped. */
    void close();

    HttpApi http();

    /** The blocking queries waiting here now. */
    int blockingQueries();

    /** The catalog and health answers this agent encoded since start (a woken answer shared by N queries counts once). */
    long catalogAnswersEncoded();

    int httpPort();

    /** The DNS port, or -1 without one. */
    int dnsPort();

    /** The HTTPS port, or -1 without one. */
    int httpsPort();

    /** {@code /v1/agent/self}, as answered now without the core's counters. */
    JsonObject self();
}
