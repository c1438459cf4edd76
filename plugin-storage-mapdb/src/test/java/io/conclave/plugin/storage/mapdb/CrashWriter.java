package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.LogEntry;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

/**
 * The child process of the crash tests: the engine's own workload on the storage, forever, with small log
 * segments so that it rolls over often — appends of batches, suffix truncations (a conflict) and prefix
 * truncations (a snapshot), new terms and votes, the cluster ID. Before each operation it prints
 * {@code DO <op>}, once it has returned (and so is durable) {@code ACK <op>}. Entry contents are a function
 * of index and term, so that the parent can check every byte after a crash.
 *
 * <p>With a crash point, the process also stops itself inside appends, as a crash would: after writing part
 * of a batch (a prefix, or a prefix then zeros from a sector boundary, or only zeros past the end), or
 * between the write and its sync.
 *
 * <p>Arguments: folder, seed, segment bytes, crash point chance per append in thousandths (0: none), and
 * {@code preallocate} to write the segments into preallocated files (spares of zeros) rather than growing ones.
 */
public final class CrashWriter {

    private CrashWriter() {
    }

    /** The content of the entry at {@code index}: fixed bytes in the tests that give the size. */
    static byte[] content(long index, int bytes) {
        byte[] data = new byte[bytes];
        new Random(index * 0x9E3779B97F4A7C15L).nextBytes(data);
        return data;
    }

    /** The content of the entry at {@code index} in {@code term}: 16 to 2,015 bytes. */
    static byte[] contentInTerm(long index, long term) {
        Random random = new Random(index * 0x9E3779B97F4A7C15L ^ term * 0xC2B2AE3D27D4EB4FL);
        byte[] data = new byte[16 + random.nextInt(2000)];
        random.nextBytes(data);
        return data;
    }

    /** The cluster ID written by operation {@code n}: 40 to 90 bytes. */
    static String clusterId(long seed, long n) {
        Random random = new Random(seed * 31 + n);
        byte[] bytes = new byte[20 + random.nextInt(26)];
        random.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    public static void main(String[] args) {
        Path folder = Path.of(args[0]);
        long seed = Long.parseLong(args[1]);
        long segmentBytes = Long.parseLong(args[2]);
        int crashChancePerMille = Integer.parseInt(args[3]);
        boolean preallocate = args.length > 4 && args[4].equals("preallocate");
        Random random = new Random(seed);
        if (crashChancePerMille > 0) {
            SegmentedLog.crashPoint = new Tearing(random, crashChancePerMille);
        }
        Thread orphaned = new Thread(() -> { // the parent test died: stop rather than write for ever
            try {
                while (System.in.read() >= 0) {
                    // nothing is sent on stdin: only its end matters
                }
            } catch (IOException ignored) {
                // as an end
            }
            Runtime.getRuntime().halt(97);
        }, "parent-watch");
        orphaned.setDaemon(true);
        orphaned.start();
        PrintStream out = System.out;
        try (FileStorage storage = FileStorage.open(folder, segmentBytes, preallocate)) {
            out.println("START " + storage.log().lastIndex());
            out.flush();
            for (long n = 0; ; n++) {
                String op = next(storage, random, seed, n);
                out.println("DO " + op);
                out.flush();
                perform(storage, op);
                out.println("ACK " + op);
                out.flush();
            }
        }
    }

    /** The next operation, from the storage's state. */
    private static String next(FileStorage storage, Random random, long seed, long n) {
        long term = storage.stable().currentTerm();
        long first = storage.log().firstIndex();
        long last = storage.log().lastIndex();
        int roll = random.nextInt(100);
        if (term == 0 || roll < 8) {
            String vote = random.nextBoolean() ? "-" : "node-" + random.nextInt(5);
            return "term " + (term + 1) + " " + vote;
        }
        if (roll < 11) {
            return "cid " + clusterId(seed, n);
        }
        if (roll < 18 && last >= first) {
            long from = Math.max(first, last - random.nextInt(40));
            return "suffix " + from;
        }
        if ((roll < 23 || last - first > 3000) && last > first) {
            long upTo = first + random.nextInt((int) Math.min(last - first, 2500));
            return "prefix " + upTo;
        }
        int count = 1 + random.nextInt(64);
        return "append " + (last + 1) + " " + (last + count) + " " + term;
    }

    static void perform(FileStorage storage, String op) {
        String[] parts = op.split(" ");
        switch (parts[0]) {
            case "term" -> storage.stable().setTermAndVote(Long.parseLong(parts[1]), parts[2].equals("-") ? null : parts[2]);
            case "cid" -> storage.stable().put("cluster-id", parts[1].getBytes(java.nio.charset.StandardCharsets.UTF_8));
            case "suffix" -> storage.log().truncateSuffix(Long.parseLong(parts[1]));
            case "prefix" -> storage.log().truncatePrefix(Long.parseLong(parts[1]));
            case "append" -> {
                long from = Long.parseLong(parts[1]);
                long to = Long.parseLong(parts[2]);
                long term = Long.parseLong(parts[3]);
                List<LogEntry> entries = new ArrayList<>();
                for (long index = from; index <= to; index++) {
                    entries.add(new LogEntry(index, term, LogEntry.Type.COMMAND, contentInTerm(index, term)));
                }
                storage.log().append(entries);
            }
            default -> throw new IllegalArgumentException(op);
        }
    }

    /** Stops the process inside an append, leaving what a crash there leaves. */
    private static final class Tearing implements SegmentedLog.CrashPoint {
        private final Random random;
        private final int chancePerMille;

        Tearing(Random random, int chancePerMille) {
            this.random = random;
            this.chancePerMille = chancePerMille;
        }

        @Override
        public void beforeWrite(FileChannel channel, ByteBuffer batch, long position) throws IOException {
            if (random.nextInt(1000) >= chancePerMille) {
                return;
            }
            int length = batch.remaining();
            switch (random.nextInt(3)) {
                case 0 -> { // a prefix of the batch reached the file
                    batch.limit(batch.position() + random.nextInt(length));
                    write(channel, batch, position);
                }
                case 1 -> { // the first sectors were written, the file's size covers the rest, which holds zeros
                    long end = position + length;
                    long boundary = (position + random.nextInt(length)) / SegmentedLog.SECTOR_BYTES * SegmentedLog.SECTOR_BYTES;
                    boundary = Math.max(boundary, position);
                    batch.limit(batch.position() + (int) (boundary - position));
                    write(channel, batch, position);
                    write(channel, ByteBuffer.allocate((int) (end - boundary)), boundary);
                }
                default -> write(channel, ByteBuffer.allocate(1 + random.nextInt(64 << 10)), position); // only zeros
            }
            channel.force(false); // whatever reached the file is on the disk
            Runtime.getRuntime().halt(99);
        }

        @Override
        public void beforeSync() {
            if (random.nextInt(1000) < chancePerMille) {
                Runtime.getRuntime().halt(98);
            }
        }

        private static void write(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
            long at = position;
            while (buffer.hasRemaining()) {
                at += channel.write(buffer, at);
            }
        }
    }
}
