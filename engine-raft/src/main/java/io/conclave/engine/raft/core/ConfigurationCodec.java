package io.conclave.engine.raft.core;

import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Encodes a {@link ClusterConfiguration} as the data of a CONFIGURATION log entry: a version byte, a
 * server count, then per server its suffrage, ID and address (length-prefixed UTF-8). Decoding checks
 * every length and throws {@link IllegalArgumentException} on damaged data.
 */
public final class ConfigurationCodec {

    private static final byte VERSION = 1;
    private static final int MAX_SERVERS = 1024;
    private static final int MAX_STRING_BYTES = 1024;

    private ConfigurationCodec() {
    }

    public static byte[] encode(ClusterConfiguration configuration) {
        byte[] buffer = new byte[64];
        int position = 0;
        buffer[position++] = VERSION;
        buffer = ensure(buffer, position, 4);
        position = putInt(buffer, position, configuration.servers().size());
        for (Server server : configuration.servers()) {
            byte[] id = server.id().getBytes(StandardCharsets.UTF_8);
            byte[] address = server.address().getBytes(StandardCharsets.UTF_8);
            buffer = ensure(buffer, position, 1 + 4 + id.length + 4 + address.length);
            buffer[position++] = (byte) server.suffrage().ordinal();
            position = putBytes(buffer, putInt(buffer, position, id.length), id);
            position = putBytes(buffer, putInt(buffer, position, address.length), address);
        }
        return Arrays.copyOf(buffer, position);
    }

    public static ClusterConfiguration decode(byte[] data) {
        int[] position = {0};
        require(data.length >= 5 && data[0] == VERSION, "bad header");
        position[0] = 1;
        int count = getInt(data, position);
        require(count >= 0 && count <= MAX_SERVERS, "server count " + count);
        List<Server> servers = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            require(position[0] < data.length, "truncated");
            int suffrage = data[position[0]++];
            require(suffrage >= 0 && suffrage < Suffrage.values().length, "suffrage " + suffrage);
            String id = getString(data, position);
            String address = getString(data, position);
            servers.add(new Server(id, address, Suffrage.values()[suffrage]));
        }
        require(position[0] == data.length, "trailing bytes");
        return new ClusterConfiguration(servers);
    }

    private static byte[] ensure(byte[] buffer, int position, int more) {
        int needed = position + more;
        return needed <= buffer.length ? buffer : Arrays.copyOf(buffer, Math.max(needed, buffer.length * 2));
    }

    private static int putInt(byte[] buffer, int position, int value) {
        buffer[position] = (byte) (value >>> 24);
        buffer[position + 1] = (byte) (value >>> 16);
        buffer[position + 2] = (byte) (value >>> 8);
        buffer[position + 3] = (byte) value;
        return position + 4;
    }

    private static int putBytes(byte[] buffer, int position, byte[] bytes) {
        System.arraycopy(bytes, 0, buffer, position, bytes.length);
        return position + bytes.length;
    }

    private static int getInt(byte[] data, int[] position) {
        require(position[0] + 4 <= data.length, "truncated");
        int p = position[0];
        position[0] += 4;
        return ((data[p] & 0xff) << 24) | ((data[p + 1] & 0xff) << 16) | ((data[p + 2] & 0xff) << 8) | (data[p + 3] & 0xff);
    }

    private static String getString(byte[] data, int[] position) {
        int length = getInt(data, position);
        require(length >= 0 && length <= MAX_STRING_BYTES && position[0] + length <= data.length, "string length " + length);
        String text = new String(data, position[0], length, StandardCharsets.UTF_8);
        position[0] += length;
        return text;
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            throw new IllegalArgumentException("damaged configuration entry: " + what);
        }
    }
}
