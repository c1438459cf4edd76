package io.conclave.engine.raft.kv;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The catalog's records as bytes: in the log (a registration, a deregistration), in snapshots and in a restore's
 * chunks. Every length is read against a bound before anything is allocated, so damaged bytes are refused
 * ({@link IOException}, or {@link IllegalArgumentException} for a log entry's payload), never followed.
 */
final class CatalogCodec {

    /** The first byte of every payload: the format, for the day it changes. */
    static final byte FORMAT = 1;
    /** The longest text a record may hold once decoded: a log entry's size bounds everything anyway. */
    static final int MAX_TEXT_BYTES = 1024 * 1024;
    /** The most items in one list or map of a record. */
    static final int MAX_ITEMS = 64 * 1024;

    private CatalogCodec() {
    }

    // ---------------------------------------------------------------- payloads of log entries

    static byte[] encode(CatalogRegistration registration) {
        return bytes(data -> {
            data.writeByte(FORMAT);
            writeText(data, registration.id());
            writeText(data, registration.node());
            writeText(data, registration.address());
            writeText(data, registration.datacenter());
            writeMap(data, registration.taggedAddresses());
            writeMap(data, registration.nodeMeta());
            data.writeBoolean(registration.service() != null);
            if (registration.service() != null) {
                writeService(data, registration.service());
            }
            data.writeBoolean(registration.check() != null);
            if (registration.check() != null) {
                writeCheck(data, registration.check());
            }
            data.writeInt(registration.checks().size());
            for (HealthCheck check : registration.checks()) {
                writeCheck(data, check);
            }
            data.writeBoolean(registration.skipNodeUpdate());
        });
    }

    static CatalogRegistration decodeRegistration(byte[] bytes) {
        return decode(bytes, data -> {
            String id = readText(data);
            String node = readText(data);
            String address = readText(data);
            String datacenter = readText(data);
            Map<String, String> tagged = readMap(data);
            Map<String, String> meta = readMap(data);
            NodeService service = data.readBoolean() ? readService(data) : null;
            HealthCheck check = data.readBoolean() ? readCheck(data) : null;
            int count = count(data);
            List<HealthCheck> checks = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                checks.add(readCheck(data));
            }
            return new CatalogRegistration(id, node, address, datacenter, tagged, meta, service, check, checks, data.readBoolean());
        });
    }

    static byte[] encode(CatalogDeregistration deregistration) {
        return bytes(data -> {
            data.writeByte(FORMAT);
            writeText(data, deregistration.node());
            writeText(data, deregistration.serviceId());
            writeText(data, deregistration.checkId());
            writeText(data, deregistration.datacenter());
        });
    }

    static CatalogDeregistration decodeDeregistration(byte[] bytes) {
        return decode(bytes, data -> new CatalogDeregistration(readText(data), readText(data), readText(data), readText(data)));
    }

    // ---------------------------------------------------------------- records

    static void writeNode(DataOutputStream data, CatalogNode node) throws IOException {
        writeText(data, node.id());
        writeText(data, node.node());
        writeText(data, node.address());
        writeText(data, node.datacenter());
        writeMap(data, node.taggedAddresses());
        writeMap(data, node.meta());
        data.writeLong(node.createIndex());
        data.writeLong(node.modifyIndex());
    }

    static CatalogNode readNode(DataInputStream data) throws IOException {
        return new CatalogNode(readText(data), readText(data), readText(data), readText(data), readMap(data), readMap(data),
                data.readLong(), data.readLong());
    }

    static void writeService(DataOutputStream data, NodeService service) throws IOException {
        writeText(data, service.id());
        writeText(data, service.service());
        writeList(data, service.tags());
        writeText(data, service.address());
        data.writeInt(service.taggedAddresses().size());
        for (Map.Entry<String, NodeService.ServiceAddress> entry : service.taggedAddresses().entrySet()) {
            writeText(data, entry.getKey());
            writeText(data, entry.getValue().address());
            data.writeInt(entry.getValue().port());
        }
        writeMap(data, service.meta());
        data.writeInt(service.port());
        data.writeInt(service.weights().passing());
        data.writeInt(service.weights().warning());
        data.writeBoolean(service.enableTagOverride());
        writeText(data, service.kind());
        data.writeLong(service.createIndex());
        data.writeLong(service.modifyIndex());
    }

    static NodeService readService(DataInputStream data) throws IOException {
        String id = readText(data);
        String name = readText(data);
        List<String> tags = readList(data);
        String address = readText(data);
        int count = count(data);
        Map<String, NodeService.ServiceAddress> tagged = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            tagged.put(readText(data), new NodeService.ServiceAddress(readText(data), data.readInt()));
        }
        Map<String, String> meta = readMap(data);
        int port = data.readInt();
        NodeService.Weights weights = new NodeService.Weights(data.readInt(), data.readInt());
        boolean override = data.readBoolean();
        String kind = readText(data);
        return new NodeService(id, name, tags, address, tagged, meta, port, weights, override, kind, data.readLong(), data.readLong());
    }

    static void writeCheck(DataOutputStream data, HealthCheck check) throws IOException {
        writeText(data, check.node());
        writeText(data, check.checkId());
        writeText(data, check.name());
        writeText(data, check.status());
        writeText(data, check.notes());
        writeText(data, check.output());
        writeText(data, check.serviceId());
        writeText(data, check.serviceName());
        writeList(data, check.serviceTags());
        writeText(data, check.type());
        HealthCheck.Definition definition = check.definition();
        writeText(data, definition.http());
        data.writeInt(definition.header().size());
        for (Map.Entry<String, List<String>> header : definition.header().entrySet()) {
            writeText(data, header.getKey());
            writeList(data, header.getValue());
        }
        writeText(data, definition.method());
        writeText(data, definition.body());
        writeText(data, definition.tlsServerName());
        data.writeBoolean(definition.tlsSkipVerify());
        writeText(data, definition.tcp());
        data.writeLong(definition.interval().toNanos());
        data.writeLong(definition.timeout().toNanos());
        data.writeLong(definition.deregisterCriticalServiceAfter().toNanos());
        data.writeLong(check.createIndex());
        data.writeLong(check.modifyIndex());
    }

    static HealthCheck readCheck(DataInputStream data) throws IOException {
        String node = readText(data);
        String checkId = readText(data);
        String name = readText(data);
        String status = readText(data);
        String notes = readText(data);
        String output = readText(data);
        String serviceId = readText(data);
        String serviceName = readText(data);
        List<String> serviceTags = readList(data);
        String type = readText(data);
        String http = readText(data);
        int headers = count(data);
        Map<String, List<String>> header = new LinkedHashMap<>();
        for (int i = 0; i < headers; i++) {
            header.put(readText(data), readList(data));
        }
        HealthCheck.Definition definition = new HealthCheck.Definition(http, header, readText(data), readText(data), readText(data),
                data.readBoolean(), readText(data), Duration.ofNanos(data.readLong()), Duration.ofNanos(data.readLong()),
                Duration.ofNanos(data.readLong()));
        return new HealthCheck(node, checkId, name, status, notes, output, serviceId, serviceName, serviceTags, type, definition,
                data.readLong(), data.readLong());
    }

    // ---------------------------------------------------------------- parts

    static void writeText(DataOutputStream data, String text) throws IOException {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        data.writeInt(bytes.length);
        data.write(bytes);
    }

    static String readText(DataInputStream data) throws IOException {
        int length = data.readInt();
        if (length < 0 || length > MAX_TEXT_BYTES) {
            throw new IOException("damaged catalog record: a text of " + length + " bytes");
        }
        byte[] bytes = new byte[length];
        data.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static void writeList(DataOutputStream data, List<String> list) throws IOException {
        data.writeInt(list.size());
        for (String item : list) {
            writeText(data, item);
        }
    }

    private static List<String> readList(DataInputStream data) throws IOException {
        int count = count(data);
        List<String> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(readText(data));
        }
        return list;
    }

    private static void writeMap(DataOutputStream data, Map<String, String> map) throws IOException {
        data.writeInt(map.size());
        for (Map.Entry<String, String> entry : map.entrySet()) {
            writeText(data, entry.getKey());
            writeText(data, entry.getValue());
        }
    }

    private static Map<String, String> readMap(DataInputStream data) throws IOException {
        int count = count(data);
        Map<String, String> map = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            map.put(readText(data), readText(data));
        }
        return map;
    }

    static int count(DataInputStream data) throws IOException {
        int count = data.readInt();
        if (count < 0 || count > MAX_ITEMS) {
            throw new IOException("damaged catalog record: " + count + " items");
        }
        return count;
    }

    // ---------------------------------------------------------------- framing

    @FunctionalInterface
    interface Writer {
        void write(DataOutputStream data) throws IOException;
    }

    @FunctionalInterface
    interface Reader<T> {
        T read(DataInputStream data) throws IOException;
    }

    static byte[] bytes(Writer writer) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(256);
        try {
            DataOutputStream data = new DataOutputStream(bytes);
            writer.write(data);
            data.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a byte array does not fail
        }
        return bytes.toByteArray();
    }

    private static <T> T decode(byte[] bytes, Reader<T> reader) {
        try {
            DataInputStream data = new DataInputStream(new ByteArrayInputStream(bytes));
            byte format = data.readByte();
            if (format != FORMAT) {
                throw new IllegalArgumentException("a catalog command of format " + format + ", which this version does not read");
            }
            T value = reader.read(data);
            if (data.available() > 0) {
                throw new IllegalArgumentException("trailing bytes in a catalog command");
            }
            return value;
        } catch (IOException e) {
            throw new IllegalArgumentException("damaged catalog command: " + e.getMessage(), e);
        }
    }
}
