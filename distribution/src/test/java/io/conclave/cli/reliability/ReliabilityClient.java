package io.conclave.cli.reliability;

import io.conclave.cli.harness.SecureMode;
import io.conclave.cli.harness.TestHosts;
import io.conclave.testsupport.Poll;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The reliability suite's clients, a process of their own inside the hub namespace ({@link TestHosts}), where they
 * reach every server; JDK classes only, so that it runs from the test classes folder alone. Each client thread writes,
 * reads (the default mode and {@code ?consistent}; and {@code ?stale}, recorded as {@code STALE} with the index the server
 * answered), compare-and-sets and deletes a few keys through the HTTP API of a
 * server picked at random each time, with time-outs, and records every operation with its invocation and completion
 * (monotonic nanoseconds, the same clock as the test's) and its outcome: ok, failed (certainly not applied: refused, or
 * no connection), or unknown (it may have been applied). Keys are retired after {@link #OPS_PER_KEY} recorded
 * operations, so that each key's history stays small enough for the linearizability search.
 *
 * <p>Commands on stdin, from the test: {@code transfer} (a leadership transfer, asked of the leader), {@code leave N}
 * (server N leaves gracefully), {@code stop} (the clients stop, their last operations answered or timed out), then
 * {@code final}: waits until every server holds the same store, records it, reads every key used (consistent) into the
 * history, and exits. Every line of the history file: {@code op}, {@code leader}, {@code event} or {@code state}.
 */
public final class ReliabilityClient {

    static final int OPS_PER_KEY = 120;
    static final int ACTIVE_KEYS = 4;
    static final Duration TIMEOUT = Duration.ofSeconds(3);
    /**
     * The last clients only read: a write to a server cut off from the others waits out its time-out, so a client that
     * also writes soon waits on one, and without readers hardly a read would reach a deposed leader in the moments it
     * still believes it leads (where a read served without confirming leadership is stale).
     */
    static final int READERS = 2;
    /**
     * A reader's time-out: short, so that a read stuck on a server cut off from the leader does not hold it through
     * the moments that matter (an unanswered read changes nothing, and is not recorded).
     */
    static final Duration READER_TIMEOUT = Duration.ofMillis(250);

    private final List<String> servers;
    private final PrintWriter history;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(1)).build();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final String[] keys = new String[ACTIVE_KEYS];
    private final int[] keyOps = new int[ACTIVE_KEYS];
    private final Set<String> used = new LinkedHashSet<>();
    private int nextKey;

    private ReliabilityClient(List<String> servers, PrintWriter history) {
        this.servers = servers;
        this.history = history;
        for (int i = 0; i < ACTIVE_KEYS; i++) {
            keys[i] = newKey();
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> servers = List.of(args[0].split(","));
        int clients = Integer.parseInt(args[1]);
        Path out = Path.of(args[2]);
        int patientReaders = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        try (PrintWriter history = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8), true)) {
            ReliabilityClient client = new ReliabilityClient(servers, history);
            client.run(clients, patientReaders);
        }
        System.exit(0);
    }

    /**
     * Runs {@code clients} threads, the last {@link #READERS} of them readers only, then {@code patientReaders} more
     * readers with the writers' time-out ({@link #TIMEOUT}): a read of theirs sent to a server that knows no leader
     * waits there through the election, and is confirmed by the new leader the moment it is elected.
     */
    private void run(int clients, int patientReaders) throws Exception {
        awaitServers();
        List<Thread> threads = new ArrayList<>();
        for (int c = 1; c <= clients + patientReaders; c++) {
            int id = c;
            boolean reader = c > clients - READERS;
            Duration readTimeout = c > clients ? TIMEOUT : reader ? READER_TIMEOUT : TIMEOUT;
            String name = (c > clients ? "patient-reader-" : reader ? "reader-" : "client-") + c;
            Thread thread = new Thread(() -> work(id, reader, readTimeout), name);
            thread.start();
            threads.add(thread);
        }
        Thread leaders = new Thread(this::watchLeaders, "leaders");
        leaders.setDaemon(true);
        leaders.start();
        say("ready");
        BufferedReader commands = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = commands.readLine()) != null) {
            String[] words = line.trim().split("\\s+");
            switch (words[0]) {
                case "transfer" -> say("transfer " + transfer());
                case "leave" -> say("leave " + leave(Integer.parseInt(words[1])));
                case "leader-of" -> say("leader-of " + words[1] + " " + leaderOf(Integer.parseInt(words[1])));
                case "stop" -> {
                    running.set(false);
                    for (Thread thread : threads) {
                        thread.join();
                    }
                    say("stopped");
                }
                case "final" -> {
                    say("final " + finish(Long.parseLong(words[1])));
                    return;
                }
                default -> say("unknown command " + line);
            }
        }
    }

    private synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    private synchronized void record(String line) {
        history.println(line);
    }

    private synchronized String newKey() {
        String key = "jepsen/k" + nextKey++;
        used.add(key);
        return key;
    }

    private synchronized String pickKey(Random random) {
        return keys[random.nextInt(ACTIVE_KEYS)];
    }

    /**
     * Counts an operation recorded for the linearizability search on {@code key}, and retires the key once it has
     * {@link #OPS_PER_KEY}. Only those count: a read given up on (not recorded) or a stale read (checked apart) does
     * not, so that a key read in vain through a fault still holds the writes made before it (with more readers, all
     * counted, keys lived about six seconds, less than a fault, and the reads after an election found keys made since).
     */
    private synchronized void counted(String key) {
        for (int slot = 0; slot < ACTIVE_KEYS; slot++) {
            if (keys[slot].equals(key) && ++keyOps[slot] >= OPS_PER_KEY) {
                keys[slot] = newKey();
                keyOps[slot] = 0;
            }
        }
    }

    // ---------------------------------------------------------------- the workload

    private record Answer(int status, String body, String outcome, String index, String knownLeader, String lastContact) {
        Answer(int status, String body, String outcome) {
            this(status, body, outcome, null, null, null);
        }
    }

    private void work(int client, boolean reader, Duration readTimeout) {
        Random random = ThreadLocalRandom.current();
        int counter = 0;
        while (running.get()) {
            String key = pickKey(random);
            int server = random.nextInt(servers.size());
            String base = servers.get(server) + "/v1/kv/" + key;
            int dice = random.nextInt(reader ? 35 : 100); // a reader: stale, default and consistent reads only
            if (dice < 8) { // a stale read, of any server: checked only for going back in time on one server
                long invoked = System.nanoTime();
                Answer answer = call(HttpRequest.newBuilder(URI.create(base + "?stale")).GET(), readTimeout);
                long returned = System.nanoTime();
                if (answer.outcome.equals("ok") && (answer.status == 200 || answer.status == 404) && answer.index != null) {
                    op(client, "STALE", key, null, null, invoked, returned, answer.index, "ok", server, "stale");
                }
            } else if (dice < 35) {
                boolean consistent = random.nextBoolean();
                long invoked = System.nanoTime();
                Answer answer = call(HttpRequest.newBuilder(URI.create(base + "?raw" + (consistent ? "&consistent" : ""))).GET(), readTimeout);
                long returned = System.nanoTime();
                if (answer.outcome.equals("ok") && (answer.status == 200 || answer.status == 404)) {
                    op(client, "GET", key, null, null, invoked, returned, answer.status == 404 ? "null" : answer.body, "ok", server,
                            consistent ? "consistent" : "default");
                }
            } else if (dice < 70) {
                String value = "c" + client + "-" + ++counter;
                write(client, server, "PUT", key, value, null, HttpRequest.newBuilder(URI.create(base))
                        .PUT(HttpRequest.BodyPublishers.ofString(value)));
            } else if (dice < 90) {
                long invoked = System.nanoTime(); // read the current value and index, then compare-and-set from it
                Answer read = call(HttpRequest.newBuilder(URI.create(base)).GET());
                long returned = System.nanoTime();
                if (!read.outcome.equals("ok") || (read.status != 200 && read.status != 404)) {
                    continue;
                }
                String current = null;
                long index = 0;
                if (read.status == 200) {
                    current = field(read.body, "\"Value\":\"([^\"]*)\"");
                    current = current == null ? "" : new String(java.util.Base64.getDecoder().decode(current), StandardCharsets.UTF_8);
                    index = Long.parseLong(field(read.body, "\"ModifyIndex\":(\\d+)"));
                }
                op(client, "GET", key, null, null, invoked, returned, current == null ? "null" : current, "ok", server, "default");
                String value = "c" + client + "-" + ++counter;
                write(client, server, "CAS", key, value, current, HttpRequest.newBuilder(URI.create(base + "?cas=" + index))
                        .PUT(HttpRequest.BodyPublishers.ofString(value)));
            } else {
                write(client, server, "DELETE", key, null, null, HttpRequest.newBuilder(URI.create(base)).DELETE());
            }
            pause(random);
        }
    }

    private static void pause(Random random) {
        try {
            Thread.sleep(2 + random.nextInt(10)); // a client's think time: the servers are not flooded on 2 cores
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void write(int client, int server, String kind, String key, String value, String expected, HttpRequest.Builder request) {
        long invoked = System.nanoTime();
        Answer answer = call(request);
        long returned = System.nanoTime();
        String output = answer.body == null ? "" : answer.body.trim();
        if (answer.outcome.equals("ok") && answer.status != 200) {
            op(client, kind, key, value, expected, invoked, -1, "", "unknown", server, answer.status + " " + output);
        } else {
            op(client, kind, key, value, expected, invoked, answer.outcome.equals("ok") ? returned : -1,
                    kind.equals("CAS") ? output : "ok", answer.outcome, server, answer.outcome.equals("ok") ? "" : output);
        }
    }

    /** Outcome "ok" (an HTTP answer), "fail" (certainly not applied) or "unknown". */
    private Answer call(HttpRequest.Builder request) {
        return call(request, TIMEOUT);
    }

    private Answer call(HttpRequest.Builder request, Duration timeout) {
        try {
            if (SecureMode.on()) {
                request.header("X-Consul-Token", SecureMode.TOKEN);
            }
            HttpResponse<String> response = http.send(request.timeout(timeout).build(), HttpResponse.BodyHandlers.ofString());
            String body = response.body();
            if (response.statusCode() == 503 || (response.statusCode() == 500 && body.startsWith("No cluster leader here"))) {
                return new Answer(response.statusCode(), body, "fail"); // refused before it was proposed
            }
            return new Answer(response.statusCode(), body, "ok", response.headers().firstValue("X-Consul-Index").orElse(null),
                    response.headers().firstValue("X-Consul-KnownLeader").orElse(null),
                    response.headers().firstValue("X-Consul-LastContact").orElse(null));
        } catch (HttpConnectTimeoutException | ConnectException e) {
            return new Answer(0, e.toString(), "fail"); // never reached the server
        } catch (IOException e) {
            return new Answer(0, e.toString(), "unknown");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Answer(0, e.toString(), "unknown");
        }
    }

    private void op(int client, String kind, String key, String value, String expected, long invoked, long returned, String output,
                    String outcome, int server, String note) {
        if (!kind.equals("STALE") && running.get()) { // the final reads retire nothing
            counted(key);
        }
        record(String.join("\t", "op", Integer.toString(client), kind, key, text(value), text(expected), Long.toString(invoked),
                Long.toString(returned), text(output), outcome, Integer.toString(server + 1), text(note)));
    }

    /** A field of the history: {@code -} for none, tabs and line breaks escaped. */
    private static String text(String value) {
        return value == null ? "-" : value.isEmpty() ? "\\e" : value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n");
    }

    private static String field(String json, String regex) {
        Matcher matcher = Pattern.compile(regex).matcher(json);
        return matcher.find() ? matcher.group(1) : null;
    }

    // ---------------------------------------------------------------- leaders, operator actions, the end

    private void watchLeaders() {
        String last = null;
        while (true) {
            String leader = leaderAddress();
            if (leader != null && !leader.equals(last)) {
                record(String.join("\t", "leader", Long.toString(System.nanoTime()), leader));
                last = leader;
            }
            try {
                Thread.sleep(100); // the sampling period of the leader seen, for as long as the run lasts: no condition ends it
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Until every server answers and one knows a leader (at most 120 s): the workload starts on a formed cluster. */
    private void awaitServers() throws InterruptedException {
        Poll.within(Duration.ofSeconds(120), Duration.ofMillis(200), () -> servers.stream().allMatch(this::knowsLeader));
    }

    /** Whether {@code server} answers and names a leader. */
    private boolean knowsLeader(String server) {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(server + "/v1/status/leader"))
                    .timeout(Duration.ofMillis(500)).build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 && !response.body().replace("\"", "").isBlank();
        } catch (IOException e) {
            return false; // not up yet
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // ends the wait at its next pause
            return false;
        }
    }

    /** The leader's Raft address as the first server that knows one says, or null. */
    private String leaderAddress() {
        for (String server : servers) {
            try {
                HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(server + "/v1/status/leader"))
                        .timeout(Duration.ofMillis(500)).build(), HttpResponse.BodyHandlers.ofString());
                String leader = response.body().replace("\"", "").trim();
                if (response.statusCode() == 200 && !leader.isEmpty()) {
                    return leader;
                }
            } catch (IOException e) {
                // down or cut off: ask the next
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        return null;
    }

    /** The leader server {@code server} (1-based) names, or {@code -} when it names none or does not answer within 300 ms. */
    private String leaderOf(int server) {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create(servers.get(server - 1) + "/v1/status/leader"))
                    .timeout(Duration.ofMillis(300)).build(), HttpResponse.BodyHandlers.ofString());
            String leader = response.body().replace("\"", "").trim();
            return response.statusCode() == 200 && !leader.isEmpty() ? leader : "-";
        } catch (IOException e) {
            return "-";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "-";
        }
    }

    /** The HTTP base of the server whose Raft address is {@code raft} (servers differ by IP address). */
    private String serverOf(String raft) {
        String host = raft.substring(0, raft.lastIndexOf(':'));
        for (String server : servers) {
            if (URI.create(server).getHost().equals(host)) {
                return server;
            }
        }
        return null;
    }

    private String transfer() {
        String leader = leaderAddress();
        String server = leader == null ? null : serverOf(leader);
        if (server == null) {
            return "skipped: no leader known";
        }
        Answer answer = call(HttpRequest.newBuilder(URI.create(server + "/v1/operator/raft/transfer-leader"))
                .POST(HttpRequest.BodyPublishers.noBody()));
        record(String.join("\t", "event", Long.toString(System.nanoTime()), text("transfer from " + leader + ": " + answer.status)));
        return answer.status + " from " + leader;
    }

    /** Asks server {@code server} to leave, once it is up and knows a leader (it may be restarting still), within 60 s. */
    private String leave(int server) throws InterruptedException {
        Poll.within(Duration.ofSeconds(60), Duration.ofMillis(200), () -> {
            Answer status = call(HttpRequest.newBuilder(URI.create(servers.get(server - 1) + "/v1/status/leader")).GET());
            return status.outcome.equals("ok") && status.status == 200 && !status.body.replace("\"", "").isBlank();
        });
        Answer answer = call(HttpRequest.newBuilder(URI.create(servers.get(server - 1) + "/v1/agent/leave"))
                .PUT(HttpRequest.BodyPublishers.noBody()), Duration.ofSeconds(90)); // a leader's leave hands over first
        return answer.status + " " + answer.outcome;
    }

    /**
     * Waits (up to {@code deadlineSeconds}) until every server answers the whole store, stale, the same; records that
     * state's digest per server; then reads every key used, consistently, into the history.
     */
    /**
     * What one server says of itself at the end: its Raft state (from {@code /v1/agent/self}), and its {@code ?stale}
     * store with the query meta headers that say whether the store can be trusted.
     */
    private record ServerEnd(String id, String name, String state, String term, String last, String commit, String applied,
                             String store, String knownLeader, String lastContact) {
        String describe(String membership) {
            return String.join(" ", "name=" + name, "id=" + id, "membership=" + membership, "state=" + state, "term=" + term,
                    "last=" + last, "commit=" + commit, "applied=" + applied, "knownLeader=" + knownLeader,
                    "lastContact=" + lastContact + "ms");
        }
    }

    /** The servers' ends as last seen, the final configuration, and what is wrong with them ({@code null}: sound). */
    private record EndSeen(List<ServerEnd> servers, Map<String, String> members, String problem) {
    }

    private ServerEnd serverEnd(String server) {
        Answer self = call(HttpRequest.newBuilder(URI.create(server + "/v1/agent/self")).GET());
        Answer read = call(HttpRequest.newBuilder(URI.create(server + "/v1/kv/jepsen/?recurse&stale")).GET());
        boolean selfOk = self.outcome.equals("ok") && self.status == 200;
        boolean readOk = read.outcome.equals("ok") && (read.status == 200 || read.status == 404);
        return new ServerEnd(selfOk ? field(self.body, "\"NodeID\"\\s*:\\s*\"([^\"]*)\"") : null,
                selfOk ? field(self.body, "\"NodeName\"\\s*:\\s*\"([^\"]*)\"") : null,
                selfOk ? field(self.body, "\"state\"\\s*:\\s*\"([^\"]*)\"") : "unreachable",
                selfOk ? field(self.body, "\"term\"\\s*:\\s*\"([^\"]*)\"") : "?",
                selfOk ? field(self.body, "\"last_log_index\"\\s*:\\s*\"([^\"]*)\"") : "?",
                selfOk ? field(self.body, "\"commit_index\"\\s*:\\s*\"([^\"]*)\"") : "?",
                selfOk ? field(self.body, "\"applied_index\"\\s*:\\s*\"([^\"]*)\"") : "?",
                readOk ? digest(read.status + " " + read.body) : null, read.knownLeader, read.lastContact);
    }

    /**
     * The final configuration, as the leader holds it: node ID to "voter" or "nonvoter" ({@code null} while no server
     * leads, or the leader does not answer). The leader is the server that says so with the highest term.
     */
    private Map<String, String> finalConfiguration(List<ServerEnd> ends) {
        int leader = -1;
        for (int i = 0; i < ends.size(); i++) {
            ServerEnd end = ends.get(i);
            if ("Leader".equals(end.state()) && (leader < 0 || Long.parseLong(end.term()) > Long.parseLong(ends.get(leader).term()))) {
                leader = i;
            }
        }
        if (leader < 0) {
            return null;
        }
        Answer answer = call(HttpRequest.newBuilder(URI.create(servers.get(leader) + "/v1/operator/raft/configuration?stale")).GET());
        if (!answer.outcome.equals("ok") || answer.status != 200) {
            return null;
        }
        Map<String, String> members = new java.util.TreeMap<>();
        Matcher server = Pattern.compile("\\{[^{}]*\"ID\"\\s*:\\s*\"([^\"]*)\"[^{}]*\\}").matcher(answer.body);
        while (server.find()) {
            members.put(server.group(1), server.group().matches("(?s).*\"Voter\"\\s*:\\s*true.*") ? "voter" : "nonvoter");
        }
        return members;
    }

    /**
     * Waits until the end is sound, then records it: every server in the final configuration holds the same store, and
     * every server outside it answers {@code ?stale} reads with {@code X-Consul-KnownLeader: false} (its store is no
     * member's, and it must say so). Records a {@code server} line per server (membership, Raft state, indexes, the query
     * meta headers and the store's digest) and a {@code state} line per server; then reads every key used (consistent).
     */
    private String finish(long deadlineSeconds) throws Exception {
        EndSeen[] seen = {null};
        Poll.within(Duration.ofSeconds(deadlineSeconds), Duration.ofMillis(200), () -> {
            List<ServerEnd> servers = this.servers.stream().map(this::serverEnd).toList();
            Map<String, String> members = finalConfiguration(servers);
            seen[0] = new EndSeen(servers, members, unsound(servers, members));
            return seen[0].problem() == null;
        });
        List<ServerEnd> ends = seen[0].servers();
        Map<String, String> members = seen[0].members();
        String problem = seen[0].problem();
        for (int i = 0; i < servers.size(); i++) {
            ServerEnd server = ends.get(i);
            String membership = members == null || server.id() == null ? "unknown" : members.getOrDefault(server.id(), "none");
            record(String.join("\t", "server", Integer.toString(i + 1), text(server.describe(membership)),
                    server.store() == null ? "unreachable" : server.store()));
            record(String.join("\t", "state", Integer.toString(i + 1), server.store() == null ? "unreachable" : server.store()));
        }
        long readsEnd = System.nanoTime() + 60_000_000_000L; // all the final reads: at most a minute
        for (String key : List.copyOf(used)) {
            boolean read = false;
            for (int attempt = 0; attempt < 20 && !read && System.nanoTime() < readsEnd; attempt++) {
                String base = servers.get(attempt % servers.size()) + "/v1/kv/" + key + "?raw&consistent";
                long invoked = System.nanoTime();
                Answer answer = call(HttpRequest.newBuilder(URI.create(base)).GET());
                long returned = System.nanoTime();
                if (answer.outcome.equals("ok") && (answer.status == 200 || answer.status == 404)) {
                    op(0, "GET", key, null, null, invoked, returned, answer.status == 404 ? "null" : answer.body, "ok", 0, "final");
                    read = true;
                } else {
                    Thread.sleep(250); // a retry's pause, each attempt on the next server: a bounded number, not a wait
                }
            }
            if (!read) {
                record(String.join("\t", "unread", key));
            }
        }
        history.flush();
        return problem == null ? "identical" : "unsound: " + problem;
    }

    /** What is wrong with the end, or {@code null}: no leader, a member's store that differs, a non-member that claims a leader. */
    private static String unsound(List<ServerEnd> ends, Map<String, String> members) {
        if (members == null) {
            return "no server leads, or the leader does not give its configuration";
        }
        java.util.Set<String> memberStores = new java.util.LinkedHashSet<>();
        for (int i = 0; i < ends.size(); i++) {
            ServerEnd server = ends.get(i);
            if (server.id() == null || server.store() == null) {
                return "s" + (i + 1) + " does not answer";
            }
            if (members.containsKey(server.id())) {
                memberStores.add(server.store());
            } else if (!"false".equals(server.knownLeader())) {
                return "s" + (i + 1) + " (" + server.name() + ") is outside the configuration yet answers ?stale with"
                        + " X-Consul-KnownLeader: " + server.knownLeader();
            }
        }
        if (memberStores.size() != 1) {
            return "the servers of the final configuration hold " + memberStores.size() + " different stores";
        }
        return null;
    }

    private static String digest(String body) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
