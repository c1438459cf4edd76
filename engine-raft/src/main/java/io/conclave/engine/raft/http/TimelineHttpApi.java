package io.conclave.engine.raft.http;

import io.conclave.engine.raft.runtime.Timeline;
import io.vertx.core.Context;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Conclave's own {@code GET /v1/conclave/timeline}: this server's {@link Timeline} (elections, leaders, membership
 * changes, snapshots, with the write gap around each leader and membership change), oldest first, with Consul's
 * blocking queries: {@code X-Consul-Index} is the timeline's index, and {@code ?index=&wait=} answers once it moved
 * past the given one or the wait ran out. Needs {@code operator:read}. Not a Consul endpoint.
 */
public final class TimelineHttpApi {

    public static final String PATH = "/v1/conclave/timeline";

    private final Vertx vertx;
    private final Timeline timeline;

    public TimelineHttpApi(Vertx vertx, Timeline timeline) {
        this.vertx = vertx;
        this.timeline = timeline;
    }

    public void register(HttpApi http) {
        http.route(HttpMethod.GET, PATH, this::read);
    }

    private void read(HttpServerRequest request) {
        long index;
        Duration wait;
        try {
            index = Requests.indexParam(request);
            wait = Requests.waitParam(request);
        } catch (Requests.BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return;
        }
        if (index == 0 || timeline.index() != index) { // moved on, or an index from before a restart: at once
            answer(request);
            return;
        }
        Context context = vertx.getOrCreateContext();
        AtomicBoolean answered = new AtomicBoolean();
        long[] timer = {-1};
        Runnable woken = () -> { // on this request's context
            if (answered.compareAndSet(false, true)) {
                vertx.cancelTimer(timer[0]);
                answer(request);
            }
        };
        Timeline.Waiter waiter = timeline.await(index, () -> context.runOnContext(v -> woken.run()));
        timer[0] = vertx.setTimer(Math.max(1, Requests.jittered(wait).toMillis()), t -> {
            waiter.cancel();
            woken.run();
        });
        if (request.version() != io.vertx.core.http.HttpVersion.HTTP_2) {
            // a client gone: its waiter goes at once. Not on a request a client agent forwarded (HTTP/2): HttpApi's own
            // handlers count that stream's end, and one handler replaces the other; the timer ends that wait.
            request.response().closeHandler(closed -> {
                answered.set(true);
                waiter.cancel();
                vertx.cancelTimer(timer[0]);
            });
        }
    }

    private void answer(HttpServerRequest request) {
        Timeline.View view = timeline.view();
        JsonArray events = new JsonArray();
        for (Timeline.Event event : view.events()) {
            events.add(new JsonObject()
                    .put("Sequence", event.sequence())
                    .put("Time", java.time.Instant.ofEpochMilli(event.timeMillis()).toString())
                    .put("TimeMillis", event.timeMillis())
                    .put("Type", event.type().label())
                    .put("Term", event.term())
                    .put("Index", event.index())
                    .put("Server", event.server())
                    .put("Detail", event.detail())
                    .put("WriteGapMillis", event.type().measuresWriteGap() && event.writeGapMillis() >= 0 ? event.writeGapMillis() : null));
        }
        request.response().putHeader("X-Consul-Index", Long.toString(view.index()));
        HttpApi.json(request, 200, new JsonObject().put("Capacity", timeline.capacity()).put("Index", view.index()).put("Events", events));
    }
}
