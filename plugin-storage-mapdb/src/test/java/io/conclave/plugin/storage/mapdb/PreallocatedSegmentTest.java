package io.conclave.plugin.storage.mapdb;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.StorageException;
import io.conclave.testsupport.Poll;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The log's active segment in a preallocated file (a spare of zeros prepared ahead, taken at a roll): its zeros are
 * the segment's clean end at open — nothing cut, nothing logged, appends continue in them — while a crash inside an
 * append into them loses that append only; a half-prepared spare is never read as log; a sealed segment holds its
 * records only; and a roll never waits for the spare.
 */
class PreallocatedSegmentTest {

    private static final long SEGMENT_BYTES = 64 << 10;
    private static final int DATA_BYTES = 100;
    private static final int RECORD_BYTES = SegmentedLog.RECORD_HEADER_BYTES + DATA_BYTES;
    /** Records a segment holds: it rolls once its records pass the segment size (the last one ends past it). */
    private static final long PER_SEGMENT = (SEGMENT_BYTES - SegmentedLog.SEGMENT_HEADER_BYTES + RECORD_BYTES - 1) / RECORD_BYTES;
    private static final Duration SPARE_DEADLINE = Duration.ofSeconds(30);

    @TempDir
    Path folder;

    @AfterEach
    void noCrashPoint() {
        SegmentedLog.crashPoint = null;
        FileChannels.holdUnsynced = false;
    }

    private static LogEntry entry(long index) {
        return new LogEntry(index, 1, LogEntry.Type.COMMAND, CrashWriter.content(index, DATA_BYTES));
    }

    private static List<LogEntry> entries(long from, long to) {
        List<LogEntry> batch = new ArrayList<>();
        for (long index = from; index <= to; index++) {
            batch.add(entry(index));
        }
        return batch;
    }

