package io.conclave.plugin.storage.mapdb.bench;

import io.conclave.api.storage.LogEntry;
import io.conclave.api.storage.LogStore;
import io.conclave.api.storage.Storage;
import io.conclave.plugin.storage.mapdb.FileStorage;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Appending batches of 256-byte entries with sync on: the storage plugin's log, and beside it, in the same
 * run, a plain {@code FileChannel} append + {@code force} of the same bytes — the disk's own limit — so that
 * the result reads as a ratio. One operation is one batch; entries per second = ops/s x batch.
 * Run: {@code mvn -B -pl plugin-storage-mapdb -am verify -Pbench -DskipTests}.
 */
@State(Scope.Thread)
@BenchmarkMode({Mode.Throughput, Mode.SampleTime})
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class AppendBenchmark {

    static final int ENTRY_BYTES = 256;

    @Param({"1", "64", "1024"})
    public int batch;

    private Path folder;
    private Storage storage;
    private LogStore log;
    private FileChannel plain;
    private long plainPosition;
    private List<LogEntry> entries;
    private ByteBuffer plainBytes;
    private long next;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        folder = Files.createTempDirectory("append-bench");
        storage = FileStorage.open(folder.resolve("store"));
        log = storage.log();
        plain = FileChannel.open(folder.resolve("plain.log"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        plainBytes = ByteBuffer.allocate(batch * (ENTRY_BYTES + 25));
        next = 1;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        storage.close();
        plain.close();
        try (Stream<Path> files = Files.walk(folder)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }

    @Benchmark
    public long storageAppend() {
        List<LogEntry> list = new ArrayList<>(batch);
        byte[] data = new byte[ENTRY_BYTES];
        for (int i = 0; i < batch; i++) {
            list.add(new LogEntry(next++, 1, LogEntry.Type.COMMAND, data));
        }
        log.append(list);
        return next;
    }

    @Benchmark
    public long plainFileAppendAndForce() throws IOException {
        plainBytes.clear(); // the same bytes as the batch, with the same framing overhead
        while (plainBytes.hasRemaining()) {
            plainPosition += plain.write(plainBytes, plainPosition);
        }
        plain.force(false);
        return plainPosition;
    }
}
