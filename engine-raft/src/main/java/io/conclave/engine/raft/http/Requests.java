package io.conclave.engine.raft.http;

import io.conclave.engine.raft.config.Durations;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.Unsigned64;
import io.conclave.engine.raft.runtime.OutcomeUnknownException;
import io.conclave.engine.raft.runtime.Refusal;
import io.conclave.engine.raft.runtime.RefusedException;
import io.conclave.engine.raft.service.CatalogService;
import io.conclave.engine.raft.service.KvService;
import io.conclave.engine.raft.service.ReadConsistency;
import io.vertx.core.http.HttpServerRequest;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;

/**
 * What every adapter reads from a request the same way, and how every failure of a service call becomes Consul's
 * status code: the query parameters Consul's endpoints share ({@code dc}, {@code ns}, {@code index}, {@code wait},
 * {@code stale}, {@code max_stale}, {@code cas}), a 400 for a malformed one, and {@link #fail} for the rest.
 */
public final class Requests {

    /** A blocking query's wait when none is given, as Consul's. */
    static final Duration DEFAULT_WAIT = Duration.ofMinutes(5);
    /** The longest wait a blocking query may ask for; a longer one is cut to it, as Consul does. */
    static final Duration MAX_WAIT = Duration.ofMinutes(10);

    private Requests() {
    }

