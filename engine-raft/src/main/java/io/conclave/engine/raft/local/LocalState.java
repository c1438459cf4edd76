package io.conclave.engine.raft.local;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What one agent holds: its service instances and checks, each check's status and output, and a counter that moves at
 * every change ({@link #index}, this agent's {@code X-Consul-Index}). Listeners hear of every change (anti-entropy
 * syncs it to the catalog).
 *
 * <p>Threading: changes are made by {@link LocalAgent} on its context, one at a time; reads come from any thread and get
 * copies. Listeners are called on the changing thread, after the change, and must not block.
 */
public final class LocalState {

    /** A service instance as held: its definition, the token it was registered with, whether the configuration file holds it. */
    public record Service(ServiceDefinition definition, Optional<String> token, boolean fromConfig) {
    }

    /**
     * A check as held: its definition, its token, whether the configuration holds it, its status and output now, and since
     * when (monotonic nanoseconds) it has had that status.
     */
    public record Check(CheckDefinition definition, Optional<String> token, boolean fromConfig, CheckStatus status, String output,
                        long statusSinceNanos) {
    }

    private final Map<String, Service> services = new LinkedHashMap<>();
    private final Map<String, Check> checks = new LinkedHashMap<>();
    private final List<Runnable> listeners = new CopyOnWriteArrayList<>();
    private long index = 1;

    /** Called after every change. */
    public void onChange(Runnable listener) {
        listeners.add(listener);
    }

    public synchronized Map<String, Service> services() {
        return new LinkedHashMap<>(services);
    }

    public synchronized Map<String, Check> checks() {
        return new LinkedHashMap<>(checks);
    }

    public synchronized Optional<Service> service(String id) {
        return Optional.ofNullable(services.get(id));
    }

    public synchronized Optional<Check> check(String id) {
        return Optional.ofNullable(checks.get(id));
    }

    /** The checks of service instance {@code serviceId}. */
    public synchronized List<Check> checksOf(String serviceId) {
        List<Check> of = new ArrayList<>();
        for (Check check : checks.values()) {
            if (check.definition().serviceId().equals(serviceId)) {
                of.add(check);
            }
        }
        return of;
    }

    /** Moves at every change: what a client of this agent's endpoints compares. */
    public synchronized long index() {
        return index;
    }

    void putService(Service service) {
        synchronized (this) {
            services.put(service.definition().id(), service);
            index++;
        }
        changed();
    }

    void removeService(String id) {
        synchronized (this) {
            if (services.remove(id) == null) {
                return;
            }
            index++;
        }
        changed();
    }

    void putCheck(Check check) {
        synchronized (this) {
            checks.put(check.definition().id(), check);
            index++;
        }
        changed();
    }

    void removeCheck(String id) {
        synchronized (this) {
            if (checks.remove(id) == null) {
                return;
            }
            index++;
        }
        changed();
    }

    /** Sets a check's status and output; whether anything changed (an unknown check: nothing). */
    boolean setStatus(String id, CheckStatus status, String output, long nowNanos) {
        synchronized (this) {
            Check check = checks.get(id);
            if (check == null || (check.status() == status && check.output().equals(output))) {
                return false;
            }
            long since = check.status() == status ? check.statusSinceNanos() : nowNanos;
            checks.put(id, new Check(check.definition(), check.token(), check.fromConfig(), status, output, since));
            index++;
        }
        changed();
        return true;
    }

    private void changed() {
        for (Runnable listener : listeners) {
            listener.run();
        }
    }
}
