package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.CorruptionException;
import io.conclave.api.storage.LogEntry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The recovery rule of the log ({@code SegmentedLog.scan}): at open only a tail that cannot be a complete
 * record is cut, with a WARN giving its size; every other damage — a damaged length above all, which the
 * first format took for a torn write and cut 290 acknowledged entries — stops the open, naming file and
 * offset, with every file left as it was.
 */
class LogRecoveryTest {

    private static final int ENTRIES = 300;
    private static final int DATA_BYTES = 100;
    private static final int RECORD_BYTES = SegmentedLog.RECORD_HEADER_BYTES + DATA_BYTES;

    @TempDir
    Path folder;

    /** 300 entries in one active segment (the segment size is large), then 20 in small segments. */
    @BeforeEach
    void fill() {
        try (FileStorage storage = FileStorage.open(folder)) {
            List<LogEntry> entries = new ArrayList<>();
            for (long index = 1; index <= ENTRIES; index++) {
                entries.add(new LogEntry(index, 1, LogEntry.Type.COMMAND, CrashWriter.content(index, DATA_BYTES)));
            }
            storage.log().append(entries.subList(0, 100));
            storage.log().append(entries.subList(100, ENTRIES));
        }
    }

    private Path activeSegment() throws IOException {
        try (Stream<Path> files = Files.list(folder.resolve(FileStorage.LOG_FOLDER))) {
            return files.filter(file -> file.toString().endsWith(SegmentedLog.OPEN_SUFFIX)).findFirst().orElseThrow();
        }
    }

    /** Where record {@code index} (1-based) starts in the active segment. */
    private static long offsetOf(long index) {
        return SegmentedLog.SEGMENT_HEADER_BYTES + (index - 1) * RECORD_BYTES;
    }

    private Map<String, String> fingerprint() throws Exception {
        return Fingerprint.of(folder);
    }


