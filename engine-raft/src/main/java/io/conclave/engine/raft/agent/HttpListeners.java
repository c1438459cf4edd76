package io.conclave.engine.raft.agent;

import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.http.HttpApi;
import io.conclave.engine.raft.tls.TlsSetup;
import io.conclave.engine.raft.tls.VertxTls;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import java.util.function.IntConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An agent's HTTP API listeners, the same for a server ({@link AgentAssembly}) and a client ({@link ClientAssembly}):
 * plain HTTP on {@code ports.http} (-1: none, the routes served over HTTPS alone) and HTTPS on {@code ports.https}
 * (-1: none) with {@code tls.https}'s certificate.
 */
final class HttpListeners {

    private static final Logger LOG = LoggerFactory.getLogger(HttpListeners.class);

    private HttpListeners() {
    }

    /**
     * Starts both listeners on {@code http}'s routes, with the configuration's limits: the plain port (-1 when none),
     * once {@code httpsPort} was given the HTTPS one (when there is one).
     */
    static Future<Integer> start(Vertx vertx, HttpApi http, ConclaveConfig config, TlsSetup tls, IntConsumer httpsPort) {
        Future<Integer> plain = http.limits(config.limits()).listen(vertx, config.clientAddr(), config.ports().http());
        if (config.ports().http() < 0) {
            LOG.info("plain HTTP is off (ports.http -1): the HTTP API is served over HTTPS only");
        }
        if (config.ports().https() < 0) {
            return plain;
        }
        VertxTls httpsTls = tls.load(config.tls().https(), "tls.https", false).orElseThrow();
        return plain.compose(port -> http.listenHttps(config.clientAddr(), config.ports().https(), httpsTls).map(https -> {
            httpsPort.accept(https);
            LOG.info("HTTPS on {}:{} ({})", config.clientAddr(), https, config.tls().https().verifyIncoming()
                    ? "clients must present a certificate the CA signed" : "any client: verify_incoming is off");
            return port;
        }));
    }
}
