package io.conclave.example.filemembership;

import io.conclave.api.PluginContext;
import io.conclave.api.membership.Member;
import io.conclave.api.membership.MemberStatus;
import io.conclave.api.membership.MemberTags;
import io.conclave.api.membership.Membership;
import io.conclave.api.membership.MembershipEvent;
import io.conclave.api.membership.MembershipSettings;
import io.vertx.core.Future;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * The servers listed in a file: one Raft address ({@code host:port}) per line, {@code #} starting a comment. The
 * file is read off the event loop (a Vert.x worker) when the membership starts and every 2 s after; a server added
 * to the file is reported {@code JOINED}, one taken out {@code REAPED}. Like the engine's static membership it has no
 * failure detection: every listed server is shown alive, and Raft's own contact times tell who answers. A file that
 * cannot be read, or a line that is not an address, keeps the last good list and is logged once.
 */
final class FileMembership implements Membership {

    private static final Pattern ADDRESS = Pattern.compile("[A-Za-z0-9.\\-]+:[0-9]{1,5}|\\[[0-9A-Fa-f:.]+\\]:[0-9]{1,5}");
    private static final long REREAD_MILLIS = 2_000;

    private final PluginContext context;
    private final Path file;
    private final List<Consumer<MembershipEvent>> listeners = new CopyOnWriteArrayList<>();
    private volatile Member local;
    private volatile Map<String, Member> servers = Map.of();
    private volatile String lastProblem;
    private long timer = -1;

    FileMembership(PluginContext context, MembershipSettings settings, Path file) {
        this.context = context;
        this.file = file;
        this.local = new Member(context.node().nodeName(), settings.bindAddress(), settings.port(), settings.localTags(),
                MemberStatus.ALIVE);
    }

    @Override
    public Future<Void> start() {
        return reread().compose(first -> {
            if (first != null) {
                return Future.failedFuture(new IllegalStateException("cannot use " + file + ": " + first));
            }
            context.context().runOnContext(v -> timer = context.vertx().setPeriodic(REREAD_MILLIS, id -> reread()));
            return Future.succeededFuture();
        });
    }

    /** Reads the file on a worker, then, on the plugin's context, reports what changed; completes with the problem, or null. */
    Future<String> reread() {
        return context.vertx().<List<String>>executeBlocking(() -> Files.readAllLines(file, StandardCharsets.UTF_8), false)
                .transform(read -> {
                    String problem = read.failed() ? "cannot read it: " + read.cause() : null;
                    Map<String, Member> next = new LinkedHashMap<>();
                    if (problem == null) {
                        int number = 0;
                        for (String line : read.result()) {
                            number++;
                            String address = line.replaceFirst("#.*", "").strip();
                            if (address.isEmpty()) {
                                continue;
                            }
                            if (!ADDRESS.matcher(address).matches()) {
                                problem = "line " + number + " is not host:port: '" + address + "'";
                                break;
                            }
                            next.put(address, server(address));
                        }
                    }
                    if (problem != null) {
                        if (!problem.equals(lastProblem)) {
                            System.err.println("file membership: " + file + ": " + problem + "; the last good list is kept");
                        }
                        lastProblem = problem;
                        return Future.succeededFuture(problem);
                    }
                    lastProblem = null;
                    Map<String, Member> before = servers;
                    servers = Map.copyOf(next);
                    next.forEach((address, member) -> {
                        if (!before.containsKey(address)) {
                            tell(new MembershipEvent(MembershipEvent.Type.JOINED, member));
                        }
                    });
                    before.forEach((address, member) -> {
                        if (!next.containsKey(address)) {
                            tell(new MembershipEvent(MembershipEvent.Type.REAPED, member));
                        }
                    });
                    return Future.succeededFuture((String) null);
                });
    }

    private Member server(String address) {
        int colon = address.lastIndexOf(':');
        String host = address.substring(0, colon).replace("[", "").replace("]", "");
        return new Member(address, host, Integer.parseInt(address.substring(colon + 1)), Map.of(MemberTags.ROLE, MemberTags.ROLE_SERVER,
                MemberTags.RAFT_ADDRESS, address, MemberTags.DATACENTER, context.node().datacenter()), MemberStatus.ALIVE);
    }

    private void tell(MembershipEvent event) {
        for (Consumer<MembershipEvent> listener : listeners) {
            listener.accept(event);
        }
    }

    @Override
    public Future<Integer> join(List<String> addresses) {
        return Future.failedFuture(new IllegalStateException("file membership does not join: add the server to " + file));
    }

    @Override
    public Future<Void> leave(Duration timeout) {
        Member left = new Member(local.name(), local.address(), local.port(), local.tags(), MemberStatus.LEFT);
        local = left;
        return Future.future(promise -> context.context().runOnContext(v -> {
            tell(new MembershipEvent(MembershipEvent.Type.LEFT, left));
            promise.complete();
        }));
    }

    @Override
    public Future<Void> stop() {
        return Future.future(promise -> context.context().runOnContext(v -> {
            if (timer >= 0) {
                context.vertx().cancelTimer(timer);
            }
            listeners.clear();
            promise.complete();
        }));
    }

    @Override
    public List<Member> members() {
        List<Member> members = new ArrayList<>();
        members.add(local);
        String own = local.tag(MemberTags.RAFT_ADDRESS);
        servers.forEach((address, member) -> {
            if (!address.equals(own)) {
                members.add(member);
            }
        });
        return members;
    }

    @Override
    public Member local() {
        return local;
    }

    @Override
    public AutoCloseable subscribe(Consumer<MembershipEvent> listener) {
        listeners.add(listener);
        return () -> listeners.remove(listener);
    }
}
