package io.conclave.plugin.storage.mapdb;

import io.conclave.api.storage.LogEntry;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The child process of the crash tests: appends batches to a MapDB log forever and prints {@code ACK <index>}
 * once the append of a batch ending at that index has returned (and so is durable). Entry contents are a
 * function of their index, so that the parent can check every byte after a SIGKILL.
 *
 * <p>Arguments: folder, entries per batch, bytes per entry.
 */
public final class CrashWriter {

    private CrashWriter() {
    }

    /** The content of the entry at {@code index}. */
    static byte[] content(long index, int bytes) {
        byte[] data = new byte[bytes];
        new Random(index * 0x9E3779B97F4A7C15L).nextBytes(data);
        return data;
    }

    public static void main(String[] args) {
        Path folder = Path.of(args[0]);
        int batch = Integer.parseInt(args[1]);
        int bytes = Integer.parseInt(args[2]);
        PrintStream out = System.out;
        try (MapDbStorage storage = MapDbStorage.open(folder)) {
            long next = storage.log().lastIndex() + 1;
            out.println("START " + next);
            out.flush();
            while (true) {
                List<LogEntry> entries = new ArrayList<>(batch);
                for (int i = 0; i < batch; i++, next++) {
                    entries.add(new LogEntry(next, 1, LogEntry.Type.COMMAND, content(next, bytes)));
                }
                storage.log().append(entries);
                out.println("ACK " + (next - 1));
                out.flush();
            }
        }
    }
}
