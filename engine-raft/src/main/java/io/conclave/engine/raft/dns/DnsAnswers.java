package io.conclave.engine.raft.dns;

import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogNode;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.NodeService;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.random.RandomGenerator;
import org.xbill.DNS.AAAARecord;
import org.xbill.DNS.ARecord;
import org.xbill.DNS.CNAMERecord;
import org.xbill.DNS.DClass;
import org.xbill.DNS.Flags;
import org.xbill.DNS.Header;
import org.xbill.DNS.Message;
import org.xbill.DNS.NSRecord;
import org.xbill.DNS.Name;
import org.xbill.DNS.OPTRecord;
import org.xbill.DNS.Opcode;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.SOARecord;
import org.xbill.DNS.SRVRecord;
import org.xbill.DNS.Section;
import org.xbill.DNS.TXTRecord;
import org.xbill.DNS.TextParseException;
import org.xbill.DNS.Type;

/**
 * Consul's DNS answers from one catalog, as a pure function of the query, the catalog and the settings (no I/O, no
 * clock but the SOA serial given, no thread): the names Consul answers under its domain and how.
 *
 * <ul>
 *   <li>{@code [tag.]<service>.service[.<dc>].<domain>} and RFC 2782's {@code _<service>._<tag>.service[.<dc>].<domain>}
 *       ({@code _tcp}/{@code _udp}: any tag): the healthy instances (no critical or maintenance check on the instance or
 *       its node; with {@code only_passing}, no warning either), shuffled; A/AAAA of each instance's address (its own,
 *       else its node's; a host name: a CNAME), SRV with the target {@code <node>.node.<dc>.<domain>} (or
 *       {@code <hex>.addr.<dc>.<domain>} for an instance with an address of its own) and its address in the additional
 *       section, with the node's metadata as TXT there too ({@code enable_additional_node_meta_txt});</li>
 *   <li>{@code <node>.node[.<dc>].<domain>}: the node's address, and its metadata as TXT ({@code key=value});</li>
 *   <li>{@code <hex>.addr[.<dc>].<domain>}: the address the hex spells (8 digits: IPv4, 32: IPv6);</li>
 *   <li>the domain itself: SOA, and NS of up to 3 servers.</li>
 * </ul>
 * A name under the domain that does not exist: NXDOMAIN with the SOA in the authority section; one that exists without
 * a record of the type asked: no answer (NODATA) with the SOA. A name outside both domains is not this class's: see
 * {@link #inDomains}. The TTLs are {@code node_ttl}, {@code service_ttl} (by name, or the longest prefix ending in
 * {@code *}) and the SOA's {@code min_ttl}.
 */
public final class DnsAnswers {

    /** At most this many NS records (Consul's). */
    static final int MAX_NAME_SERVERS = 3;
    /** The service every server registers in the catalog ({@code CatalogReconciler}). */
    static final String SERVERS_SERVICE = "consul";

    /**
     * What the answers depend on besides the catalog.
     *
     * @param domain         the domain answered, absolute ({@code conclave.})
     * @param altDomain      a second domain answered, absolute, or {@code null}
     * @param datacenter     this cluster's datacenter: the only one answered
     * @param nodeTtl        seconds
     * @param serviceTtl     seconds, by service name (lower case) or by prefix ending in {@code *}
     * @param aRecordLimit   the most A/AAAA records of an answer, 0 for no limit
     * @param onlyPassing    whether an instance with a warning is left out
     * @param nodeMetaTxt    whether SRV answers carry the nodes' metadata as TXT in the additional section
     * @param soaRefresh     seconds
     * @param soaRetry       seconds
     * @param soaExpire      seconds
     * @param soaMinTtl      seconds: the SOA's own TTL and minimum (NXDOMAIN's negative caching)
     */
    public record Settings(Name domain, Name altDomain, String datacenter, long nodeTtl, Map<String, Long> serviceTtl, int aRecordLimit,
                           boolean onlyPassing, boolean nodeMetaTxt, long soaRefresh, long soaRetry, long soaExpire, long soaMinTtl) {

        public Settings {
            serviceTtl = Map.copyOf(serviceTtl);
        }

        /** Settings from the configuration's words ({@code domain} without its final dot). */
        public static Settings of(String domain, Optional<String> altDomain, String datacenter, Duration nodeTtl,
                                  Map<String, Duration> serviceTtl, int aRecordLimit, boolean onlyPassing, boolean nodeMetaTxt,
                                  long soaRefresh, long soaRetry, long soaExpire, long soaMinTtl) {
            Map<String, Long> ttls = new java.util.HashMap<>();
            serviceTtl.forEach((name, ttl) -> ttls.put(name.toLowerCase(Locale.ROOT), ttl.toSeconds()));
            return new Settings(absolute(domain), altDomain.map(DnsAnswers::absolute).orElse(null), datacenter, nodeTtl.toSeconds(), ttls,
                    aRecordLimit, onlyPassing, nodeMetaTxt, soaRefresh, soaRetry, soaExpire, soaMinTtl);
        }

        long serviceTtl(String service) {
            String name = service.toLowerCase(Locale.ROOT);
            Long exact = serviceTtl.get(name);
            if (exact != null) {
                return exact;
            }
            long found = 0;
            int longest = -1;
            for (Map.Entry<String, Long> entry : serviceTtl.entrySet()) {
                String key = entry.getKey();
                if (key.endsWith("*") && name.startsWith(key.substring(0, key.length() - 1)) && key.length() > longest) {
                    longest = key.length();
                    found = entry.getValue();
                }
            }
            return found;
        }
    }

