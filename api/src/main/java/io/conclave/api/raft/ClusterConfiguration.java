package io.conclave.api.raft;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The set of servers of a Raft cluster: immutable, ordered as given, with unique IDs.
 *
 * <p>Conclave changes the configuration one server at a time (Ongaro's thesis, 4.1), so two successive
 * configurations differ by one server or one suffrage.
 */
public record ClusterConfiguration(List<Server> servers) {

    /** The configuration of a server that has none yet. */
    public static final ClusterConfiguration EMPTY = new ClusterConfiguration(List.of());

    public ClusterConfiguration {
        servers = List.copyOf(servers);
        Set<String> ids = new HashSet<>();
        for (Server server : servers) {
            if (!ids.add(server.id())) {
                throw new IllegalArgumentException("server id " + server.id() + " appears twice in a configuration");
            }
        }
    }

    public Optional<Server> server(String id) {
        for (Server server : servers) {
            if (server.id().equals(id)) {
                return Optional.of(server);
            }
        }
        return Optional.empty();
    }

    public boolean contains(String id) {
        return server(id).isPresent();
    }

    public boolean isVoter(String id) {
        return server(id).map(Server::isVoter).orElse(false);
    }

    public List<Server> voters() {
        List<Server> voters = new ArrayList<>();
        for (Server server : servers) {
            if (server.isVoter()) {
                voters.add(server);
            }
        }
        return Collections.unmodifiableList(voters);
    }

    public int voterCount() {
        int count = 0;
        for (Server server : servers) {
            if (server.isVoter()) {
                count++;
            }
        }
        return count;
    }

    /** This configuration with {@code server} added, or replacing the server of the same id. */
    public ClusterConfiguration with(Server server) {
        List<Server> next = new ArrayList<>(servers.size() + 1);
        boolean replaced = false;
        for (Server existing : servers) {
            if (existing.id().equals(server.id())) {
                next.add(server);
                replaced = true;
            } else {
                next.add(existing);
            }
        }
        if (!replaced) {
            next.add(server);
        }
        return new ClusterConfiguration(next);
    }

    /** This configuration without the server {@code id} (unchanged if absent). */
    public ClusterConfiguration without(String id) {
        List<Server> next = new ArrayList<>(servers.size());
        for (Server existing : servers) {
            if (!existing.id().equals(id)) {
                next.add(existing);
            }
        }
        return new ClusterConfiguration(next);
    }
}
