package io.conclave.engine.raft.local;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.WorkerExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An agent's own services and checks, as Consul's agent keeps them ({@code agent/local}): registered through its HTTP
 * API or its configuration file, kept in its data folder ({@link LocalStore}: a registration is durable before it is
 * answered), run here ({@link CheckRunner}), and synced to the catalog by anti-entropy, which listens to
 * {@link #state()}. A service whose check has {@code DeregisterCriticalServiceAfter} and stayed critical that long is
 * deregistered, as Consul's reaper does ({@link #REAP_INTERVAL}).
 *
 * <p>Threading: every operation is queued and runs in order on the agent's local context, its file writes on a
 * worker of their own; methods may be called from any thread and never block. Futures complete on the local context.
 */
public final class LocalAgent {

    private static final Logger LOG = LoggerFactory.getLogger("conclave.agent");

    /** How often the reaper looks for services critical past their {@code DeregisterCriticalServiceAfter} (Consul's). */
    public static final Duration REAP_INTERVAL = Duration.ofSeconds(30);
    /** Consul's name and default notes of a service's maintenance check. */
    static final String MAINTENANCE_PREFIX = "_service_maintenance:";
    static final String MAINTENANCE_NAME = "Service Maintenance Mode";
    static final String MAINTENANCE_DEFAULT_REASON = "Maintenance mode is enabled for this service, but no reason was provided."
            + " This is a default message.";

    /** An ID this agent holds no service or check under. */
    public static final class NotFoundException extends RuntimeException {
        public NotFoundException(String message) {
            super(message, null, false, false);
        }
    }

    /** A request this check cannot take (a TTL report on a check that is not a TTL check). */
    public static final class WrongKindException extends RuntimeException {
        public WrongKindException(String message) {
            super(message, null, false, false);
        }
    }

    private final Vertx vertx;
    private final Context context;
    private final Optional<LocalStore> store;
    private final WorkerExecutor files;
    private final LocalState state = new LocalState();
    private final Map<String, CheckRunner> runners = new HashMap<>();
    private final CheckRunner.Clients clients;
    private final Random random = new Random();
    private final LongSupplier nanoClock;
    private Future<Void> tail = Future.succeededFuture();
    private long reaper = -1;
    private boolean closed;

    /**
     * @param store     where registrations are kept ({@code data_dir}); empty: nowhere (they last as long as the process)
     * @param nanoClock monotonic nanoseconds (the reaper's clock; {@link System#nanoTime} outside tests)
     */
    public LocalAgent(Vertx vertx, Optional<LocalStore> store, LongSupplier nanoClock) {
        this.vertx = vertx;
        this.context = vertx.getOrCreateContext();
        this.store = store;
        this.files = vertx.createSharedWorkerExecutor("conclave-local-state", 1);
        this.clients = new CheckRunner.Clients(vertx);
        this.nanoClock = nanoClock;
    }

    public LocalState state() {
        return state;
    }

    /**
     * The context every operation runs on. Anti-entropy runs here too, so that a sync never sees half an operation (a
     * service put and its checks not yet): the changes of one operation are made in one task on this context.
     */
    public Context context() {
        return context;
    }

    // ---------------------------------------------------------------- start and stop

    /**
     * Registers what the configuration file holds (not written to the folder: the file is read again at each start, and
     * wins over a kept registration of the same ID), then what the folder holds, and starts their checks and the reaper.
     * Fails, registering nothing, when a kept file is damaged ({@link LocalStore.DamagedException}).
     */
    public Future<Void> start(List<Definitions.Registration> configServices, List<CheckDefinition> configChecks) {
        return serially(() -> onFiles(() -> store.map(LocalStore::load).orElse(new LocalStore.Loaded(List.of(), List.of())))
                .map(loaded -> {
                    for (Definitions.Registration registration : configServices) {
                        putService(registration.service(), registration.token(), true);
                        registration.checks().forEach(check -> putCheck(check, registration.token(), true));
                    }
                    for (CheckDefinition check : configChecks) {
                        putCheck(check, Optional.empty(), true);
                    }
                    int kept = 0;
                    for (LocalStore.StoredService service : loaded.services()) {
                        if (state.service(service.service().id()).isEmpty()) {
                            putService(service.service(), service.token(), false);
                            kept++;
                        }
                    }
                    for (LocalStore.StoredCheck check : loaded.checks()) {
                        boolean serviceHeld = !check.check().ofService() || state.service(check.check().serviceId()).isPresent();
                        if (state.check(check.check().id()).isEmpty() && serviceHeld) {
                            putCheck(check.check(), check.token(), false);
                            kept++;
                        } else if (!serviceHeld) {
                            LOG.warn("dropping the kept check {}: its service {} is no longer held (a removal a crash interrupted)",
                                    check.check().id(), check.check().serviceId());
                        }
                    }
                    if (!configServices.isEmpty() || !configChecks.isEmpty() || kept > 0) {
                        LOG.info("holding {} services and {} checks ({} from the configuration file, {} kept in the data folder)",
                                state.services().size(), state.checks().size(), configServices.size() + configChecks.size(), kept);
                    }
                    reaper = vertx.setPeriodic(REAP_INTERVAL.toMillis(), id -> reap(nanoClock.getAsLong()));
                    return null;
                }));
    }

    /** Stops every check and the reaper; what is held stays in the folder. */
    public Future<Void> close() {
        Promise<Void> closed = Promise.promise();
        context.runOnContext(ignored -> {
            if (this.closed) {
                closed.complete();
                return;
            }
            this.closed = true;
            if (reaper >= 0) {
                vertx.cancelTimer(reaper);
            }
            runners.values().forEach(CheckRunner::stop);
            runners.clear();
            clients.close();
            files.close();
            closed.complete();
        });
        return closed.future();
    }

    // ---------------------------------------------------------------- services

    /**
     * Registers (or replaces) a service instance with its checks, durably. Checks of the instance not in the new
     * definition are kept, as Consul's, unless {@code replaceExistingChecks}.
     */
    public Future<Void> registerService(Definitions.Registration registration, boolean replaceExistingChecks) {
        ServiceDefinition service = registration.service();
        return serially(() -> {
            List<String> dropped = new ArrayList<>();
            if (replaceExistingChecks) {
                for (LocalState.Check check : state.checksOf(service.id())) {
                    if (registration.checks().stream().noneMatch(next -> next.id().equals(check.definition().id()))) {
                        dropped.add(check.definition().id());
                    }
                }
            }
            for (CheckDefinition check : registration.checks()) {
                Optional<LocalState.Check> existing = state.check(check.id());
                if (existing.isPresent() && !existing.get().definition().serviceId().equals(service.id())) {
                    return Future.failedFuture(new InvalidDefinitionException("checks", "check ID \"" + check.id() + "\" is held by "
                            + (existing.get().definition().ofService() ? "service " + existing.get().definition().serviceId() : "the node")));
                }
            }
            return onFiles(() -> {
                store.ifPresent(files -> {
                    files.saveService(service, registration.token());
                    registration.checks().forEach(check -> files.saveCheck(check, registration.token()));
                    dropped.forEach(files::deleteCheck);
                });
                return null;
            }).map(ignored -> {
                dropped.forEach(this::dropCheck);
                putService(service, registration.token(), false);
                registration.checks().forEach(check -> putCheck(check, registration.token(), false));
                return null;
            });
        });
    }

    /** Deregisters a service instance and its checks, durably; fails with {@link NotFoundException} for an unknown ID. */
    public Future<Void> deregisterService(String id) {
        return serially(() -> {
            if (state.service(id).isEmpty()) {
                return Future.failedFuture(new NotFoundException("Unknown service ID \"" + id + "\". Ensure that the service ID is passed,"
                        + " not the service name."));
            }
            List<String> checkIds = state.checksOf(id).stream().map(check -> check.definition().id()).toList();
            return onFiles(() -> {
                store.ifPresent(files -> {
                    checkIds.forEach(files::deleteCheck); // the checks first: a crash between leaves no check without its service
                    files.deleteService(id);
                });
                return null;
            }).map(ignored -> {
                checkIds.forEach(this::dropCheck);
                state.removeService(id);
                return null;
            });
        });
    }

    /** Puts a service instance in maintenance (a critical check of its own, Consul's) or takes it out. */
    public Future<Void> maintenance(String serviceId, boolean enable, String reason) {
        String checkId = MAINTENANCE_PREFIX + serviceId;
        return serially(() -> {
            if (state.service(serviceId).isEmpty()) {
                return Future.failedFuture(new NotFoundException("No service registered with ID \"" + serviceId + "\""));
            }
            if (!enable) {
                if (state.check(checkId).isEmpty()) {
                    return Future.succeededFuture();
                }
                return onFiles(() -> {
                    store.ifPresent(files -> files.deleteCheck(checkId));
                    return null;
                }).map(ignored -> {
                    dropCheck(checkId);
                    return null;
                });
            }
            CheckDefinition check = new CheckDefinition(checkId, MAINTENANCE_NAME, reason.isEmpty() ? MAINTENANCE_DEFAULT_REASON : reason,
                    serviceId, Optional.of(CheckStatus.CRITICAL), CheckDefinition.Kind.MAINTENANCE, Duration.ZERO, "", "GET", Map.of(), "",
                    false, "", Duration.ZERO, Duration.ZERO, Duration.ZERO, 0, 0, 0);
            return onFiles(() -> {
                store.ifPresent(files -> files.saveCheck(check, Optional.empty()));
                return null;
            }).map(ignored -> {
                putCheck(check, Optional.empty(), false);
                return null;
            });
        });
    }

    // ---------------------------------------------------------------- checks

    /** Registers (or replaces) a check, durably; a check of a service this agent does not hold is refused. */
    public Future<Void> registerCheck(CheckDefinition check, Optional<String> token) {
        return serially(() -> {
            if (check.ofService() && state.service(check.serviceId()).isEmpty()) {
                return Future.failedFuture(new InvalidDefinitionException("ServiceID", "ServiceID \"" + check.serviceId() + "\" does not exist"));
            }
            return onFiles(() -> {
                store.ifPresent(files -> files.saveCheck(check, token));
                return null;
            }).map(ignored -> {
                putCheck(check, token, false);
                return null;
            });
        });
    }

    /** Deregisters a check, durably; fails with {@link NotFoundException} for an unknown ID. */
    public Future<Void> deregisterCheck(String id) {
        return serially(() -> {
            if (state.check(id).isEmpty()) {
                return Future.failedFuture(unknownCheck(id));
            }
            return onFiles(() -> {
                store.ifPresent(files -> files.deleteCheck(id));
                return null;
            }).map(ignored -> {
                dropCheck(id);
                return null;
            });
        });
    }

    /** A TTL check's report ({@code pass}, {@code warn}, {@code fail}, {@code update}): its status and output, its TTL restarted. */
    public Future<Void> reportTtl(String id, CheckStatus status, String output) {
        return serially(() -> {
            Optional<LocalState.Check> check = state.check(id);
            if (check.isEmpty()) {
                return Future.failedFuture(unknownCheck(id));
            }
            if (check.get().definition().kind() != CheckDefinition.Kind.TTL) {
                return Future.failedFuture(new WrongKindException("CheckID \"" + id + "\" does not have associated TTL"));
            }
            String kept = output.length() > CheckRunner.MAX_OUTPUT_BYTES
                    ? output.substring(0, CheckRunner.MAX_OUTPUT_BYTES) + " ... (captured " + CheckRunner.MAX_OUTPUT_BYTES + " of "
                    + output.length() + " bytes)" : output;
            state.setStatus(id, status, kept, nanoClock.getAsLong());
            CheckRunner runner = runners.get(id);
            if (runner != null) {
                runner.ttlReported(kept);
            }
            return Future.succeededFuture();
        });
    }

    private static NotFoundException unknownCheck(String id) {
        return new NotFoundException("Unknown check ID \"" + id + "\". Ensure that the check ID is passed, not the check name.");
    }

    // ---------------------------------------------------------------- the reaper

    /**
     * Deregisters every service instance with a check critical for longer than its {@code DeregisterCriticalServiceAfter},
     * as Consul's reaper does; {@code nowNanos} is the reaper's clock.
     */
    public Future<Void> reap(long nowNanos) {
        List<Future<Void>> removals = new ArrayList<>();
        java.util.Set<String> reaped = new java.util.HashSet<>();
        for (LocalState.Check check : state.checks().values()) {
            Duration after = check.definition().deregisterCriticalServiceAfter();
            String serviceId = check.definition().serviceId();
            if (after.isZero() || !check.definition().ofService() || check.status() != CheckStatus.CRITICAL || reaped.contains(serviceId)) {
                continue;
            }
            if (nowNanos - check.statusSinceNanos() > after.toNanos()) {
                reaped.add(serviceId);
                LOG.info("check {} has been critical for more than {}: deregistering service {}", check.definition().id(),
                        GoDurations.format(after), serviceId);
                removals.add(deregisterService(serviceId).recover(error -> Future.succeededFuture()));
            }
        }
        return Future.all(removals).mapEmpty();
    }

    // ---------------------------------------------------------------- on the local context

    private void putService(ServiceDefinition service, Optional<String> token, boolean fromConfig) {
        state.putService(new LocalState.Service(service, token, fromConfig));
    }

    private void putCheck(CheckDefinition check, Optional<String> token, boolean fromConfig) {
        CheckRunner previous = runners.remove(check.id());
        if (previous != null) {
            previous.stop();
        }
        Optional<LocalState.Check> held = state.check(check.id());
        // as its definition says; else a check registered again keeps its status (Consul's), a new one starts critical
        CheckStatus status = check.initialStatus().orElse(held.map(LocalState.Check::status).orElse(CheckStatus.CRITICAL));
        String output = held.map(LocalState.Check::output).orElse("");
        long since = held.filter(existing -> existing.status() == status).map(LocalState.Check::statusSinceNanos)
                .orElse(nanoClock.getAsLong());
        state.putCheck(new LocalState.Check(check, token, fromConfig, status, output, since));
        CheckRunner runner = new CheckRunner(vertx, context, check, clients, random,
                (id, reported, text) -> state.setStatus(id, reported, text, nanoClock.getAsLong()));
        runners.put(check.id(), runner);
        runner.start();
    }

    private void dropCheck(String id) {
        CheckRunner runner = runners.remove(id);
        if (runner != null) {
            runner.stop();
        }
        state.removeCheck(id);
    }

    /** Runs {@code operation} on the local context once every operation queued before it has completed. */
    private <T> Future<T> serially(Supplier<Future<T>> operation) {
        Promise<T> result = Promise.promise();
        context.runOnContext(ignored -> {
            Future<T> run = tail.transform(previous -> {
                try {
                    return operation.get();
                } catch (RuntimeException e) {
                    return Future.failedFuture(e);
                }
            });
            tail = run.transform(done -> Future.succeededFuture());
            run.onComplete(result);
        });
        return result.future();
    }

    /** Runs blocking file work on the local state's own worker, in order. */
    private <T> Future<T> onFiles(java.util.concurrent.Callable<T> work) {
        return files.executeBlocking(work, true);
    }
}
