package io.conclave.api.autopilot;

import io.conclave.api.raft.Suffrage;
import java.util.Map;

/**
 * Autopilot's view of one server.
 *
 * @param id            node ID
 * @param name          node name
 * @param suffrage      current suffrage in the configuration
 * @param healthy       whether autopilot considers it healthy (alive, recent contact, not trailing)
 * @param stableSinceMillis how long it has been healthy without interruption, in milliseconds
 * @param tags          its membership tags (zone, version, ...)
 */
public record ServerHealth(String id, String name, Suffrage suffrage, boolean healthy, long stableSinceMillis,
                           Map<String, String> tags) {
    public ServerHealth {
        tags = Map.copyOf(tags);
    }
}