    /**
     * What the asker may read, as the ACL system says (Consul answers DNS with the agent's default token; Conclave, with
     * the anonymous token's rights): a node or an instance it may not read is left out, as if it did not exist.
     */
    public interface Access {
        /** Everything: ACLs are off. */
        Access ALL = new Access() {
            @Override
            public boolean nodeRead(String node) {
                return true;
            }

            @Override
            public boolean serviceRead(String service) {
                return true;
            }
        };

        boolean nodeRead(String node);

        boolean serviceRead(String service);
    }

    private DnsAnswers() {
    }

    static Name absolute(String domain) {
        try {
            return Name.fromString(domain.endsWith(".") ? domain : domain + ".");
        } catch (TextParseException e) {
            throw new IllegalArgumentException("not a DNS name: " + domain, e);
        }
    }

    /** The domain ({@code domain} or {@code alt_domain}) {@code name} is under, or {@code null}. */
    public static Name domainOf(Name name, Settings settings) {
        if (name.subdomain(settings.domain())) {
            return settings.domain();
        }
        if (settings.altDomain() != null && name.subdomain(settings.altDomain())) {
            return settings.altDomain();
        }
        return null;
    }

    /** Whether {@code query} asks a name this server answers itself. */
    public static boolean inDomains(Message query, Settings settings) {
        Record question = query.getQuestion();
        return question != null && domainOf(question.getName(), settings) != null;
    }

    /**
     * A reply to {@code query} with the header a reply takes (its ID, QR, its RD, RA when {@code recursionAvailable}),
     * the question, {@code rcode}, and an OPT record when the query had one.
     */
    public static Message reply(Message query, int rcode, boolean recursionAvailable) {
        Header header = new Header(query.getHeader().getID());
        header.setFlag(Flags.QR);
        if (query.getHeader().getFlag(Flags.RD)) {
            header.setFlag(Flags.RD);
        }
        if (recursionAvailable) {
            header.setFlag(Flags.RA);
        }
        header.setOpcode(query.getHeader().getOpcode());
        header.setRcode(rcode);
        Message reply = new Message();
        reply.setHeader(header);
        Record question = query.getQuestion();
        if (question != null) {
            reply.addRecord(question, Section.QUESTION);
        }
        OPTRecord opt = query.getOPT();
        if (opt != null) {
            reply.addRecord(new OPTRecord(DnsServer.MAX_UDP_PAYLOAD_BYTES, 0, 0), Section.ADDITIONAL);
        }
        return reply;
    }

    /**
     * The answer to {@code query}, a name under one of the domains, from {@code catalog}. {@code serial} is the SOA's
     * serial (the time, in seconds); {@code random} shuffles the instances.
     */
    public static Message answer(Message query, Catalog catalog, Settings settings, long serial, RandomGenerator random,
                                 boolean recursionAvailable) {
        return answer(query, catalog, settings, serial, random, recursionAvailable, Access.ALL);
    }

