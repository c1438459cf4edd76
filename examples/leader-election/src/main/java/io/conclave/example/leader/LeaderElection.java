package io.conclave.example.leader;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Leader election over Conclave's Consul API, as applications do it with Consul: each process takes a session
 * (TTL 10 s, renewed every 5 s, lock-delay 2 s) and tries to acquire {@code service/leader}; the one that holds it
 * leads. While leading it writes {@code service/data} every 500 ms in a transaction that first checks the lock key's
 * {@code ModifyIndex} as it was when this process acquired it (a check-and-set on the lock: any release, expiry or
 * new holder moves it), stamped with its {@code LockIndex} (its fencing token): a leader that was paused, lost its
 * session meanwhile and wakes up finds its write refused and steps down, instead of overwriting its successor —
 * even before the successor wrote anything.
 *
 * <p>Run: {@code java -cp conclave-example-leader-election-0.1.0-SNAPSHOT.jar LeaderElection HOST:PORT NAME} (three of them against a cluster);
 * each prints {@code LEADER}, {@code FENCED} and {@code FOLLOWER} lines with the time in milliseconds.
 */
public final class LeaderElection {

    static final String LOCK = "service/leader";
    static final String DATA = "service/data";

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;
    private final String name;

    /** The ACL token, from {@code CONSUL_HTTP_TOKEN} (else {@code CONCLAVE_HTTP_TOKEN}) as Consul's clients take it, or null. */
    private final String token;

    LeaderElection(String address, String name) {
        this.base = "http://" + address;
        this.name = name;
        String fromEnvironment = System.getenv("CONSUL_HTTP_TOKEN");
        this.token = fromEnvironment != null && !fromEnvironment.isBlank() ? fromEnvironment : System.getenv("CONCLAVE_HTTP_TOKEN");
    }

    private HttpRequest.Builder request(String path) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10));
        return token == null || token.isBlank() ? request : request.header("X-Consul-Token", token);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: LeaderElection HOST:PORT NAME");
            System.exit(2);
        }
        new LeaderElection(args[0], args[1]).run();
    }

    void run() throws Exception {
        String session = field(send("PUT", "/v1/session/create",
                "{\"Name\": \"" + name + "\", \"TTL\": \"10s\", \"LockDelay\": \"2s\"}"), "ID");
        Thread renewer = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(5_000);
                    send("PUT", "/v1/session/renew/" + session, null);
                } catch (Exception e) {
                    // the next renew tries again; a session not renewed for its TTL is lost, and the lock with it
                }
            }
        }, "renew");
        renewer.setDaemon(true);
        renewer.start();
        say("FOLLOWER session=" + session);
        while (true) {
            if ("true".equals(send("PUT", "/v1/kv/" + LOCK + "?acquire=" + session, name).strip())) {
                String lock = send("GET", "/v1/kv/" + LOCK, null);
                long lockIndex = Long.parseLong(field(lock, "LockIndex"));
                long fence = Long.parseLong(field(lock, "ModifyIndex"));
                say("LEADER session=" + session + " lockIndex=" + lockIndex);
                lead(session, lockIndex, fence);
                say("FOLLOWER session=" + session);
            }
            Thread.sleep(1_000); // held by another, or in its lock-delay
        }
    }

    /** Writes while leading; returns once a write is refused (fenced). */
    private void lead(String session, long lockIndex, long fence) throws Exception {
        long counter = 0;
        while (true) {
            Thread.sleep(500); // the work a leader does between two writes (a pause here is what fencing is for)
            String value = java.util.Base64.getEncoder().encodeToString((name + " lockIndex=" + lockIndex + " write=" + (++counter))
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8));
            String txn = "[{\"KV\": {\"Verb\": \"check-index\", \"Key\": \"" + LOCK + "\", \"Index\": " + fence + "}},"
                    + " {\"KV\": {\"Verb\": \"set\", \"Key\": \"" + DATA + "\", \"Value\": \"" + value + "\"}}]";
            HttpResponse<String> written = http.send(request("/v1/txn")
                    .PUT(HttpRequest.BodyPublishers.ofString(txn)).build(), HttpResponse.BodyHandlers.ofString());
            if (written.statusCode() == 409) {
                say("FENCED write refused: the lock is no longer at index " + fence + " (lockIndex=" + lockIndex + ")");
                return;
            }
            if (written.statusCode() != 200) {
                throw new IllegalStateException("PUT /v1/txn: " + written.statusCode() + " " + written.body());
            }
        }
    }

    private void say(String line) {
        System.out.println(System.currentTimeMillis() + " " + name + " " + line);
        System.out.flush();
    }

    /** The answer's body; "" for a 404. */
    private String send(String method, String path, String body) throws Exception {
        HttpResponse<String> response = http.send(request(path)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 404) {
            return "";
        }
        if (response.statusCode() != 200) {
            throw new IllegalStateException(method + " " + path + ": " + response.statusCode() + " " + response.body());
        }
        return response.body();
    }

    /** One field of the first JSON object in {@code json} (a string or a number): no JSON library needed here. */
    static String field(String json, String name) {
        Matcher matcher = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"([^\"]*)\"|(-?\\d+)|null)").matcher(json);
        if (!matcher.find()) {
            return null;
        }
        return matcher.group(2) != null ? matcher.group(2) : matcher.group(3);
    }
}
