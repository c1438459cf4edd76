package io.conclave.engine.raft.tls;

import io.vertx.core.http.ClientAuth;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpServerOptions;
import io.vertx.core.http.HttpVersion;
import io.vertx.core.net.KeyCertOptions;
import io.vertx.core.net.TrustOptions;
import java.util.Set;

/**
 * Vert.x's options for one interface's TLS: the key and trust managers of {@link TlsFiles} (so that a reload takes
 * effect at the next handshake), the least protocol version, and whether clients must present a certificate. Host
 * names are checked by {@link TlsFiles}'s trust manager against the name servers carry, not against the address
 * dialled (servers are dialled by IP).
 *
 * @param minVersion {@code TLSv1.2} or {@code TLSv1.3}
 */
public record VertxTls(TlsFiles files, boolean requireClientCertificate, String minVersion) {

    private Set<String> protocols() {
        return "TLSv1.3".equals(minVersion) ? Set.of("TLSv1.3") : Set.of("TLSv1.2", "TLSv1.3");
    }

    /** {@code options} made a TLS server's; {@code alpn} for gRPC (HTTP/2 over TLS). */
    public HttpServerOptions server(HttpServerOptions options, boolean alpn) {
        options.setSsl(true).setUseAlpn(alpn)
                .setKeyCertOptions(KeyCertOptions.wrap(files.keyManager()))
                .setTrustOptions(TrustOptions.wrap(files.trustManager()))
                .setClientAuth(requireClientCertificate ? ClientAuth.REQUIRED : ClientAuth.NONE)
                .setEnabledSecureTransportProtocols(protocols());
        return options;
    }

    /** The options of a gRPC client over TLS: HTTP/2 by ALPN, presenting this side's certificate. */
    public HttpClientOptions grpcClient() {
        HttpClientOptions options = new HttpClientOptions().setProtocolVersion(HttpVersion.HTTP_2).setSsl(true).setUseAlpn(true)
                .setHttp2ClearTextUpgrade(false).setVerifyHost(false)
                .setKeyCertOptions(KeyCertOptions.wrap(files.keyManager()))
                .setTrustOptions(TrustOptions.wrap(files.trustManager()))
                .setEnabledSecureTransportProtocols(protocols());
        return options;
    }
}