    /** As {@link #answer(Message, Catalog, Settings, long, RandomGenerator, boolean)}, leaving out what {@code access} denies. */
    public static Message answer(Message query, Catalog catalog, Settings settings, long serial, RandomGenerator random,
                                 boolean recursionAvailable, Access access) {
        Message reply = reply(query, Rcode.NOERROR, recursionAvailable);
        if (query.getHeader().getOpcode() != Opcode.QUERY) {
            reply.getHeader().setRcode(Rcode.NOTIMP);
            return reply;
        }
        Record question = query.getQuestion();
        Name name = question.getName();
        Name domain = domainOf(name, settings);
        reply.getHeader().setFlag(Flags.AA);
        int type = question.getType();
        if (type == Type.AXFR || type == Type.IXFR) {
            reply.getHeader().setRcode(Rcode.NOTIMP); // no zone transfers: the catalog is read through its API
            return reply;
        }
        Answers answers = new Answers(reply, question, domain, settings, serial, access);
        List<String> labels = labels(name, domain);
        if (labels.isEmpty()) {
            answers.apex(catalog, type);
            return reply;
        }
        int kind = kindAt(labels);
        if (kind < 0) {
            return answers.nameError();
        }
        if (kind == labels.size() - 2 && !labels.get(kind + 1).equals(settings.datacenter().toLowerCase(Locale.ROOT))) {
            return answers.nameError(); // another datacenter: this cluster is the only one
        }
        List<String> before = labels.subList(0, kind);
        return switch (labels.get(kind)) {
            case "service" -> answers.service(catalog, before, type, random);
            case "node" -> answers.node(catalog, String.join(".", before), type);
            case "addr" -> answers.addr(before, type);
            default -> answers.nameError();
        };
    }

    /** What a query is about, so that a client agent asks a server for that part of the catalog only. */
    public enum Kind {
        /** A service's instances: {@link Target#name()} is the service. */
        SERVICE,
        /** A node: {@link Target#name()} is the node. */
        NODE,
        /** The domain itself: the servers (the {@code consul} service). */
        APEX,
        /** Anything else: answered without the catalog (an address, or a name that does not exist). */
        NONE
    }

    /** What a query asks about: its kind and name. */
    public record Target(Kind kind, String name) {
    }

    /** What {@code query} (a name under one of the domains) asks about, read as {@link #answer} reads it. */
    public static Target target(Message query, Settings settings) {
        Record question = query.getQuestion();
        Name domain = question == null ? null : domainOf(question.getName(), settings);
        if (domain == null) {
            return new Target(Kind.NONE, "");
        }
        List<String> labels = labels(question.getName(), domain);
        if (labels.isEmpty()) {
            return new Target(Kind.APEX, SERVERS_SERVICE);
        }
        int kind = kindAt(labels);
        if (kind < 0) {
            return new Target(Kind.NONE, "");
        }
        List<String> before = labels.subList(0, kind);
        return switch (labels.get(kind)) {
            case "service" -> before.size() == 2 && before.get(0).startsWith("_") && before.get(1).startsWith("_")
                    ? new Target(Kind.SERVICE, before.get(0).substring(1))
                    : before.isEmpty() || before.size() > 2 ? new Target(Kind.NONE, "") : new Target(Kind.SERVICE, before.get(before.size() - 1));
            case "node" -> before.isEmpty() ? new Target(Kind.NONE, "") : new Target(Kind.NODE, String.join(".", before));
            default -> new Target(Kind.NONE, "");
        };
    }

