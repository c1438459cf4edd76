package io.conclave.cli;

import io.conclave.engine.raft.config.Durations;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code conclave lock PREFIX COMMAND...}: Consul's {@code consul lock}. Takes a session (TTL {@link #SESSION_TTL},
 * renewed every half of it) and the lock {@code PREFIX/.lock} — or, with {@code -n N > 1}, one of N places of a
 * semaphore (Consul's layout: a contender key {@code PREFIX/<session>} held by the session, and {@code PREFIX/.lock}
 * holding {@code {"Limit": N, "Holders": {...}}} updated by check-and-set) — waiting by blocking queries until it has
 * it; then runs COMMAND through {@code /bin/sh -c} (its words joined by spaces, as Consul's), watches the lock while it
 * runs, and stops it (SIGTERM, then SIGKILL after 5 s) as soon as the lock is lost. Releases everything at the end.
 * Exit code: the child's; 1 when the lock was lost or could not be taken; 2 for bad usage.
 */
@Command(name = "lock", description = "Runs a command while holding a lock (or one of -n places of a semaphore) under PREFIX.",
        footer = {"  conclave lock service/cron ./run-nightly-job.sh", "  conclave lock -n 3 -timeout 30s service/workers ./worker.sh"})
final class LockCommand extends HttpCommand implements Callable<Integer> {

    static final Duration SESSION_TTL = Duration.ofSeconds(15);
    static final String WAIT = "30s";

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "-n", paramLabel = "N", description = "How many may hold it at once (a semaphore when above 1). Default 1.")
    int limit = 1;

    @Option(names = "-name", description = "The session's name. Default: \"Conclave lock\".")
    String name = "Conclave lock";

    @Option(names = "-timeout", description = "Give up when not acquired within this long (e.g. 30s); 0: wait for ever.")
    String timeout = "0";

    @Parameters(index = "0", paramLabel = "PREFIX", description = "The key prefix of the lock (PREFIX/.lock) or semaphore.")
    String prefix;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "COMMAND", description = "What to run while holding it, through /bin/sh -c.")
    List<String> command;

    private volatile String session;
    private final AtomicBoolean lost = new AtomicBoolean();

    @Override
    public Integer call() throws Exception {
        if (limit < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-n must be at least 1");
        }
        Duration giveUpAfter;
        try {
            giveUpAfter = Durations.parse(timeout);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), "-timeout: " + e.getMessage());
        }
        String base = prefix.endsWith("/") ? prefix.substring(0, prefix.length() - 1) : prefix;
        Answer created = exchange("PUT", "/v1/session/create", new JsonObject().put("Name", name).put("TTL", SESSION_TTL.toSeconds() + "s")
                .put("Behavior", "release").encode(), TIMEOUT);
        if (!created.ok()) {
            System.err.println("Error: " + created.error());
            return 1;
        }
        session = new JsonObject(created.body()).getString("ID");
        Thread renewer = new Thread(this::renewUntilLost, "conclave-lock-renew");
        renewer.setDaemon(true);
        renewer.start();
        try {
            long deadline = giveUpAfter.isZero() ? Long.MAX_VALUE : System.nanoTime() + giveUpAfter.toNanos();
            if (!(limit == 1 ? acquireLock(base, deadline) : acquireSemaphore(base, deadline))) {
                return 1;
            }
            return runHoldingIt(base);
        } finally {
            lost.set(true); // stops the renewer
            if (limit > 1) {
                leaveSemaphore(base);
            } else {
                exchange("PUT", "/v1/kv/" + base + "/.lock?release=" + session, (String) null, TIMEOUT);
            }
            exchange("PUT", "/v1/session/destroy/" + session, (String) null, TIMEOUT);
        }
    }

    private void renewUntilLost() {
        while (!lost.get()) {
            try {
                Thread.sleep(SESSION_TTL.toMillis() / 2);
            } catch (InterruptedException e) {
                return;
            }
            if (lost.get()) {
                return;
            }
            Answer renewed = exchange("PUT", "/v1/session/renew/" + session, (String) null, TIMEOUT);
            if (renewed.status() == 404) {
                System.err.println("Lock lost: the session " + session + " is gone");
                lost.set(true);
            }
        }
    }

    /** Waits, by blocking queries on the key, until the session holds {@code base/.lock}. */
    private boolean acquireLock(String base, long deadline) throws InterruptedException {
        String key = "/v1/kv/" + base + "/.lock";
        long index = 0;
        while (System.nanoTime() < deadline && !lost.get()) {
            Answer acquired = exchange("PUT", key + "?acquire=" + session, new byte[0], null, TIMEOUT);
            if (acquired.ok() && acquired.body().strip().equals("true")) {
                return true;
            }
            if (!acquired.ok() && acquired.status() != 500) {
                System.err.println("Error: " + acquired.error());
                return false;
            }
            Blocked read = block(key, index);
            index = read.index();
            boolean free = read.answer().status() == 200
                    && new JsonArray(read.answer().body()).getJsonObject(0).getString("Session") == null;
            if (free || !acquired.ok()) {
                // free but refused: its lock-delay runs (no change will wake us), or no leader now: try again shortly
                Thread.sleep(500);
            }
        }
        if (lost.get()) {
            System.err.println("Error: the session was lost while waiting for the lock");
            return false;
        }
        System.err.println("Error: the lock " + base + "/.lock was not acquired within " + timeout);
        return false;
    }

    /** Consul's semaphore: a contender key held by the session, and a place among the holders in {@code .lock}. */
    private boolean acquireSemaphore(String base, long deadline) {
        Answer contender = exchange("PUT", "/v1/kv/" + base + "/" + session + "?acquire=" + session, new byte[0], null, TIMEOUT);
        if (!contender.ok() || !contender.body().strip().equals("true")) {
            System.err.println("Error: cannot register as a contender: " + contender.error());
            return false;
        }
        long index = 0;
        while (System.nanoTime() < deadline) {
            Answer listed = exchange("GET", "/v1/kv/" + base + "/?recurse", (String) null, TIMEOUT);
            if (!listed.ok() && listed.status() != 404) {
                System.err.println("Error: " + listed.error());
                return false;
            }
            Semaphore state = Semaphore.read(listed, base);
            if (state.limit() != 0 && state.limit() != limit) {
                System.err.println("Error: semaphore limit conflict (lock: " + state.limit() + ", local: " + limit + ")");
                return false;
            }
            if (state.holders().contains(session)) {
                return true;
            }
            if (state.holders().size() < limit) {
                JsonArray holders = new JsonArray(new java.util.ArrayList<Object>(state.holders()));
                holders.add(session);
                String body = new JsonObject().put("Limit", limit).put("Holders", holders).encode();
                Answer placed = exchange("PUT", "/v1/kv/" + base + "/.lock?cas=" + state.lockModifyIndex(),
                        body.getBytes(StandardCharsets.UTF_8), null, TIMEOUT);
                if (placed.ok() && placed.body().strip().equals("true")) {
                    return true;
                }
                continue; // someone else changed it first: read again at once
            }
            index = block("/v1/kv/" + base + "/?recurse", index).index();
        }
        System.err.println("Error: no place of the semaphore " + base + " within " + timeout);
        return false;
    }

    /**
     * The semaphore as the store holds it: its limit, {@code .lock}'s ModifyIndex (0 when absent), and the holders
     * whose contender key still has its session (a holder whose session went away is dropped, as Consul's).
     */
    record Semaphore(int limit, long lockModifyIndex, java.util.Set<String> holders) {
        static Semaphore read(Answer listed, String base) {
            java.util.Set<String> live = new java.util.HashSet<>();
            JsonObject lock = null;
            if (listed.status() == 200) {
                for (Object item : new JsonArray(listed.body())) {
                    JsonObject entry = (JsonObject) item;
                    String key = entry.getString("Key");
                    if (key.equals(base + "/.lock")) {
                        lock = entry;
                    } else if (entry.getString("Session") != null && key.equals(base + "/" + entry.getString("Session"))) {
                        live.add(entry.getString("Session"));
                    }
                }
            }
            if (lock == null) {
                return new Semaphore(0, 0, java.util.Set.of());
            }
            JsonObject content = lock.getString("Value") == null ? new JsonObject()
                    : new JsonObject(new String(Base64.getDecoder().decode(lock.getString("Value")), StandardCharsets.UTF_8));
            java.util.Set<String> holders = new java.util.LinkedHashSet<>();
            for (Object holder : content.getJsonArray("Holders", new JsonArray())) {
                if (live.contains(holder)) {
                    holders.add((String) holder);
                }
            }
            return new Semaphore(content.getInteger("Limit", 0), lock.getLong("ModifyIndex"), holders);
        }
    }

    private void leaveSemaphore(String base) {
        for (int attempt = 0; attempt < 20; attempt++) {
            Answer listed = exchange("GET", "/v1/kv/" + base + "/?recurse", (String) null, TIMEOUT);
            Semaphore state = Semaphore.read(listed, base);
            if (!state.holders().contains(session)) {
                break;
            }
            JsonArray holders = new JsonArray();
            state.holders().stream().filter(holder -> !holder.equals(session)).forEach(holders::add);
            String body = new JsonObject().put("Limit", limit).put("Holders", holders).encode();
            Answer left = exchange("PUT", "/v1/kv/" + base + "/.lock?cas=" + state.lockModifyIndex(), body.getBytes(StandardCharsets.UTF_8),
                    null, TIMEOUT);
            if (left.ok() && left.body().strip().equals("true")) {
                break;
            }
        }
        exchange("DELETE", "/v1/kv/" + base + "/" + session, (String) null, TIMEOUT);
    }

    /** Runs the child while watching the lock; stops it when the lock is lost. */
    private int runHoldingIt(String base) throws Exception {
        Process child = new ProcessBuilder("/bin/sh", "-c", String.join(" ", command)).inheritIO().start();
        Thread watcher = new Thread(() -> watch(base), "conclave-lock-watch");
        watcher.setDaemon(true);
        watcher.start();
        while (!child.waitFor(100, TimeUnit.MILLISECONDS)) {
            if (lost.get()) {
                System.err.println("Lock lost, stopping the child (pid " + child.pid() + ")");
                child.destroy();
                if (!child.waitFor(5, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                    child.waitFor();
                }
                return 1;
            }
        }
        return child.exitValue();
    }

    /** Blocking queries on what we hold: the lock is lost once our session no longer holds it. */
    private void watch(String base) {
        long index = 0;
        String path = limit == 1 ? "/v1/kv/" + base + "/.lock" : "/v1/kv/" + base + "/?recurse";
        while (!lost.get()) {
            Blocked read = block(path, index);
            Answer watched = read.answer();
            if (watched.unreachable() != null) {
                continue; // another server may answer; the session's TTL decides
            }
            boolean held;
            if (limit == 1) {
                held = watched.status() == 200 && session.equals(new JsonArray(watched.body()).getJsonObject(0).getString("Session"));
            } else {
                held = Semaphore.read(watched, base).holders().contains(session);
            }
            if (!held && (watched.status() == 200 || watched.status() == 404)) {
                lost.set(true);
                return;
            }
            index = read.index();
        }
    }

    /** A blocking read and the index it answered with (the one given when the agent could not be asked). */
    private Blocked block(String path, long index) {
        // an index that went back (a reaped tombstone) starts the wait again from it, as Consul's clients do
        Blocked blocked = blockingGet(path, index, WAIT, Duration.ofMinutes(2));
        if (blocked.answer().unreachable() != null && !Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(500); // not reachable now: try again shortly, the session's TTL decides
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return blocked;
    }
}