    private Path activeFile() throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.filter(file -> file.toString().endsWith(SegmentedLog.OPEN_SUFFIX)).findFirst().orElseThrow();
        }
    }

    private List<Path> sealedFiles() throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.filter(file -> file.toString().endsWith(SegmentedLog.SEALED_SUFFIX)).sorted().toList();
        }
    }

    private void awaitSpare() throws InterruptedException {
        Poll.until("the spare segment is prepared", SPARE_DEADLINE, () -> Files.exists(folder.resolve(SpareSegment.READY_NAME)));
    }

    /** No spare is being prepared: none was asked for since the last roll took one, or the one asked for is ready. */
    private void assertNoPreparation() {
        assertFalse(Files.exists(folder.resolve(SpareSegment.PREPARING_NAME)), "no spare is being prepared");
    }

    /**
     * A log whose active segment is a taken spare: entries 1 to {@code last}, the first segment grown (no spare was
     * asked for before it was half full), the next ones preallocated.
     */
    private SegmentedLog preallocatedLog(long last) throws Exception {
        SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true);
        log.append(entries(1, 1));
        assertFalse(Files.exists(folder.resolve(SpareSegment.READY_NAME)), "no spare before the active segment is half full");
        for (long index = 2; index <= last; index++) {
            if ((index - 1) % PER_SEGMENT == 0) {
                awaitSpare(); // the roll at this append finds a spare
            }
            log.append(List.of(entry(index)));
        }
        assertEquals(SEGMENT_BYTES, Files.size(activeFile()), "the active segment is a preallocated file");
        return log;
    }

    /** A preparer whose thread is busy until {@code release}: whatever is handed to it after waits. */
    private static ExecutorService heldPreparer(CountDownLatch release) {
        ExecutorService preparer = Executors.newSingleThreadExecutor();
        preparer.submit(() -> {
            release.await();
            return null;
        });
        return preparer;
    }

    /** Entries 1 to 1600, one append each: three rolls of the test's segments. */
    private static void threeRolls(SegmentedLog log) {
        log.append(entries(1, 1));
        for (long index = 2; index <= 1600; index++) {
            log.append(List.of(entry(index)));
        }
    }

    private static void checkEveryEntry(SegmentedLog log, long last) {
        assertEquals(last, log.lastIndex());
        for (long index = 1; index <= last; index++) {
            assertArrayEquals(CrashWriter.content(index, DATA_BYTES), log.get(index).data(), "entry " + index);
        }
    }

    /** Opens the log, capturing what it logs (slf4j-simple writes to the current System.err). */
    private String openCapturing(long expectedLast, long append) {
        PrintStream original = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            checkEveryEntry(log, expectedLast);
            for (long index = expectedLast + 1; index <= expectedLast + append; index++) {
                log.append(List.of(entry(index)));
            }
        } finally {
            System.setErr(original);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void when_a_preallocated_segment_is_reopened_after_a_clean_close_then_every_record_is_read_and_appends_continue_in_its_zeros()
            throws Exception {
        long last = 800; // 508 records in the first segment (grown), 292 in the active one (a 64 KiB spare)
        preallocatedLog(last).close();
        Path active = activeFile();
        String logged = openCapturing(last, 20);
        assertFalse(logged.contains("WARN"), "the zeros are the segment's clean end, not a tail to cut: " + logged);
        assertEquals(SEGMENT_BYTES, Files.size(active), "nothing was cut; the appends after the reopen wrote into the zeros");
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            checkEveryEntry(log, last + 20);
        }
    }

    @Test
    void when_the_process_stops_between_appends_into_a_preallocated_segment_then_every_synced_record_is_read_back() throws Exception {
        FileChannels.holdUnsynced = true; // what was not synced is lost with the process, as after a power loss
        SegmentedLog crashed = preallocatedLog(700); // the second segment not half full: no spare asked for yet
        assertNoPreparation(); // the crash leaves no preparation running
        FileChannels.holdUnsynced = false;
        try {
            String logged = openCapturing(700, 10); // no close: the process stopped
            assertFalse(logged.contains("WARN"), logged);
            assertEquals(SEGMENT_BYTES, Files.size(activeFile()), "the appends after the reopen wrote into the zeros");
            try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
                checkEveryEntry(log, 710);
            }
        } finally {
            crashed.close();
        }
    }

    /**
     * A crash inside an append of entries 601-605: {@code written} bytes of the batch reached the file, the rest holds the
     * preallocated zeros; the complete records of the batch are kept, up to {@code kept}, the torn one is cut.
     */
    private void crashInsideAnAppend(int written, long kept) throws Exception {
        SegmentedLog crashed = preallocatedLog(600);
        assertNoPreparation();
        SegmentedLog.crashPoint = new SegmentedLog.CrashPoint() {
            @Override
            public void beforeWrite(FileChannel channel, ByteBuffer batch, long position) throws IOException {
                batch.limit(batch.position() + written);
                while (batch.hasRemaining()) {
                    position += channel.write(batch, position);
                }
                channel.force(false);
                throw new IOException("the process stops here");
            }

            @Override
            public void beforeSync() {
            }
        };
        assertThrows(StorageException.class, () -> crashed.append(entries(601, 605)), "the append was never acknowledged");
        SegmentedLog.crashPoint = null;
        try {
            String logged = openCapturing(kept, 3); // the torn record and those after it lost, 3 appended after the kept ones
            long active = firstOfActive(activeFile());
            if (written > 0) {
                assertTrue(logged.contains("WARN") && logged.contains("the tail after record " + kept + " could not be read"), logged);
                // cut at the torn record, one atomic change of the file's size: the file grows from there to the next roll
                assertEquals(SegmentedLog.SEGMENT_HEADER_BYTES + (kept + 3 - active + 1) * RECORD_BYTES, Files.size(activeFile()));
            } else {
                assertFalse(logged.contains("WARN"), "nothing of the append reached the file: " + logged);
                assertEquals(SEGMENT_BYTES, Files.size(activeFile()), "nothing was cut; the appends after the reopen wrote into the zeros");
            }
            try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
                checkEveryEntry(log, kept + 3);
            }
        } finally {
            crashed.close();
        }
    }

    @Test
    void when_a_crash_stops_an_append_inside_the_header_of_its_first_record_then_only_that_append_is_lost() throws Exception {
        crashInsideAnAppend(11, 600);
    }

    @Test
    void when_a_crash_stops_an_append_inside_the_data_of_its_third_record_then_the_torn_record_and_those_after_it_are_lost() throws Exception {
        crashInsideAnAppend(2 * RECORD_BYTES + SegmentedLog.RECORD_HEADER_BYTES + 37, 602);
    }

    @Test
    void when_a_crash_stops_an_append_before_its_first_byte_then_only_that_append_is_lost() throws Exception {
        crashInsideAnAppend(0, 600);
    }

    @Test
    void when_a_complete_record_in_a_preallocated_segment_fails_its_check_then_it_is_damage() throws Exception {
        preallocatedLog(600).close();
        Path active = activeFile();
        long last; // where the active segment's last record starts: its records are all RECORD_BYTES long
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            last = SegmentedLog.SEGMENT_HEADER_BYTES + (log.lastIndex() - firstOfActive(active)) * RECORD_BYTES;
        }
        Damage.xorByte(active, last + SegmentedLog.RECORD_HEADER_BYTES + 10, 0x01);
        Exception error = assertThrows(io.conclave.api.storage.CorruptionException.class,
                () -> SegmentedLog.open(folder, SEGMENT_BYTES, true).close());
        assertTrue(error.getMessage().contains("offset " + last), error.getMessage());
        assertEquals(SEGMENT_BYTES, Files.size(active), "nothing was cut");
    }

    @Test
    void when_zeros_stand_where_a_record_should_be_in_a_preallocated_segment_and_data_follows_then_it_is_damage() throws Exception {
        preallocatedLog(600).close();
        Path active = activeFile();
        Damage.xorByte(active, SEGMENT_BYTES - 100, 0x01); // one byte in the zeros, far past the last record
        Exception error = assertThrows(io.conclave.api.storage.CorruptionException.class,
                () -> SegmentedLog.open(folder, SEGMENT_BYTES, true).close());
        assertTrue(error.getMessage().contains("zero bytes where the record header"), error.getMessage());
    }

    private static long firstOfActive(Path active) {
        String name = active.getFileName().toString();
        return Long.parseLong(name.substring(0, name.length() - SegmentedLog.OPEN_SUFFIX.length()));
    }

    @Test
    void when_a_spare_was_left_half_written_by_a_crash_then_it_is_never_read_as_log_and_deleted() throws Exception {
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES)) {
            log.append(entries(1, 10));
        }
        // The worst a crash can leave: a copy of a segment, records and all, under the spare's names
        Files.copy(activeFile(), folder.resolve(SpareSegment.PREPARING_NAME));
        Files.copy(activeFile(), folder.resolve(SpareSegment.READY_NAME)); // not the segment size: prepared for another one
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            checkEveryEntry(log, 10);
            assertFalse(Files.exists(folder.resolve(SpareSegment.PREPARING_NAME)), "the half-prepared spare was deleted at open");
            assertFalse(Files.exists(folder.resolve(SpareSegment.READY_NAME)), "the spare of another size was deleted at open");
            long last = 10 + PER_SEGMENT / 2;
            log.append(entries(11, last)); // past half the segment: the log asks for a spare
            awaitSpare();
            byte[] spare = Files.readAllBytes(folder.resolve(SpareSegment.READY_NAME));
            assertEquals(SEGMENT_BYTES, spare.length, "a spare of the segment size replaced the one of another size");
            assertArrayEquals(new byte[spare.length], spare, "the new spare holds zeros only, none of the records left under its names");
            checkEveryEntry(log, last);
        }
    }

    @Test
    void when_a_preallocated_segment_is_sealed_then_it_holds_its_records_and_no_zeros() throws Exception {
        long last = 1600; // three sealed segments of 508 records (the first grown, two preallocated), 76 records active
        preallocatedLog(last).close();
        List<Path> sealed = sealedFiles();
        assertEquals(3, sealed.size(), "sealed: " + sealed);
        for (Path segment : sealed) {
            String[] bounds = segment.getFileName().toString().replace(SegmentedLog.SEALED_SUFFIX, "").split("-");
            long records = Long.parseLong(bounds[1]) - Long.parseLong(bounds[0]) + 1;
            assertEquals(SegmentedLog.SEGMENT_HEADER_BYTES + records * RECORD_BYTES, Files.size(segment),
                    segment + " holds its " + records + " records and nothing after them");
        }
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            checkEveryEntry(log, last);
        }
    }

    @Test
    void when_the_suffix_of_a_preallocated_segment_is_truncated_then_appends_after_it_are_read_back_after_a_reopen() throws Exception {
        try (SegmentedLog log = preallocatedLog(700)) {
            log.truncateSuffix(650);
            assertEquals(649, log.lastIndex());
            log.append(entries(650, 660));
            checkEveryEntry(log, 660);
        }
        String logged = openCapturing(660, 5);
        assertFalse(logged.contains("WARN"), logged);
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            checkEveryEntry(log, 665);
        }
    }

    @Test
    void when_every_segment_up_to_a_preallocated_active_one_is_dropped_then_the_log_restarts_after_it() throws Exception {
        try (SegmentedLog log = preallocatedLog(800)) { // the second segment past half full: the next spare asked for
            log.deleteSegmentsUpTo(800);
            assertEquals(-1, log.firstIndex(), "no segment left");
            awaitSpare();
            log.append(entries(801, 810));
            assertEquals(SEGMENT_BYTES, Files.size(activeFile()), "the restarted log took the spare");
        }
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) {
            assertEquals(801, log.firstIndex());
            assertEquals(810, log.lastIndex());
            for (long index = 801; index <= 810; index++) {
                assertArrayEquals(CrashWriter.content(index, DATA_BYTES), log.get(index).data(), "entry " + index);
            }
        }
    }

    @Test
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD) // a roll that waits for the latch ignores an interrupt
    void when_the_spare_is_not_ready_then_appends_and_rolls_complete_in_growing_files_without_waiting() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService preparer = heldPreparer(release); // every preparation queued behind it waits
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, preparer)) {
            threeRolls(log);
            assertEquals(3, sealedFiles().size(), "the segments rolled while the spare was held back");
            assertTrue(Files.size(activeFile()) < SEGMENT_BYTES, "the active segment grows: no spare was ready");
            assertFalse(Files.exists(folder.resolve(SpareSegment.READY_NAME)));
            release.countDown();
            awaitSpare();
            long index = 1601;
            while (sealedFiles().size() < 4) {
                log.append(List.of(entry(index++)));
            }
            assertEquals(SEGMENT_BYTES, Files.size(activeFile()), "the next roll took the spare, once ready");
            assertTrue(index - 1601 <= PER_SEGMENT, "one roll later");
            checkEveryEntry(log, index - 1);
        } finally {
            release.countDown();
        }
        assertTrue(preparer.isShutdown(), "the log shut its preparer down at close");
    }

    @Test
    void when_the_log_is_closed_then_its_preparer_thread_stops() throws Exception {
        SegmentedLog log = SegmentedLog.open(folder, SegmentedLog.MAX_SEGMENT_BYTES, true);
        List<LogEntry> half = new ArrayList<>(); // 33 MiB: past half of a 64 MiB segment, so that a 64 MiB spare is being prepared
        for (long index = 1; index <= 33; index++) {
            half.add(new LogEntry(index, 1, LogEntry.Type.COMMAND, new byte[1 << 20]));
        }
        log.append(half);
        log.close();
        Poll.until("no spare-preparing thread is left", Duration.ofSeconds(30), () -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(thread -> thread.getName().startsWith("conclave-log-spare " + folder)));
        assertFalse(Files.exists(folder.resolve(SpareSegment.PREPARING_NAME)), "no half-prepared spare is left behind by a close");
    }
    @Test
    @Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void when_a_compaction_drops_sealed_segments_then_their_files_go_on_the_preparer_and_the_log_never_waits_for_it() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, heldPreparer(release))) { // the deletion waits
            threeRolls(log);
            List<Path> before = sealedFiles();
            assertEquals(3, before.size());
            long upTo = PER_SEGMENT * 2; // the first two segments end at or below it
            log.deleteSegmentsUpTo(upTo);
            assertTrue(log.firstIndex() > upTo - PER_SEGMENT && log.firstIndex() <= upTo + 1, "out of the log at once: " + log.firstIndex());
            assertEquals(before, sealedFiles(), "their files wait for the preparer, the log does not");
            log.append(entries(1601, 1610));
            checkEveryEntryFrom(log, log.firstIndex(), 1610);
            release.countDown();
            awaitSealedFiles("the dropped segments' files deleted", 1);
            assertEquals(before.get(2), sealedFiles().get(0), "the third segment kept");
            assertFalse(Files.exists(folder.resolve(before.get(0).getFileName().toString().replace(SegmentedLog.SEALED_SUFFIX,
                    SegmentedLog.INDEX_SUFFIX))), "with its index file");
        } finally {
            release.countDown();
        }
    }

    @Test
    void when_a_close_comes_before_the_deletion_ran_then_the_files_left_are_below_the_first_index_and_go_with_the_next_compaction()
            throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService preparer = heldPreparer(release);
        List<Path> before;
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, preparer)) {
            threeRolls(log);
            before = sealedFiles();
            log.deleteSegmentsUpTo(PER_SEGMENT);
            preparer.shutdownNow(); // as if the process died: the deletion never runs
            release.countDown();
        }
        assertEquals(before, sealedFiles(), "a deletion that never ran leaves the files");
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) { // leftovers are loaded as the log's start
            assertEquals(1, log.firstIndex());
            checkEveryEntryFrom(log, 1, 1600);
            log.deleteSegmentsUpTo(PER_SEGMENT * 2);
            awaitSealedFiles("the leftovers deleted with the next compaction", 1);
            log.append(entries(1601, 1610));
            checkEveryEntryFrom(log, log.firstIndex(), 1610);
        }
    }

    @Test
    void when_every_segment_goes_while_a_deletion_waits_then_the_waiting_files_go_first_and_no_hole_is_left() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        ExecutorService preparer = heldPreparer(release);
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, preparer)) {
            threeRolls(log);
            log.deleteSegmentsUpTo(PER_SEGMENT); // the first segment: its files wait for the held preparer
            assertEquals(3, sealedFiles().size());
            log.deleteSegmentsUpTo(1600); // every segment, the active one included (a snapshot installed): here and now
            assertEquals(List.of(), sealedFiles(), "the waiting files went too, before the newer ones");
            assertEquals(-1, log.firstIndex());
            log.append(entries(2001, 2010)); // the log restarts after the snapshot
            preparer.shutdownNow(); // as if the process died: the held deletion never runs
            release.countDown();
        }
        try (SegmentedLog log = SegmentedLog.open(folder, SEGMENT_BYTES, true)) { // no hole: it opens
            assertEquals(2001, log.firstIndex());
            checkEveryEntryFrom(log, 2001, 2010);
        }
    }

    private void awaitSealedFiles(String what, int count) throws InterruptedException {
        Poll.until(what, Duration.ofSeconds(30), () -> {
            try {
                return sealedFiles().size() == count;
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    private static void checkEveryEntryFrom(SegmentedLog log, long from, long last) {
        for (long index = from; index <= last; index++) {
            assertArrayEquals(CrashWriter.content(index, DATA_BYTES), log.get(index).data(), "entry " + index);
        }
    }
}
