package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.DataDirectoryLockedException;
import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.SnapshotMeta;
import io.conclave.api.storage.SnapshotStore;
import io.conclave.api.storage.StorageException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Damaged storage is reported at open with the file and what is wrong, and left exactly as it was; a locked
 * folder names its holder.
 */
class DamagedStorageTest {

    private static final long SEGMENT_BYTES = 8192;

    @TempDir
    Path folder;
    private SnapshotMeta snapshot;

    @BeforeEach
    void fill() throws IOException {
        try (FileStorage storage = FileStorage.open(folder, SEGMENT_BYTES)) {
            List<LogEntry> entries = new ArrayList<>();
            for (long index = 1; index <= 300; index++) {
                entries.add(new LogEntry(index, 1, LogEntry.Type.COMMAND, CrashWriter.content(index, 100)));
            }
            storage.log().append(entries);
            storage.log().append(List.of(new LogEntry(301, 1, LogEntry.Type.COMMAND, CrashWriter.content(301, 100))));
            storage.stable().setTermAndVote(4, "someone");
            try (SnapshotStore.Writer writer = storage.snapshots().create(200, 1, ClusterConfiguration.EMPTY, 1)) {
                writer.output().write(new byte[5000]);
                snapshot = writer.commit();
            }
        }
    }

    private Map<String, String> fingerprint() throws Exception {
        return Fingerprint.of(folder);
    }

    private Path sealedSegment() throws IOException {
        try (Stream<Path> files = Files.list(folder.resolve(FileStorage.LOG_FOLDER))) {
            return files.filter(file -> file.toString().endsWith(SegmentedLog.SEALED_SUFFIX)).sorted().findFirst().orElseThrow();
        }
    }


    /** Opens the damaged folder: must fail naming the file, and leave every file as it was. */
    private CorruptionException assertReportedAndUntouched(Path damaged, String what) throws Exception {
        Map<String, String> before = fingerprint();
        CorruptionException error = assertThrows(CorruptionException.class, () -> FileStorage.open(folder, SEGMENT_BYTES).close());
        assertTrue(error.getMessage().contains(damaged.getFileName().toString()), error.getMessage());
        assertTrue(error.getMessage().contains(what), error.getMessage());
        assertEquals(before, fingerprint(), "the files are left as they were");
        return error;
    }

    @Test
    void when_bytes_of_a_log_record_are_flipped_then_open_fails_naming_the_segment() throws Exception {
        Path segment = sealedSegment();
        Damage.xorByte(segment, Files.size(segment) / 2, 0x5A);
        assertReportedAndUntouched(segment, "record at offset");
    }

    @Test
    void when_a_sealed_segment_is_truncated_then_open_fails_naming_it() throws Exception {
        Path segment = sealedSegment();
        try (RandomAccessFile raf = new RandomAccessFile(segment.toFile(), "rw")) {
            raf.setLength(raf.length() - 150);
        }
        assertReportedAndUntouched(segment, "incomplete record");
    }

    @Test
    void when_a_segment_is_missing_then_open_fails_naming_the_hole() throws Exception {
        Path segment = sealedSegment();
        Files.delete(segment);
        CorruptionException error = assertThrows(CorruptionException.class, () -> FileStorage.open(folder, SEGMENT_BYTES).close());
        assertTrue(error.getMessage().contains("missing") || error.getMessage().contains("starts at index"), error.getMessage());
    }

    @Test
    void when_the_mapdb_store_is_damaged_then_open_fails_naming_it() throws Exception {
        Path store = folder.resolve(FileStorage.STORE_FILE);
        for (long position = 0; position < Files.size(store); position += 512) {
            Damage.xorByte(store, position, 0x5A);
        }
        Map<String, String> before = fingerprint();
        StorageException error = assertThrows(StorageException.class, () -> FileStorage.open(folder, SEGMENT_BYTES).close());
        assertTrue(error.getMessage().contains(FileStorage.STORE_FILE), error.getMessage());
        assertEquals(before, fingerprint(), "the files are left as they were");
    }

    @Test
    void when_the_mapdb_store_is_truncated_then_open_fails_naming_it() throws Exception {
        Path store = folder.resolve(FileStorage.STORE_FILE);
        try (RandomAccessFile raf = new RandomAccessFile(store.toFile(), "rw")) {
            raf.setLength(100);
        }
        Map<String, String> before = fingerprint();
        StorageException error = assertThrows(StorageException.class, () -> FileStorage.open(folder, SEGMENT_BYTES).close());
        assertTrue(error.getMessage().contains(FileStorage.STORE_FILE), error.getMessage());
        assertEquals(before, fingerprint());
    }