    /** A client error: answered 400 with its message. */
    public static final class BadRequest extends RuntimeException {
        public BadRequest(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * A parameter that must be an unsigned 64-bit number, as Consul's {@code strconv.ParseUint} reads it, held as its 64
     * bits ({@link Unsigned64}); {@code defaultValue} when absent.
     */
    static long unsignedParam(HttpServerRequest request, String name, long defaultValue) {
        String text = request.getParam(name);
        if (text == null) {
            return defaultValue;
        }
        try {
            return Unsigned64.parse(text);
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid " + name + ": " + e.getMessage());
        }
    }

    /** {@code ?cas=}: absent, unconditional; else the ModifyIndex the write expects ({@link KvCommand#expecting}). */
    static long casParam(HttpServerRequest request) {
        return request.getParam("cas") == null ? KvCommand.NO_CAS : KvCommand.expecting(unsignedParam(request, "cas", 0));
    }

    /** A blocking query's {@code ?index=}: 0 when absent; at or above 2^63, which no Raft index reaches, the whole wait. */
    static long indexParam(HttpServerRequest request) {
        long given = unsignedParam(request, "index", 0);
        return given < 0 ? Long.MAX_VALUE : given;
    }

    /** A blocking query's {@code ?wait=}, cut to {@link #MAX_WAIT}. */
    static Duration waitParam(HttpServerRequest request) {
        String text = request.getParam("wait");
        if (text == null) {
            return DEFAULT_WAIT;
        }
        try {
            Duration wait = Durations.parse(text);
            return wait.compareTo(MAX_WAIT) > 0 ? MAX_WAIT : wait;
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid wait '" + text + "': " + e.getMessage());
        }
    }

    /**
     * A blocking query's wait plus up to a sixteenth of it at random, as Consul adds, so that watches started together
     * do not all return together.
     */
    static Duration jittered(Duration wait) {
        long sixteenth = wait.toNanos() / 16;
        return sixteenth <= 0 ? wait : wait.plusNanos(ThreadLocalRandom.current().nextLong(sixteenth));
    }

    /**
     * The read's consistency: {@code ?stale} (with {@code ?max_stale}, a Go duration), else linearizable.
     *
     * @throws BadRequest for a {@code max_stale} that is not a duration
     */
    static ReadConsistency consistency(HttpServerRequest request) {
        if (!request.params().contains("stale")) {
            return ReadConsistency.LINEARIZABLE;
        }
        String maxStale = request.getParam("max_stale");
        if (maxStale == null || maxStale.isEmpty()) {
            return ReadConsistency.STALE;
        }
        try {
            return new ReadConsistency(true, Optional.of(Durations.parseGo(maxStale)));
        } catch (IllegalArgumentException e) {
            throw new BadRequest("invalid max_stale '" + maxStale + "': " + e.getMessage());
        }
    }

    /** {@link #consistency}, or {@code null} once {@code request} was answered 400 for a bad {@code max_stale}. */
    static ReadConsistency consistencyOrRefused(HttpServerRequest request) {
        try {
            return consistency(request);
        } catch (BadRequest e) {
            HttpApi.error(request, 400, e.getMessage());
            return null;
        }
    }

    /**
     * Refuses a request whose parameters would change its meaning in a way this server does not implement, and
     * returns true; an unknown parameter that changes nothing is ignored, as Consul does. {@code ?dc} naming
     * another datacenter answers 500 "No path to datacenter" (Consul's answer; there is one datacenter); a
     * namespace or admin partition other than {@code default} answers 400, as does each of {@code unsupported}.
     * A token ({@code ?token}, {@code X-Consul-Token}, {@code Authorization: Bearer}) is accepted and ignored
     * while ACLs are not enabled, as Consul does.
     */
    static boolean refusedParameters(HttpServerRequest request, String datacenter, List<String> unsupported) {
        String dc = request.getParam("dc");
        if (dc != null && !dc.isEmpty() && !dc.equals(datacenter)) {
            HttpApi.error(request, 500, "No path to datacenter");
            return true;
        }
        for (String scope : List.of("ns", "partition")) {
            String value = request.getParam(scope);
            if (value != null && !value.isEmpty() && !value.equals("default")) {
                HttpApi.error(request, 400, "parameter " + scope + "=" + value + " is not supported: there is only the default "
                        + (scope.equals("ns") ? "namespace" : "admin partition"));
                return true;
            }
        }
        for (String name : unsupported) {
            if (request.params().contains(name)) {
                HttpApi.error(request, 400, "parameter " + name + " is not supported: the request was refused rather than"
                        + " served without it");
                return true;
            }
        }
        return false;
    }

    /**
     * Answers a failed service call as Consul does: 400 for the client's error (a bad parameter, a registration refused
     * before the log, a bad filter), 501 where this cluster's state machine
     * does not keep what the endpoint serves, 503 with {@code Retry-After} for an overloaded or stopping server, and 500
     * with a message for the rest (no leader, an unknown outcome, a timeout, a command the store refused).
     */
    public static void fail(HttpServerRequest request, Throwable error) {
        if (request.response().ended()) {
            return;
        }
        if (error instanceof BadRequest || error instanceof CatalogService.InvalidRequestException || error instanceof Filter.Invalid
                || error instanceof CatalogJson.Malformed) {
            HttpApi.error(request, 400, error instanceof CatalogJson.Malformed ? "Request decode failed: " + error.getMessage()
                    : error.getMessage());
        } else if (error instanceof HttpApi.TokenNotFound) {
            HttpApi.error(request, 403, error.getMessage()); // as the gate answers a request whose token does not exist
        } else if (error instanceof KvService.NotAvailableException) {
            HttpApi.error(request, 501, error.getMessage());
        } else if (error instanceof RefusedException refused && (refused.reason() == Refusal.OVERLOADED
                || refused.reason() == Refusal.STOPPED)) {
            // not the client's fault, and not for ever: 503 with a hint of when to come back (as a proxy would)
            request.response().putHeader("Retry-After", "1");
            HttpApi.error(request, 503, refused.getMessage());
        } else if (error instanceof RefusedException refused) {
            HttpApi.error(request, 500, "No cluster leader here: " + refused.getMessage());
        } else if (error instanceof OutcomeUnknownException) {
            HttpApi.error(request, 500, "outcome unknown: " + error.getMessage());
        } else if (error instanceof TimeoutException) {
            HttpApi.error(request, 500, "timed out: " + error.getMessage());
        } else {
            HttpApi.error(request, 500, String.valueOf(error.getMessage()));
        }
    }
}
