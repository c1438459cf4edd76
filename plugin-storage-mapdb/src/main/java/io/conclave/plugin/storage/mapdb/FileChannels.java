package io.conclave.plugin.storage.mapdb;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Positional reads and writes that finish what they start, and the folder sync that makes a create or rename durable. */
final class FileChannels {

    private FileChannels() {
    }

    /** Reads until {@code buffer} is full; an end of file before that is an {@link IOException}. */
    static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, at);
            if (read < 0) {
                throw new IOException("unexpected end of file at " + at);
            }
            at += read;
        }
    }

    /** Writes all of {@code buffer} at {@code position}; returns the position after it. */
    static long writeFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        long at = position;
        while (buffer.hasRemaining()) {
            at += channel.write(buffer, at);
        }
        return at;
    }

    /** Syncs a folder, so that the files created, renamed or deleted in it stay so after a crash. */
    static void syncFolder(Path folder) throws IOException {
        try (FileChannel directory = FileChannel.open(folder, StandardOpenOption.READ)) {
            directory.force(true);
        }
    }
}
