package io.conclave.engine.raft.http;

import io.conclave.api.membership.Member;
import io.conclave.engine.raft.config.ConfigException;
import io.conclave.engine.raft.service.RaftService;
import io.conclave.engine.raft.service.RaftStatus;
import io.vertx.core.Future;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The agent's own endpoints: Consul's {@code GET /v1/agent/self} ({@code Config}, {@code Member}, {@code Meta} and
 * {@code Stats.raft}), {@code PUT /v1/agent/leave}, {@code PUT /v1/agent/reload}, {@code GET /v1/status/leader} and {@code GET /v1/status/peers};
 * and Conclave's {@code GET /v1/agent/plugins}.
 */
public final class AgentHttpApi {

    /**
     * What the agent says of itself, beyond its Raft node.
     *
     * @param config        Consul's {@code Config} object
     * @param meta          the node's metadata
     * @param plugins       the active provider of every SPI ({@code /v1/agent/self}'s {@code Plugins})
     * @param removalPolicy the removal policy's name ({@code Stats.raft.removal_policy})
     */
    public record Self(JsonObject config, Map<String, String> meta, Supplier<JsonObject> plugins, String removalPolicy) {
    }

    private final RaftService raft;
    private final Self self;
    private final Supplier<Member> member;
    private final Supplier<Future<Map<String, Long>>> coreCounters;
    private final BooleanSupplier stateless;
    private final Supplier<JsonArray> pluginList;
    private final Supplier<Future<Void>> leave;
    private final Supplier<Future<Void>> reload;

    /**
     * @param member       this agent as membership sees it
     * @param coreCounters the Raft core's election counters, for {@code Stats.raft}
     * @param stateless    whether the node is stateless (its ID may have voted before its data was lost)
     * @param pluginList   every provider found ({@code /v1/agent/plugins})
     * @param leave        the agent's leave
     * @param reload       the agent's reload of its configuration files (fails with the reason nothing changed)
     */
    public AgentHttpApi(RaftService raft, Self self, Supplier<Member> member, Supplier<Future<Map<String, Long>>> coreCounters,
                        BooleanSupplier stateless, Supplier<JsonArray> pluginList, Supplier<Future<Void>> leave,
                        Supplier<Future<Void>> reload) {
        this.raft = raft;
        this.self = self;
        this.member = member;
        this.coreCounters = coreCounters;
        this.stateless = stateless;
        this.pluginList = pluginList;
        this.leave = leave;
        this.reload = reload;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, "/v1/agent/self", request -> coreCounters.get().onComplete((counters, error) ->
                HttpApi.json(request, 200, self(error == null ? counters : Map.of()))));
        http.route(HttpMethod.PUT, "/v1/agent/leave", request -> leave.get()
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, 500, "leave failed: " + error.getMessage())));
        http.route(HttpMethod.PUT, "/v1/agent/reload", request -> reload.get()
                .onSuccess(v -> request.response().setStatusCode(200).end())
                .onFailure(error -> HttpApi.error(request, error instanceof ConfigException ? 400 : 500,
                        "reload failed, nothing changed: " + error.getMessage())));
        http.route(HttpMethod.GET, "/v1/status/leader", request -> {
            String address = raft.leaderAddress();
            HttpApi.json(request, 200, "\"" + (address == null ? "" : address) + "\"");
        });
        http.route(HttpMethod.GET, "/v1/status/peers", request -> {
            JsonArray peers = new JsonArray();
            raft.configuration().servers().forEach(server -> peers.add(server.address())); // non-voters too, as Consul lists them
            HttpApi.json(request, 200, peers);
        });
        http.route(HttpMethod.GET, "/v1/agent/plugins", request -> HttpApi.json(request, 200, pluginList.get()));
    }

    /** {@code /v1/agent/self}, with the core's election counters in {@code Stats.raft} (Conclave's, beyond Consul's keys). */
    public JsonObject self(Map<String, Long> counters) {
        return new JsonObject()
                .put("Config", self.config().copy())
                .put("Member", MembershipHttpApi.memberJson(member.get()))
                .put("Meta", new JsonObject(new LinkedHashMap<String, Object>(self.meta())))
                .put("Plugins", self.plugins().get())
                .put("Stats", new JsonObject().put("raft", raftStats(counters)));
    }

    /** Consul's {@code Stats.raft}, as strings like Consul's, plus the removal policy. */
    private JsonObject raftStats(Map<String, Long> counters) {
        RaftStatus status = raft.status();
        JsonObject stats = new JsonObject();
        for (String[] counter : new String[][] {{"elections_started", "raft.election.started"}, {"prevotes_started", "raft.prevote.started"},
                {"elections_won", "raft.election.won"}, {"leadership_transfers", "raft.leadership.transfer"}}) {
            if (counters.containsKey(counter[1])) {
                stats.put(counter[0], Long.toString(counters.get(counter[1])));
            }
        }
        return stats
                .put("state", status.state())
                .put("term", Long.toString(status.term()))
                .put("last_log_index", Long.toString(status.lastIndex()))
                .put("commit_index", Long.toString(status.commitIndex()))
                .put("applied_index", Long.toString(status.appliedIndex()))
                .put("num_peers", Integer.toString(Math.max(0, raft.configuration().voterCount() - 1)))
                .put("last_contact", lastContact(status, System.nanoTime()))
                .put("removal_policy", self.removalPolicy())
                .put("stateless", Boolean.toString(stateless.getAsBoolean()));
    }

    /**
     * Consul's {@code last_contact}: {@code "0"} on the leader, {@code "never"} before any contact with a
     * leader, else the time since the leader's last message as Go prints a duration ({@code "41.204ms"},
     * {@code "1.5s"}).
     */
    static String lastContact(RaftStatus status, long nowNanos) {
        if (status.leads()) {
            return "0";
        }
        if (status.lastLeaderContact() == RaftStatus.NEVER) {
            return "never";
        }
        long micros = Math.max(0, (nowNanos - status.lastLeaderContact()) / 1000);
        if (micros < 1_000_000) {
            return BigDecimal.valueOf(micros, 3).stripTrailingZeros().toPlainString() + "ms";
        }
        return BigDecimal.valueOf(micros / 1000, 3).stripTrailingZeros().toPlainString() + "s";
    }
}
