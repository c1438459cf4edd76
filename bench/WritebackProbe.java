import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.locks.LockSupport;

/**
 * What the kernel's writeback of memory-mapped state files does to a log's sync (issue 37), without a cluster: three
 * mapped files of 1 GiB (the MapDB stores of three servers on one disk) take random 1 KB overwrites at a given rate
 * each, while one thread appends 120-byte records to a log file and syncs each ({@code force(false)}: fdatasync),
 * as a server's log does at one connection. Mode {@code none} leaves the mapped files' dirty pages to the kernel (what
 * the MapDB store does: its file is derived, never synced before a clean close); {@code pace} forces each mapped file
 * every {@code paceMs} from a thread of its own, so that the kernel never holds more than that many milliseconds of
 * dirty pages. Prints the sync's percentiles.
 *
 * <pre>
 *   sync; java bench/WritebackProbe.java none 75 4000 0 /some/folder/on/the/disk
 *   sync; java bench/WritebackProbe.java pace 75 4000 1000 /some/folder/on/the/disk
 * </pre>
 *
 * The files (3 GiB of random bytes, made once) stay in the folder for the next run; delete it after.
 */
public final class WritebackProbe {

    public static void main(String[] args) throws Exception {
        if (args.length != 5 || !(args[0].equals("none") || args[0].equals("pace"))) {
            throw new IllegalArgumentException("usage: WritebackProbe none|pace <seconds> <writes/s per file> <pace ms> <folder>");
        }
        String mode = args[0];
        long seconds = Long.parseLong(args[1]);
        int rate = Integer.parseInt(args[2]);
        long paceMs = Long.parseLong(args[3]);
        Path folder = Files.createDirectories(Path.of(args[4]));
        int files = 3;
        long size = 1L << 30;
        int slices = 8;
        MappedByteBuffer[][] maps = new MappedByteBuffer[files][slices];
        for (int f = 0; f < files; f++) {
            try (RandomAccessFile file = new RandomAccessFile(folder.resolve("state-" + f).toFile(), "rw")) {
                if (file.length() != size) {
                    file.setLength(0);
                    byte[] chunk = new byte[1 << 20];
                    new Random(f).nextBytes(chunk);
                    for (int i = 0; i < size / chunk.length; i++) {
                        file.write(chunk);
                    }
                    file.getFD().sync();
                }
                for (int s = 0; s < slices; s++) {
                    maps[f][s] = file.getChannel().map(FileChannel.MapMode.READ_WRITE, s * (size / slices), size / slices);
                }
            }
        }
        boolean[] stop = new boolean[1];
        if (mode.equals("pace")) {
            Thread pacer = new Thread(() -> {
                while (!stop[0]) {
                    for (MappedByteBuffer[] file : maps) {
                        for (MappedByteBuffer slice : file) {
                            slice.force();
                        }
                    }
                    LockSupport.parkNanos(paceMs * 1_000_000);
                }
            }, "pacer");
            pacer.setDaemon(true);
            pacer.start();
        }
        Thread writer = new Thread(() -> {
            Random random = new Random(7);
            byte[] value = new byte[1024];
            long gap = 1_000_000_000L / rate;
            long next = System.nanoTime();
            while (!stop[0]) {
                random.nextBytes(value);
                for (MappedByteBuffer[] file : maps) {
                    MappedByteBuffer slice = file[random.nextInt(slices)];
                    slice.put(random.nextInt(slice.capacity() - value.length), value);
                }
                next += gap;
                long wait = next - System.nanoTime();
                if (wait > 0) {
                    LockSupport.parkNanos(wait);
                }
            }
        }, "writer");
        writer.setDaemon(true);
        writer.start();
        long[] syncs = new long[1 << 20];
        int count = 0;
        try (FileChannel log = FileChannel.open(folder.resolve("log"), StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer record = ByteBuffer.allocate(120);
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            while (System.nanoTime() < end && count < syncs.length) {
                record.clear();
                log.write(record);
                long start = System.nanoTime();
                log.force(false);
                syncs[count++] = System.nanoTime() - start;
            }
        }
        stop[0] = true;
        long[] sorted = Arrays.copyOf(syncs, count);
        Arrays.sort(sorted);
        long over50 = Arrays.stream(sorted).filter(nanos -> nanos > 50_000_000L).count();
        System.out.printf("%s%s: %d syncs in %d s, p50 %.3f ms, p99 %.3f ms, p99.9 %.3f ms, longest %.1f ms, %d over 50 ms%n", mode,
                mode.equals("pace") ? " " + paceMs + " ms" : "", count, seconds, sorted[count / 2] / 1e6, sorted[(int) (count * 0.99)] / 1e6,
                sorted[(int) (count * 0.999)] / 1e6, sorted[count - 1] / 1e6, over50);
    }

    private WritebackProbe() {
    }
}
