package io.conclave.engine.raft.core;

import java.util.Objects;

/** One membership change: Conclave changes the configuration one server at a time (thesis 4.1). */
public record ConfigChange(Kind kind, String serverId, String address) {

    public enum Kind {
        /** Adds a server as a non-voter, or demotes a voter. */
        ADD_NONVOTER,
        /** Adds a server as a voter, or promotes a non-voter. */
        ADD_VOTER,
        /** Removes a server. */
        REMOVE
    }

    public ConfigChange {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(serverId, "serverId");
        address = address == null ? "" : address;
    }

    public static ConfigChange addNonVoter(String id, String address) {
        return new ConfigChange(Kind.ADD_NONVOTER, id, address);
    }

    public static ConfigChange addVoter(String id, String address) {
        return new ConfigChange(Kind.ADD_VOTER, id, address);
    }

    public static ConfigChange remove(String id) {
        return new ConfigChange(Kind.REMOVE, id, "");
    }
}
