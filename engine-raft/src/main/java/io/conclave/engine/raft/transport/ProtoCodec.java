package io.conclave.engine.raft.transport;

import io.conclave.engine.raft.Limits;
import com.google.protobuf.ByteString;
import io.conclave.api.raft.ClusterConfiguration;
import io.conclave.api.raft.Server;
import io.conclave.api.raft.Suffrage;
import io.conclave.api.storage.LogEntry;
import io.conclave.engine.raft.core.Message;
import io.conclave.engine.raft.core.MessageType;
import io.conclave.engine.raft.transport.proto.Entry;
import io.conclave.engine.raft.transport.proto.RaftMessage;
import io.conclave.engine.raft.transport.proto.SnapshotMeta;
import java.util.ArrayList;
import java.util.List;

/**
 * Between the core's {@link Message} and the wire's {@link RaftMessage}. Decoding checks what the wire
 * cannot: types in range, IDs present, no negative numbers, sizes within {@link Limits}; a bad message is an
 * {@link IllegalArgumentException} that says why, and is dropped by the transport.
 */
public final class ProtoCodec {

    private ProtoCodec() {
    }

    public static RaftMessage toProto(Message message, String clusterId) {
        RaftMessage.Builder builder = RaftMessage.newBuilder()
                .setClusterId(clusterId).setType(message.type().ordinal()).setFrom(message.from()).setTo(message.to())
                .setTerm(message.term()).setLogIndex(message.logIndex()).setLogTerm(message.logTerm())
                .setCommit(message.commit()).setReject(message.reject()).setRejectHint(message.rejectHint())
                .setTransfer(message.transfer()).setContext(message.context()).setDeparted(message.departed());
        for (LogEntry entry : message.entries()) {
            builder.addEntries(Entry.newBuilder().setIndex(entry.index()).setTerm(entry.term())
                    .setType(entry.type().ordinal()).setData(ByteString.copyFrom(entry.data())));
        }
        if (message.snapshot() != null) {
            io.conclave.api.storage.SnapshotMeta meta = message.snapshot();
            SnapshotMeta.Builder snapshot = SnapshotMeta.newBuilder().setId(meta.id()).setLastIndex(meta.lastIndex())
                    .setLastTerm(meta.lastTerm()).setConfigurationIndex(meta.configurationIndex()).setSize(meta.sizeBytes())
                    .setCrc32C(meta.crc32c());
            for (Server server : meta.configuration().servers()) {
                snapshot.addConfiguration(io.conclave.engine.raft.transport.proto.Server.newBuilder()
                        .setId(server.id()).setAddress(server.address()).setVoter(server.isVoter()));
            }
            builder.setSnapshot(snapshot);
        }
        return builder.build();
    }

    public static Message fromProto(RaftMessage proto) {
        require(proto.getType() < MessageType.values().length, "unknown message type " + proto.getType());
        require(!proto.getFrom().isEmpty() && !proto.getTo().isEmpty(), "a message needs a sender and a receiver");
        require(proto.getTerm() >= 0 && proto.getLogIndex() >= 0 && proto.getLogTerm() >= 0 && proto.getCommit() >= 0
                && proto.getRejectHint() >= 0 && proto.getContext() >= 0, "negative numbers in a message");
        MessageType type = MessageType.ofOrdinal(proto.getType());
        List<LogEntry> entries = new ArrayList<>(proto.getEntriesCount());
        long expected = proto.getLogIndex() + 1;
        for (Entry entry : proto.getEntriesList()) {
            require(entry.getType() < LogEntry.Type.values().length, "unknown entry type " + entry.getType());
            require(entry.getIndex() == expected++, "entries out of order at " + entry.getIndex());
            require(entry.getTerm() >= 0 && entry.getData().size() <= Limits.MAX_ENTRY_BYTES, "bad entry " + entry.getIndex());
            entries.add(new LogEntry(entry.getIndex(), entry.getTerm(), LogEntry.Type.ofOrdinal(entry.getType()),
                    entry.getData().toByteArray()));
        }
        io.conclave.api.storage.SnapshotMeta snapshot = null;
        if (proto.hasSnapshot()) {
            SnapshotMeta meta = proto.getSnapshot();
            require(!meta.getId().isEmpty() && meta.getLastIndex() >= 0 && meta.getSize() >= 0
                    && meta.getSize() <= Limits.MAX_SNAPSHOT_BYTES, "bad snapshot metadata");
            List<Server> servers = new ArrayList<>();
            for (io.conclave.engine.raft.transport.proto.Server server : meta.getConfigurationList()) {
                require(!server.getId().isEmpty(), "a server without an id in a snapshot's configuration");
                servers.add(new Server(server.getId(), server.getAddress(), server.getVoter() ? Suffrage.VOTER : Suffrage.NONVOTER));
            }
            try {
                snapshot = new io.conclave.api.storage.SnapshotMeta(meta.getId(), meta.getLastIndex(), meta.getLastTerm(),
                        new ClusterConfiguration(servers), meta.getConfigurationIndex(), meta.getSize(), meta.getCrc32C());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("bad snapshot metadata: " + e.getMessage(), e);
            }
        }
        require(type != MessageType.INSTALL_SNAPSHOT || snapshot != null, "INSTALL_SNAPSHOT without its metadata");
        return new Message(type, proto.getFrom(), proto.getTo(), proto.getTerm(), proto.getLogIndex(), proto.getLogTerm(),
                entries, proto.getCommit(), proto.getReject(), proto.getRejectHint(), proto.getTransfer(), proto.getContext(),
                snapshot, proto.getDeparted());
    }

    private static void require(boolean ok, String why) {
        if (!ok) {
            throw new IllegalArgumentException(why);
        }
    }
}
