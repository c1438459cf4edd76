package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.FreshPorts;
import io.conclave.testsupport.AgentHttp;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Three server agents in this JVM on static membership (each lists every server port), named {@code s0}..{@code s2},
 * bootstrapped together, for tests of what a cluster does across its servers without gossip or child processes.
 * Closing stops every agent still running.
 */
final class StaticServerCluster implements AutoCloseable {

    /** The servers' Raft ports, in the order of {@link #agents}. */
    final List<Integer> raftPorts;
    /** The agents, {@code s0} first. */
    final List<Agent> agents = new ArrayList<>();

    private StaticServerCluster(List<Integer> raftPorts) {
        this.raftPorts = raftPorts;
    }

    /**
     * Starts the three servers; {@code extraJson} is more top-level configuration for each (ending with a comma, or
     * empty). Their Raft ports are found free before any starts (each lists every server's): a start that fails on a
     * port taken meanwhile is stopped and tried again on fresh ports, in fresh data directories ({@link FreshPorts}).
     * On a failure to start, those started are stopped.
     */
    static StaticServerCluster start(Path work, String extraJson) throws Exception {
        return FreshPorts.start("three static servers", 3, (ports, attempt) -> start(work, extraJson, ports, attempt));
    }

    private static StaticServerCluster start(Path work, String extraJson, List<Integer> raftPorts, int attempt) {
        StaticServerCluster cluster = new StaticServerCluster(raftPorts);
        StringBuilder servers = new StringBuilder();
        for (int port : cluster.raftPorts) {
            servers.append(servers.length() == 0 ? "" : ", ").append("\"127.0.0.1:").append(port).append('"');
        }
        Path dataDirs = attempt == 1 ? work : work.resolve("start-" + attempt); // nothing of a failed start is reused
        try {
            for (int i = 0; i < cluster.raftPorts.size(); i++) {
                String json = "{\"server\": true, \"data_dir\": \"" + dataDirs.resolve("s" + i) + "\", \"node_name\": \"s" + i + "\","
                        + " \"bootstrap_expect\": 3, \"leave_drain_time\": \"100ms\", \"static_servers\": [" + servers + "], " + extraJson
                        + " \"ports\": {\"dns\": -1, \"http\": 0, \"server\": " + cluster.raftPorts.get(i) + "}}";
                cluster.agents.add(Agent.start(ConfigLoader.parse(json, false, "test"), null));
            }
        } catch (RuntimeException | Error e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** The leader's Raft address as {@code agent} answers {@code /v1/status/leader}; empty when none or no answer. */
    static String leaderOf(Agent agent) {
        try {
            return AgentHttp.call("GET", agent.httpPort(), "/v1/status/leader", null, null).body().replace("\"", "");
        } catch (Exception e) {
            return "";
        }
    }

    /** Waits until every agent names the same leader, and returns that leader's agent. */
    Agent awaitAgreedLeader() throws InterruptedException {
        Await.until("a leader all three agree on", Await.DEADLINE, () -> {
            String leader = leaderOf(agents.get(0));
            return !leader.isEmpty() && agents.stream().allMatch(agent -> leader.equals(leaderOf(agent)));
        });
        return byRaftAddress(leaderOf(agents.get(0)));
    }

    /** The agent whose Raft port ends {@code address} ({@code host:port}). */
    Agent byRaftAddress(String address) {
        return agents.get(raftPorts.indexOf(Integer.parseInt(address.substring(address.lastIndexOf(':') + 1))));
    }

    @Override
    public void close() {
        for (Agent agent : agents) {
            agent.stop();
        }
    }
}