    private static void appendBytes(Path file, byte[] bytes) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(raf.length());
            raf.write(bytes);
        }
    }

    private CorruptionException assertRefusedAndUntouched(Path damaged, String... what) throws Exception {
        Map<String, String> before = fingerprint();
        CorruptionException error = assertThrows(CorruptionException.class, () -> FileStorage.open(folder).close(),
                "the damaged log must not open");
        assertTrue(error.getMessage().contains(damaged.getFileName().toString()), error.getMessage());
        for (String part : what) {
            assertTrue(error.getMessage().contains(part), "'" + part + "' in: " + error.getMessage());
        }
        assertEquals(before, fingerprint(), "the files are left as they were");
        return error;
    }

    /** Opens, capturing what is logged (slf4j-simple writes to the current System.err), and checks the log. */
    private String openAndCheckEveryEntry(long expectedLast) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try (FileStorage storage = FileStorage.open(folder)) {
            assertEquals(expectedLast, storage.log().lastIndex());
            for (long index = 1; index <= expectedLast; index++) {
                assertArrayEquals(CrashWriter.content(index, DATA_BYTES), storage.log().get(index).data(), "entry " + index);
            }
            storage.log().append(List.of(new LogEntry(expectedLast + 1, 2, LogEntry.Type.COMMAND, new byte[] {7})));
        } finally {
            System.setErr(original);
        }
        try (FileStorage storage = FileStorage.open(folder)) {
            assertEquals(expectedLast + 1, storage.log().lastIndex(), "an append after the cut is kept");
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void when_a_length_byte_of_record_11_of_300_is_flipped_then_open_is_refused_naming_file_and_offset() throws Exception {
        Path active = activeSegment();
        Damage.xorByte(active, offsetOf(11) + 1, 0x40); // the length now points far past the end of the file
        assertRefusedAndUntouched(active, "offset " + offsetOf(11));
    }

    @Test
    void when_every_length_byte_of_a_record_is_damaged_in_turn_then_every_open_is_refused() throws Exception {
        Path active = activeSegment();
        for (int i = 0; i < 4; i++) {
            for (int mask : new int[] {0x01, 0x80}) {
                Damage.xorByte(active, offsetOf(200) + i, mask);
                assertRefusedAndUntouched(active, "offset " + offsetOf(200));
                Damage.xorByte(active, offsetOf(200) + i, mask);
            }
        }
    }

    @Test
    void when_the_last_complete_record_fails_its_crc_then_it_is_damage_not_a_torn_tail() throws Exception {
        Path active = activeSegment();
        Damage.xorByte(active, offsetOf(ENTRIES) + SegmentedLog.RECORD_HEADER_BYTES + 10, 0x01);
        assertRefusedAndUntouched(active, "offset " + offsetOf(ENTRIES), "CRC32C");
    }

    @Test
    void when_a_zero_filled_tail_of_64_kib_follows_the_records_then_it_is_cut_with_a_warning_and_every_record_kept() throws Exception {
        Path active = activeSegment();
        long size = Files.size(active);
        appendBytes(active, new byte[64 << 10]);
        String logged = openAndCheckEveryEntry(ENTRIES);
        assertTrue(logged.contains("WARN") && logged.contains("cut " + (64 << 10) + " bytes at offset " + size), logged);
        assertTrue(logged.contains("the tail after record " + ENTRIES + " could not be read"), logged);
        assertFalse(logged.contains("an append that was never acknowledged"),
                "the log cannot know the tail was never acknowledged: a disk or an operator may have cut synced records (issue 35)");
    }

    @Test
    void when_a_header_is_cut_short_at_the_end_then_it_is_cut_and_every_record_kept() throws Exception {
        Path active = activeSegment();
        appendBytes(active, new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
        String logged = openAndCheckEveryEntry(ENTRIES);
        assertTrue(logged.contains("cut 11 bytes"), logged);
    }

    @Test
    void when_a_good_header_is_followed_by_less_data_than_it_announces_then_that_record_is_cut() throws Exception {
        Path active = activeSegment();
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.setLength(raf.length() - 40);
        }
        String logged = openAndCheckEveryEntry(ENTRIES - 1);
        assertTrue(logged.contains("cut " + (RECORD_BYTES - 40) + " bytes"), logged);
    }

    @Test
    void when_zero_bytes_stand_where_a_header_should_be_but_data_follows_then_open_is_refused() throws Exception {
        Path active = activeSegment();
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.seek(offsetOf(150));
            raf.write(new byte[SegmentedLog.RECORD_HEADER_BYTES]);
        }
        assertRefusedAndUntouched(active, "offset " + offsetOf(150));
    }

    @Test
    void when_a_segment_has_another_format_version_then_open_is_refused_naming_the_version() throws Exception {
        Path active = activeSegment();
        byte[] header = SegmentedLog.segmentHeader(1, 99).array();
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.write(header);
        }
        assertRefusedAndUntouched(active, "format version 99");
    }

    @Test
    void when_a_segment_has_no_header_then_open_is_refused_as_an_unknown_format() throws Exception {
        Path active = activeSegment();
        Damage.xorByte(active, 0, 0xFF);
        assertRefusedAndUntouched(active, "format");
    }

    @Test
    void when_an_index_file_is_damaged_then_open_is_refused_naming_the_index_and_a_missing_one_is_rebuilt() throws Exception {
        Path log = folder.resolve(FileStorage.LOG_FOLDER);
        try (FileStorage storage = FileStorage.open(folder, 4096)) {
            List<LogEntry> more = new ArrayList<>();
            for (long index = ENTRIES + 1; index <= ENTRIES + 100; index++) {
                more.add(new LogEntry(index, 1, LogEntry.Type.COMMAND, CrashWriter.content(index, DATA_BYTES)));
                storage.log().append(List.of(more.get(more.size() - 1)));
            }
        }
        Path index;
        try (Stream<Path> files = Files.list(log)) {
            index = files.filter(file -> file.toString().endsWith(SegmentedLog.INDEX_SUFFIX)).sorted().findFirst().orElseThrow();
        }
        Damage.xorByte(index, 8 * 5 + 7, 0x01);
        assertRefusedAndUntouched(index, "entry 6");
        Files.delete(index);
        try (FileStorage storage = FileStorage.open(folder)) {
            assertEquals(ENTRIES + 100, storage.log().lastIndex());
            for (long i = 1; i <= ENTRIES + 100; i++) {
                assertEquals(i, storage.log().get(i).index());
            }
        }
        assertTrue(Files.exists(index), "the missing index was rebuilt");
    }

    @Test
    void when_an_entry_is_larger_than_a_record_may_hold_then_the_append_is_refused_and_nothing_is_written() throws Exception {
        Map<String, String> before = fingerprint();
        try (FileStorage storage = FileStorage.open(folder)) {
            Supplier<List<LogEntry>> batch = () -> List.of(new LogEntry(ENTRIES + 1, 1, LogEntry.Type.COMMAND, new byte[1]),
                    new LogEntry(ENTRIES + 2, 1, LogEntry.Type.COMMAND, new byte[SegmentedLog.MAX_ENTRY_BYTES + 1]));
            IllegalArgumentException error = assertThrows(IllegalArgumentException.class, () -> storage.log().append(batch.get()));
            assertTrue(error.getMessage().contains("log entry " + (ENTRIES + 2)), error.getMessage());
            assertEquals(ENTRIES, storage.log().lastIndex());
        }
        assertEquals(before, fingerprint(), "nothing was written");
        openAndCheckEveryEntry(ENTRIES);
    }

    @Test
    void when_the_last_sectors_of_the_last_record_were_never_written_then_that_record_is_cut() throws Exception {
        try (FileStorage storage = FileStorage.open(folder)) {
            storage.log().append(List.of(new LogEntry(ENTRIES + 1, 1, LogEntry.Type.COMMAND, CrashWriter.content(ENTRIES + 1, 3000))));
        }
        Path active = activeSegment();
        long start = offsetOf(ENTRIES + 1);
        long boundary = (start + 700) / SegmentedLog.SECTOR_BYTES * SegmentedLog.SECTOR_BYTES;
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.seek(boundary);
            raf.write(new byte[(int) (raf.length() - boundary)]); // the file's size covers them, the sectors hold zeros
        }
        String logged = openAndCheckEveryEntry(ENTRIES);
        assertTrue(logged.contains("never written"), logged);
    }

    @Test
    void when_a_sector_inside_the_last_record_is_zero_but_data_follows_it_then_it_is_damage() throws Exception {
        try (FileStorage storage = FileStorage.open(folder)) {
            storage.log().append(List.of(new LogEntry(ENTRIES + 1, 1, LogEntry.Type.COMMAND, CrashWriter.content(ENTRIES + 1, 3000))));
        }
        Path active = activeSegment();
        long boundary = (offsetOf(ENTRIES + 1) + 700) / SegmentedLog.SECTOR_BYTES * SegmentedLog.SECTOR_BYTES;
        try (RandomAccessFile raf = new RandomAccessFile(active.toFile(), "rw")) {
            raf.seek(boundary);
            raf.write(new byte[SegmentedLog.SECTOR_BYTES]);
        }
        assertRefusedAndUntouched(active, "offset " + offsetOf(ENTRIES + 1), "CRC32C");
    }
}
