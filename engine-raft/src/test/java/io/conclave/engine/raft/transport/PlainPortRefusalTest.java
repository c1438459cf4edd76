package io.conclave.engine.raft.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.testing.Await;
import io.conclave.engine.raft.testing.LogCapture;
import io.vertx.core.Vertx;
import java.io.InputStream;
import java.net.Socket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What the plain-text server port logs of bytes that are not HTTP: what is known (the sender, that they did not read
 * as an HTTP request, and why), not a guess stated as fact — random bytes were logged as "a peer speaking TLS".
 */
@Timeout(60)
class PlainPortRefusalTest {

    @Test
    void random_bytes_on_the_plain_port_are_refused_and_logged_as_unreadable_not_as_tls() throws Exception {
        Vertx vertx = Vertx.vertx();
        GrpcRaftTransport transport = new GrpcRaftTransport(vertx, "plain", peer -> null);
        try (LogCapture log = LogCapture.start()) {
            int port = Await.result(transport.listen("127.0.0.1", 0));
            byte[] random = new byte[300];
            new java.util.Random(35).nextBytes(random);
            try (Socket socket = new Socket("127.0.0.1", port)) {
                socket.setSoTimeout(10_000);
                socket.getOutputStream().write(random);
                InputStream in = socket.getInputStream();
                String answer = new String(in.readNBytes(12), java.nio.charset.StandardCharsets.US_ASCII);
                assertTrue(answer.contains("400"), "refused: " + answer);
            }
            Await.until("the refusal is counted", () -> transport.refusedHandshakes() == 1);
            Await.until("the refusal is logged", () -> log.text().contains("refused a request on the server port"));
            String line = log.text().lines().filter(text -> text.contains("refused a request on the server port")).findFirst().orElseThrow();
            assertTrue(line.contains("WARN") && line.contains("not gRPC over HTTP/2"), line);
            assertTrue(line.contains("from /127.0.0.1:") || line.contains("from 127.0.0.1:"), "names the sender: " + line);
            assertTrue(line.contains("do not read as an HTTP request ("), "says what is known, with the decoder's reason: " + line);
            assertFalse(line.contains("a peer speaking TLS to this port"), "no guess stated as a fact: " + line);
            assertTrue(line.contains("tls.internal_rpc"), "names the likely cause to check: " + line);
        } finally {
            Await.result(transport.close());
            Await.result(vertx.close());
        }
    }
}