    /** {@code name}'s labels below {@code domain}, left to right, in lower case. */
    static List<String> labels(Name name, Name domain) {
        int count = name.labels() - domain.labels();
        List<String> labels = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            labels.add(name.getLabelString(i).toLowerCase(Locale.ROOT));
        }
        return labels;
    }

    private static final Set<String> KINDS = Set.of("service", "node", "addr");

    /** Where the kind label is: the last, or the one before a datacenter; -1 when neither is a kind. */
    private static int kindAt(List<String> labels) {
        int last = labels.size() - 1;
        if (KINDS.contains(labels.get(last)) && last > 0) {
            return last;
        }
        if (last >= 2 && KINDS.contains(labels.get(last - 1))) {
            return last - 1;
        }
        return -1;
    }

    /** Whether {@code instance} is answered: no failing check on it or its node. */
    static boolean healthy(Catalog catalog, Catalog.Instance instance, boolean onlyPassing) {
        for (HealthCheck check : catalog.checks(instance)) {
            String status = check.status();
            if (status.equals(HealthCheck.CRITICAL) || status.equals(HealthCheck.MAINTENANCE)
                    || onlyPassing && status.equals(HealthCheck.WARNING)) {
                return false;
            }
        }
        return true;
    }

    private static boolean anyWarning(Catalog catalog, Catalog.Instance instance) {
        return catalog.checks(instance).stream().anyMatch(check -> check.status().equals(HealthCheck.WARNING));
    }

    /** The address literal {@code text} parses to, or {@code null} for a host name (never looked up). */
    static InetAddress literal(String text) {
        if (text.isEmpty() || !(text.indexOf(':') >= 0 || text.chars().allMatch(c -> c == '.' || Character.isDigit(c)))) {
            return null;
        }
        try {
            return InetAddress.getByName(text); // digits and dots, or a ':': parsed as a literal, never looked up
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /** One reply being filled. */
    private static final class Answers {
        private final Message reply;
        private final Record question;
        private final Name domain;
        private final Settings settings;
        private final long serial;
        private final Access access;

        Answers(Message reply, Record question, Name domain, Settings settings, long serial, Access access) {
            this.reply = reply;
            this.question = question;
            this.domain = domain;
            this.settings = settings;
            this.serial = serial;
            this.access = access;
        }

        private boolean readable(Catalog.Instance instance) {
            return access.serviceRead(instance.service().service()) && access.nodeRead(instance.node().node());
        }

        private Name name(String relative) {
            try {
                return Name.fromString(relative, domain);
            } catch (TextParseException e) {
                return null; // a node name that is no DNS name: left out of the answer
            }
        }

        SOARecord soa() {
            Name host = name("ns");
            Name admin = name("hostmaster");
            return new SOARecord(domain, DClass.IN, settings.soaMinTtl(), host, admin, serial & 0xFFFF_FFFFL, settings.soaRefresh(),
                    settings.soaRetry(), settings.soaExpire(), settings.soaMinTtl());
        }

        Message nameError() {
            reply.getHeader().setRcode(Rcode.NXDOMAIN);
            reply.addRecord(soa(), Section.AUTHORITY);
            return reply;
        }

        Message noData() {
            reply.addRecord(soa(), Section.AUTHORITY);
            return reply;
        }

        void apex(Catalog catalog, int type) {
            if (type == Type.SOA || type == Type.ANY) {
                reply.addRecord(soa(), Section.ANSWER);
            }
            if (type == Type.NS || type == Type.ANY) {
                int added = 0;
                for (Catalog.Instance server : catalog.instances(SERVERS_SERVICE)) {
                    if (added == MAX_NAME_SERVERS || !healthy(catalog, server, false) || !readable(server)) {
                        continue;
                    }
                    Name target = nodeName(server.node().node());
                    InetAddress address = literal(server.node().address());
                    if (target == null || address == null) {
                        continue;
                    }
                    reply.addRecord(new NSRecord(domain, DClass.IN, settings.nodeTtl(), target), Section.ANSWER);
                    reply.addRecord(addressRecord(target, settings.nodeTtl(), address), Section.ADDITIONAL);
                    added++;
                }
            }
            if (reply.getSection(Section.ANSWER).isEmpty()) {
                noData();
            }
        }

        private Name nodeName(String node) {
            return name(node + ".node." + settings.datacenter());
        }

        Message node(Catalog catalog, String nodeName, int type) {
            CatalogNode node = nodeName.isEmpty() ? null : catalog.node(nodeName);
            if (node == null || !access.nodeRead(node.node())) {
                return nameError();
            }
            Name owner = question.getName();
            long ttl = settings.nodeTtl();
            if (type == Type.A || type == Type.AAAA || type == Type.ANY || type == Type.CNAME) {
                addAddress(owner, ttl, node.address(), type, Section.ANSWER);
            }
            if (type == Type.TXT || type == Type.ANY) {
                for (Record txt : metaTxt(owner, ttl, node)) {
                    reply.addRecord(txt, Section.ANSWER);
                }
            }
            if (reply.getSection(Section.ANSWER).isEmpty()) {
                return noData();
            }
            return reply;
        }

        /** An A, AAAA or CNAME record at {@code owner} for {@code address}, when {@code type} asks for it. */
        private void addAddress(Name owner, long ttl, String address, int type, int section) {
            InetAddress literal = literal(address);
            if (literal == null) {
                Name target = address.isEmpty() ? null : hostName(address);
                if (target != null) {
                    reply.addRecord(new CNAMERecord(owner, DClass.IN, ttl, target), section);
                }
                return;
            }
            boolean v4 = literal instanceof Inet4Address;
            if (type == Type.ANY || type == Type.SRV || (v4 && type == Type.A) || (!v4 && type == Type.AAAA)) {
                reply.addRecord(addressRecord(owner, ttl, literal), section);
            }
        }

        private List<Record> metaTxt(Name owner, long ttl, CatalogNode node) {
            List<Record> records = new ArrayList<>();
            node.meta().forEach((key, value) -> records.add(new TXTRecord(owner, DClass.IN, ttl, key + "=" + value)));
            return records;
        }

        Message addr(List<String> before, int type) {
            if (before.size() != 1) {
                return nameError();
            }
            String hex = before.get(0);
            InetAddress address;
            try {
                if (hex.length() != 8 && hex.length() != 32) {
                    return nameError();
                }
                address = InetAddress.getByAddress(HexFormat.of().parseHex(hex));
            } catch (IllegalArgumentException | UnknownHostException e) {
                return nameError();
            }
            boolean v4 = address instanceof Inet4Address;
            if (type == Type.ANY || (v4 && type == Type.A) || (!v4 && type == Type.AAAA)) {
                reply.addRecord(addressRecord(question.getName(), settings.nodeTtl(), address), Section.ANSWER);
                return reply;
            }
            return noData();
        }

        Message service(Catalog catalog, List<String> before, int type, RandomGenerator random) {
            String service;
            String tag = null;
            if (before.size() == 2 && before.get(0).startsWith("_") && before.get(1).startsWith("_")) {
                service = before.get(0).substring(1); // RFC 2782: _service._tag, _tcp and _udp meaning any tag
                String protocol = before.get(1).substring(1);
                tag = protocol.equals("tcp") || protocol.equals("udp") ? null : protocol;
            } else if (before.size() == 2) {
                tag = before.get(0);
                service = before.get(1);
            } else if (before.size() == 1) {
                service = before.get(0);
            } else {
                return nameError();
            }
            List<Catalog.Instance> found = new ArrayList<>();
            for (Catalog.Instance instance : catalog.instances(service)) {
                if (tagged(instance.service(), tag) && readable(instance) && healthy(catalog, instance, settings.onlyPassing())) {
                    found.add(instance);
                }
            }
            if (found.isEmpty()) {
                return nameError(); // Consul's: no healthy instance reads as no such name
            }
            for (int i = found.size() - 1; i > 0; i--) { // Fisher-Yates: every server spreads the load its own way
                int j = random.nextInt(i + 1);
                Catalog.Instance swap = found.get(i);
                found.set(i, found.get(j));
                found.set(j, swap);
            }
            long ttl = settings.serviceTtl(service);
            if (type == Type.SRV) {
                srv(catalog, found, ttl);
            } else {
                Set<String> seen = new LinkedHashSet<>();
                int addresses = 0;
                for (Catalog.Instance instance : found) {
                    String address = instance.service().address().isEmpty() ? instance.node().address() : instance.service().address();
                    if (!seen.add(address)) {
                        continue; // two instances on one address: one record
                    }
                    if (settings.aRecordLimit() > 0 && addresses == settings.aRecordLimit()) {
                        break;
                    }
                    int before1 = reply.getSection(Section.ANSWER).size();
                    addAddress(question.getName(), ttl, address, type, Section.ANSWER);
                    if (reply.getSection(Section.ANSWER).size() > before1) {
                        addresses++;
                    }
                }
            }
            if (reply.getSection(Section.ANSWER).isEmpty()) {
                return noData();
            }
            return reply;
        }

        private void srv(Catalog catalog, List<Catalog.Instance> found, long ttl) {
            for (Catalog.Instance instance : found) {
                NodeService service = instance.service();
                CatalogNode node = instance.node();
                int weight = anyWarning(catalog, instance) ? service.weights().warning() : service.weights().passing();
                Name target;
                String address;
                if (!service.address().isEmpty() && !service.address().equals(node.address())) {
                    InetAddress literal = literal(service.address());
                    target = literal == null ? hostName(service.address())
                            : name(HexFormat.of().formatHex(literal.getAddress()) + ".addr." + settings.datacenter());
                    address = literal == null ? null : service.address();
                } else {
                    target = nodeName(node.node());
                    address = node.address();
                }
                if (target == null) {
                    continue;
                }
                reply.addRecord(new SRVRecord(question.getName(), DClass.IN, ttl, 1, Math.max(0, Math.min(weight, 65_535)),
                        service.port(), target), Section.ANSWER);
                if (address != null) {
                    addAddress(target, ttl, address, Type.SRV, Section.ADDITIONAL);
                }
                if (settings.nodeMetaTxt() && target.equals(nodeName(node.node()))) {
                    for (Record txt : metaTxt(target, ttl, node)) {
                        reply.addRecord(txt, Section.ADDITIONAL);
                    }
                }
            }
        }

        private static boolean tagged(NodeService service, String tag) {
            return tag == null || service.tags().stream().anyMatch(own -> own.equalsIgnoreCase(tag));
        }

        private static Name hostName(String host) {
            try {
                return Name.fromString(host.endsWith(".") ? host : host + ".");
            } catch (TextParseException e) {
                return null;
            }
        }
    }

    private static Record addressRecord(Name owner, long ttl, InetAddress address) {
        return address instanceof Inet6Address ? new AAAARecord(owner, DClass.IN, ttl, address) : new ARecord(owner, DClass.IN, ttl, address);
    }

    /**
     * The reply's wire form within {@code maxBytes}: whole answer records are left out from the end (with the additional
     * records about their targets) until it fits; {@code maxAnswers} (0: any number) caps the answers first. The TC bit is
     * set on a cut answer only when {@code truncateBit} (Consul's {@code enable_truncate}; without it a client takes
     * what fits and does not retry over TCP).
     */
    public static byte[] toWire(Message reply, int maxBytes, int maxAnswers, boolean truncateBit) {
        List<Record> answers = new ArrayList<>(reply.getSection(Section.ANSWER));
        List<Record> additional = new ArrayList<>(reply.getSection(Section.ADDITIONAL));
        boolean cut = false;
        int keep = maxAnswers > 0 ? Math.min(maxAnswers, answers.size()) : answers.size();
        while (true) {
            Message trimmed = keep == answers.size() && !cut ? reply : rebuilt(reply, answers.subList(0, keep), additional);
            if (keep < answers.size()) {
                cut = true;
                if (truncateBit) {
                    trimmed.getHeader().setFlag(Flags.TC);
                }
            }
            byte[] wire = trimmed.toWire();
            if (wire.length <= maxBytes) {
                return wire;
            }
            if (keep == 0) {
                Message bare = rebuilt(reply, List.of(), List.of());
                bare.getHeader().setFlag(Flags.TC); // not even the question and SOA fit: the client must retry over TCP
                return bare.toWire();
            }
            keep--;
        }
    }

    /** {@code reply} with only these answers, and the additional records that concern them (and the OPT). */
    private static Message rebuilt(Message reply, List<Record> answers, List<Record> additional) {
        Message copy = new Message();
        Header header = new Header(reply.getHeader().getID());
        for (int flag : new int[]{Flags.QR, Flags.AA, Flags.RD, Flags.RA}) {
            if (reply.getHeader().getFlag(flag)) {
                header.setFlag(flag);
            }
        }
        header.setOpcode(reply.getHeader().getOpcode());
        header.setRcode(reply.getHeader().getRcode());
        copy.setHeader(header);
        reply.getSection(Section.QUESTION).forEach(record -> copy.addRecord(record, Section.QUESTION));
        Set<Name> targets = new java.util.HashSet<>();
        for (Record answer : answers) {
            copy.addRecord(answer, Section.ANSWER);
            if (answer instanceof SRVRecord srv) {
                targets.add(srv.getTarget());
            } else if (answer instanceof NSRecord ns) {
                targets.add(ns.getTarget());
            }
        }
        reply.getSection(Section.AUTHORITY).forEach(record -> copy.addRecord(record, Section.AUTHORITY));
        for (Record record : additional) {
            if (record instanceof OPTRecord || targets.contains(record.getName())) {
                copy.addRecord(record, Section.ADDITIONAL);
            }
        }
        return copy;
    }
}
