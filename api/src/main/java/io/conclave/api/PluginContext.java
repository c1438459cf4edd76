package io.conclave.api;

import io.conclave.api.operator.RaftOperator;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What a plugin receives from the engine when it is created.
 *
 * <p>Threading: the engine creates each plugin on the plugin's own {@link #context()}; a plugin that
 * runs on Vert.x does its non-blocking work there and its blocking work through
 * {@link Vertx#executeBlocking}. The accessors never block and may be called from any thread.
 */
public interface PluginContext {

    /** The Vert.x instance the node runs on. */
    Vertx vertx();

    /** The event-loop context reserved for this plugin. */
    Context context();

    /**
     * This plugin's configuration section: the object under {@code plugin_config.<provider name>} in
     * the configuration file, or an empty object. The plugin validates it and throws
     * {@link IllegalArgumentException} naming the key when it is wrong.
     */
    JsonObject configuration();

    /** This node's identity. */
    NodeIdentity node();

    /** A folder owned by this plugin inside the node's data folder; created by the engine. */
    Path dataDirectory();

    /**
     * The view of the Raft engine that autopilot and operators need. Present for autopilot and removal
     * policy plugins once the Raft engine runs; empty for storage providers, which are opened before it.
     */
    Optional<RaftOperator> raftOperator();
}
