package io.conclave.engine.raft.agent;

import io.conclave.api.NodeIdentity;
import io.conclave.api.PluginContext;
import io.conclave.api.operator.RaftOperator;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import java.nio.file.Path;
import java.util.Optional;

/** The context a plugin is created with. */
record SimplePluginContext(Vertx vertx, Context context, JsonObject configuration, NodeIdentity node,
                           Path dataDirectory, Optional<RaftOperator> raftOperator) implements PluginContext {

    @Override
    public JsonObject configuration() {
        return configuration.copy();
    }
}
