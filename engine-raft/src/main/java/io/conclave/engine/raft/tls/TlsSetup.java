package io.conclave.engine.raft.tls;

import io.conclave.engine.raft.config.ConclaveConfig;
import io.vertx.core.Vertx;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The agent's TLS, from its files: each interface's ({@code tls.https}, {@code tls.internal_rpc}) key and trust
 * material, read at start and again every {@link #RELOAD_MILLIS} on a worker, so that a certificate renewed on disk is
 * used from the next handshake on (damaged or mismatched files leave the last good ones in use).
 */
public final class TlsSetup {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");
    /** How often the files are read again. */
    public static final long RELOAD_MILLIS = 2_000;

    private final Vertx vertx;
    private final String datacenter;
    private final String domain;
    private final List<TlsFiles> files = new CopyOnWriteArrayList<>();

    public TlsSetup(Vertx vertx, String datacenter, String domain) {
        this.vertx = vertx;
        this.datacenter = datacenter;
        this.domain = domain;
    }

    /** Reads every interface's files again now (a reload), as the periodic check does; blocking. */
    public void reloadNow() {
        files.forEach(TlsFiles::reloadIfChanged);
    }

    /**
     * One interface's TLS, or empty when it has none. Blocking: call from a worker or the starting thread. On the server
     * port a client must present a server certificate of this datacenter when {@code verify_incoming} is on.
     *
     * @param what       the interface's configuration key, for messages
     * @param serverPort whether it is the server port (Raft and RPC)
     * @throws IllegalStateException naming the interface and what is wrong with its files
     */
    public Optional<VertxTls> load(ConclaveConfig.TlsInterface settings, String what, boolean serverPort) {
        if (!settings.enabled()) {
            return Optional.empty();
        }
        Optional<String> serverName = Optional.of(Certificates.serverName(datacenter, domain));
        TlsFiles loaded;
        try {
            loaded = new TlsFiles(what, settings.caFile(), settings.certFile().orElseThrow(), settings.keyFile().orElseThrow(),
                    serverPort ? serverName : Optional.empty(), settings.verifyOutgoing() || settings.verifyServerHostname(),
                    settings.verifyServerHostname() ? serverName : Optional.empty());
        } catch (TlsException e) {
            throw new IllegalStateException("cannot start with " + what + ": " + e.getMessage(), e);
        }
        if (files.isEmpty()) {
            vertx.setPeriodic(RELOAD_MILLIS, t -> vertx.executeBlocking(() -> {
                files.forEach(TlsFiles::reloadIfChanged);
                return null;
            }));
        }
        files.add(loaded);
        if (serverPort && !settings.verifyIncoming()) {
            LOG.warn("{}: the server port speaks TLS but verify_incoming is off: any client can connect, join and send Raft"
                    + " messages; turn it on once every server has a certificate", what);
        }
        return Optional.of(new VertxTls(loaded, settings.verifyIncoming(), settings.minVersion()));
    }
}
