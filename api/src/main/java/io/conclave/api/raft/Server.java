package io.conclave.api.raft;

import java.util.Objects;

/**
 * One server of a Raft configuration.
 *
 * @param id       the server's node ID (a UUID string): the key of the configuration
 * @param address  where its Raft service listens, {@code host:port}
 * @param suffrage whether it votes
 */
public record Server(String id, String address, Suffrage suffrage) {
    public Server {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(address, "address");
        Objects.requireNonNull(suffrage, "suffrage");
        if (id.isEmpty()) {
            throw new IllegalArgumentException("a server id must not be empty");
        }
    }

    public boolean isVoter() {
        return suffrage == Suffrage.VOTER;
    }

    public Server withSuffrage(Suffrage newSuffrage) {
        return new Server(id, address, newSuffrage);
    }
}
