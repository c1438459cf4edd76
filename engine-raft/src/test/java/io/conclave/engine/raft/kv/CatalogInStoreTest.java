package io.conclave.engine.raft.kv;

import static io.conclave.engine.raft.kv.CatalogStateTest.apply;
import static io.conclave.engine.raft.kv.CatalogStateTest.check;
import static io.conclave.engine.raft.kv.CatalogStateTest.command;
import static io.conclave.engine.raft.kv.CatalogStateTest.register;
import static io.conclave.engine.raft.kv.CatalogStateTest.service;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.conclave.engine.raft.state.HeapStateStore;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The catalog kept in the state store ({@link KvTables#catalog}, {@link KvTables#catalogIndexes}): what a store reused
 * after a clean close, a follower's installed snapshot and a restore give back is the catalog the applies built, record
 * for record and index for index, after any sequence of registrations, check changes and deregistrations.
 */
class CatalogInStoreTest {

    private static final String[] NODES = {"n1", "N2", "n3", "web-node"};
    private static final String[] SERVICES = {"web", "db", "cache"};
    private static final String[] STATUSES = {"passing", "warning", "critical"};

    /** Seeded writes of every kind over a few nodes, services and checks; the last index applied. */
    private static long applyRandomWrites(KvStateMachine kv, long seed, int writes) {
        Random random = new Random(seed);
        long index = 10;
        for (int i = 0; i < writes; i++) {
            String node = NODES[random.nextInt(NODES.length)];
            String name = SERVICES[random.nextInt(SERVICES.length)];
            String serviceId = name + "-" + random.nextInt(3);
            byte[] command = switch (random.nextInt(6)) {
                case 0, 1, 2 -> command(register(node, service(serviceId, name, "v" + random.nextInt(2)),
                        check("service:" + serviceId, serviceId, STATUSES[random.nextInt(STATUSES.length)])));
                case 3 -> command(new CatalogDeregistration(node, serviceId, "", ""));
                case 4 -> command(new CatalogDeregistration(node, "", "service:" + serviceId, ""));
                default -> command(new CatalogDeregistration(node, "", "", ""));
            };
            apply(kv, ++index, command);
        }
        return index;
    }

    /** The whole catalog as a snapshot writes it: records with their indexes, and every result set's index. */
    private static byte[] bytes(Catalog catalog) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        DataOutputStream data = new DataOutputStream(out);
        catalog.writeTo(data);
        data.flush();
        return out.toByteArray();
    }

    @Test
    void a_store_reused_gives_back_the_catalog_the_applies_built_over_many_seeds() throws IOException {
        for (long seed = 1; seed <= 40; seed++) {
            HeapStateStore store = new HeapStateStore();
            KvStateMachine live = new KvStateMachine(store);
            applyRandomWrites(live, seed, 120);
            KvStateMachine reopened = new KvStateMachine(store); // as at a start on a store closed cleanly
            assertArrayEquals(bytes(live.catalog()), bytes(reopened.catalog()),
                    "seed " + seed + ": the catalog rebuilt from the store differs from the one the applies built"
                            + " (replay: CatalogInStoreTest with this seed)");
        }
    }

    @Test
    void a_snapshot_installed_gives_the_same_catalog_and_the_same_digest() throws IOException {
        for (long seed = 100; seed <= 110; seed++) {
            KvStateMachine leader = new KvStateMachine();
            applyRandomWrites(leader, seed, 80);
            ByteArrayOutputStream snapshot = new ByteArrayOutputStream();
            leader.snapshot(snapshot);
            KvStateMachine follower = new KvStateMachine();
            apply(follower, 3, command(register("gone", service("x-1", "x"))));
            follower.restore(new ByteArrayInputStream(snapshot.toByteArray()));
            assertArrayEquals(bytes(leader.catalog()), bytes(follower.catalog()), "seed " + seed);
            try (KvView a = leader.view(); KvView b = follower.view()) {
                assertEquals(KvStateMachine.digest(a), KvStateMachine.digest(b), "seed " + seed + ": the stores differ");
            }
            assertArrayEquals(bytes(follower.catalog()), bytes(new KvStateMachine(follower.store()).catalog()),
                    "seed " + seed + ": the installed catalog is in the store too");
        }
    }

    @Test
    void the_digest_sees_the_catalog() {
        KvStateMachine a = new KvStateMachine();
        KvStateMachine b = new KvStateMachine();
        apply(a, 5, command(register("n1", service("web-1", "web"))));
        apply(b, 5, command(register("n1", service("web-1", "web", "other-tag"))));
        try (KvView viewA = a.view(); KvView viewB = b.view()) {
            assertNotEquals(KvStateMachine.digest(viewA), KvStateMachine.digest(viewB));
        }
    }

    @Test
    void a_restore_commit_leaves_the_restored_catalog_in_the_store() throws IOException {
        KvStateMachine archived = new KvStateMachine();
        applyRandomWrites(archived, 7, 60);
        List<Catalog.Item> items = new java.util.ArrayList<>();
        archived.catalog().items().forEachRemaining(items::add);
        HeapStateStore store = new HeapStateStore();
        KvStateMachine live = new KvStateMachine(store);
        apply(live, 500, command(register("live", service("db-1", "db"))));
        apply(live, 501, new KvCommand(KvCommand.Op.RESTORE_CHUNK, "r", KvStateMachine.encodeBatch(List.of(), List.of(), items), 0, 0).encode());
        assertEquals("true", apply(live, 502, new KvCommand(KvCommand.Op.RESTORE_COMMIT, "r", new byte[0], items.size(), 1).encode()));
        assertEquals(archived.catalog().nodeCount(), live.catalog().nodeCount());
        assertArrayEquals(bytes(live.catalog()), bytes(new KvStateMachine(store).catalog()));
    }
}