    @Test
    void when_snapshot_content_is_damaged_then_open_fails_naming_it() throws Exception {
        Path content = folder.resolve(FileStorage.SNAPSHOTS_FOLDER).resolve(snapshot.id() + ".snap");
        Damage.xorByte(content, 1234, 0x5A);
        assertReportedAndUntouched(content, "CRC32C");
    }

    @Test
    void when_snapshot_content_is_damaged_while_open_then_a_streaming_read_fails_at_its_end_and_open_at_once() throws Exception {
        try (FileStorage storage = FileStorage.open(folder, SEGMENT_BYTES)) {
            Damage.xorByte(folder.resolve(FileStorage.SNAPSHOTS_FOLDER).resolve(snapshot.id() + ".snap"), 1234, 0x5A);
            assertThrows(CorruptionException.class, () -> storage.snapshots().open(snapshot.id()).close(), "open checks first");
            try (SnapshotStore.Reader reader = storage.snapshots().openStreaming(snapshot.id())) { // no full pass first
                java.io.InputStream input = reader.input();
                assertThrows(CorruptionException.class, input::readAllBytes, "reading it to the end checks it");
            }
        }
    }

    @Test
    void when_snapshot_metadata_is_damaged_then_open_fails_naming_it() throws Exception {
        Path meta = folder.resolve(FileStorage.SNAPSHOTS_FOLDER).resolve(snapshot.id() + ".meta");
        Damage.xorByte(meta, 30, 0x5A);
        assertReportedAndUntouched(meta, "metadata");
    }

    @Test
    void when_the_active_segment_ends_with_a_torn_record_then_it_is_cut_off_and_the_rest_is_kept() throws Exception {
        Path active;
        try (Stream<Path> files = Files.list(folder.resolve(FileStorage.LOG_FOLDER))) {
            active = files.filter(file -> file.toString().endsWith(SegmentedLog.OPEN_SUFFIX)).findFirst().orElseThrow();
        }
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.setLength(raf.length() - 40); // the last record (301) was cut by a crash before it was synced
        }
        try (FileStorage storage = FileStorage.open(folder, SEGMENT_BYTES)) {
            assertEquals(300, storage.log().lastIndex());
            assertEquals(4, storage.stable().currentTerm());
        }
    }

    @Test
    void when_a_second_server_opens_the_same_folder_then_it_is_refused_with_the_holder() {
        try (FileStorage first = FileStorage.open(folder, SEGMENT_BYTES)) {
            DataDirectoryLockedException error = assertThrows(DataDirectoryLockedException.class,
                    () -> FileStorage.open(folder, SEGMENT_BYTES));
            assertTrue(error.getMessage().contains(folder.toString()), error.getMessage());
            assertTrue(error.getMessage().contains("process " + ProcessHandle.current().pid()), error.getMessage());
            assertEquals(301, first.log().lastIndex(), "the holder is unaffected");
        }
    }

    @Test
    void when_the_stable_store_is_deleted_beside_a_log_then_open_is_refused_and_nothing_is_created() throws Exception {
        try (Stream<Path> files = Files.list(folder)) {
            for (Path file : files.filter(file -> file.getFileName().toString().startsWith(FileStorage.STORE_FILE)).toList()) {
                Files.delete(file);
            }
        }
        CorruptionException error = assertReportedAndUntouched(folder.resolve(FileStorage.STORE_FILE), "missing");
        assertTrue(error.getMessage().contains("vote twice"), error.getMessage());
        assertTrue(Files.notExists(folder.resolve(FileStorage.STORE_FILE)), "no fresh store was made");
    }

    @Test
    void when_the_stable_store_is_deleted_and_the_log_is_empty_then_the_marker_still_refuses_it() throws Exception {
        Path empty = folder.resolve("empty-node");
        try (FileStorage storage = FileStorage.open(empty, SEGMENT_BYTES)) {
            storage.stable().setTermAndVote(7, "a-candidate"); // voted in term 7 with an empty log
        }
        try (Stream<Path> files = Files.list(empty)) {
            for (Path file : files.filter(file -> file.getFileName().toString().startsWith(FileStorage.STORE_FILE)).toList()) {
                Files.delete(file);
            }
        }
        CorruptionException error = assertThrows(CorruptionException.class, () -> FileStorage.open(empty, SEGMENT_BYTES).close());
        assertTrue(error.getMessage().contains(FileStorage.CREATED_MARKER), error.getMessage());
        assertTrue(Files.notExists(empty.resolve(FileStorage.STORE_FILE)), "no fresh store was made");
    }
}
