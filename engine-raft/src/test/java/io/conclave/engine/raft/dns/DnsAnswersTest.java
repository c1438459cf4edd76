package io.conclave.engine.raft.dns;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.kv.Catalog;
import io.conclave.engine.raft.kv.CatalogRegistration;
import io.conclave.engine.raft.kv.HealthCheck;
import io.conclave.engine.raft.kv.KvCommand;
import io.conclave.engine.raft.kv.KvStateMachine;
import io.conclave.engine.raft.kv.NodeService;
import io.conclave.engine.raft.testing.KvAnswers;
import java.io.IOException;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.xbill.DNS.ARecord;
import org.xbill.DNS.CNAMERecord;
import org.xbill.DNS.DClass;
import org.xbill.DNS.Flags;
import org.xbill.DNS.Message;
import org.xbill.DNS.NSRecord;
import org.xbill.DNS.Name;
import org.xbill.DNS.OPTRecord;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.SOARecord;
import org.xbill.DNS.SRVRecord;
import org.xbill.DNS.Section;
import org.xbill.DNS.TXTRecord;
import org.xbill.DNS.Type;

/**
 * Consul's DNS answers from a catalog built by the state machine's own applies: names, health filtering, records,
 * NXDOMAIN/NODATA with the SOA, and the cuts a UDP answer takes.
 */
class DnsAnswersTest {

    private static final DnsAnswers.Settings SETTINGS = DnsAnswers.Settings.of("conclave", Optional.of("consul"), "dc1", Duration.ZERO,
            Map.of("db", Duration.ofSeconds(30), "web*", Duration.ofSeconds(5), "*", Duration.ofSeconds(1)), 0, false, true, 3600, 600,
            86400, 0);

    private final KvStateMachine machine = new KvStateMachine();
    private long index = 10;

    private static NodeService service(String id, String name, String address, int port, String... tags) {
        return new NodeService(id, name, List.of(tags), address, Map.of(), Map.of(), port, null, false, "", 0, 0);
    }

    private static HealthCheck check(String id, String serviceId, String status) {
        return new HealthCheck("", id, id, status, "", "", serviceId, "", List.of(), "ttl", null, 0, 0);
    }

    private void register(String node, String address, Map<String, String> meta, NodeService service, HealthCheck... checks) {
        CatalogRegistration registration = new CatalogRegistration("", node, address, "dc1", Map.of(), meta, service, null, List.of(checks),
                false);
        String answer = KvAnswers.text(machine.apply(++index, new KvCommand(KvCommand.Op.CATALOG_REGISTER, "", registration.encode(), 0,
                KvCommand.NO_CAS).encode()));
        assertEquals("true", answer);
    }

    private Catalog catalog() {
        return machine.catalog();
    }

    private static Message query(String name, int type) throws IOException {
        return Message.newQuery(Record.newRecord(Name.fromString(name), type, DClass.IN));
    }

    private Message ask(String name, int type) throws IOException {
        return DnsAnswers.answer(query(name, type), catalog(), SETTINGS, 1_700_000_000L, new SplittableRandom(1), false);
    }

    private static Set<String> addresses(Message answer, int section) {
        return answer.getSection(section).stream().filter(record -> record instanceof ARecord)
                .map(record -> ((ARecord) record).getAddress().getHostAddress()).collect(Collectors.toSet());
    }

    private void webCluster() {
        register("n1", "10.0.0.1", Map.of("rack", "a"), service("web-1", "web", "", 8080, "v1", "primary"),
                check("service:web-1", "web-1", "passing"));
        register("n2", "10.0.0.2", Map.of(), service("web-2", "web", "", 8080, "v2"), check("service:web-2", "web-2", "warning"));
        register("n3", "10.0.0.3", Map.of(), service("web-3", "web", "", 8080, "v1"), check("service:web-3", "web-3", "critical"));
        register("n4", "10.0.0.4", Map.of(), service("web-4", "web", "192.168.1.9", 9090, "v1"));
    }

    @Test
    void a_service_answers_its_healthy_instances_addresses_critical_ones_left_out() throws IOException {
        webCluster();
        Message answer = ask("web.service.conclave.", Type.A);
        assertEquals(Rcode.NOERROR, answer.getRcode());
        assertTrue(answer.getHeader().getFlag(Flags.AA));
        assertEquals(Set.of("10.0.0.1", "10.0.0.2", "192.168.1.9"), addresses(answer, Section.ANSWER),
                "n3's instance is critical; n4's has an address of its own");
        assertEquals(5, answer.getSection(Section.ANSWER).get(0).getTTL(), "service_ttl by prefix web*");
        assertEquals(addresses(answer, Section.ANSWER), addresses(ask("WEB.Service.Consul.", Type.A), Section.ANSWER),
                "the alt domain, in any case");
        assertEquals(addresses(answer, Section.ANSWER), addresses(ask("web.service.dc1.conclave.", Type.A), Section.ANSWER),
                "with this datacenter named");
    }

    @Test
    void only_passing_leaves_a_warning_out_and_a_maintenance_check_counts_as_failing() throws IOException {
        webCluster();
        register("n5", "10.0.0.5", Map.of(), service("web-5", "web", "", 8080), check("_service_maintenance:web-5", "web-5", "maintenance"));
        DnsAnswers.Settings onlyPassing = DnsAnswers.Settings.of("conclave", Optional.empty(), "dc1", Duration.ZERO, Map.of(), 0, true,
                true, 3600, 600, 86400, 0);
        Message answer = DnsAnswers.answer(query("web.service.conclave.", Type.A), catalog(), onlyPassing, 1, new SplittableRandom(1),
                false);
        assertEquals(Set.of("10.0.0.1", "192.168.1.9"), addresses(answer, Section.ANSWER));
        assertFalse(addresses(ask("web.service.conclave.", Type.A), Section.ANSWER).contains("10.0.0.5"));
    }

    @Test
    void tags_and_rfc_2782_names_filter_by_tag() throws IOException {
        webCluster();
        assertEquals(Set.of("10.0.0.1", "192.168.1.9"), addresses(ask("v1.web.service.conclave.", Type.A), Section.ANSWER));
        Message srv = ask("_web._primary.service.conclave.", Type.SRV);
        assertEquals(1, srv.getSection(Section.ANSWER).size());
        Message anyTag = ask("_web._tcp.service.conclave.", Type.SRV);
        assertEquals(3, anyTag.getSection(Section.ANSWER).size());
        assertEquals(Rcode.NXDOMAIN, ask("nosuchtag.web.service.conclave.", Type.A).getRcode());
    }

    @Test
    void srv_answers_name_the_node_or_the_instances_own_address_with_the_addresses_and_node_meta_in_additional() throws IOException {
        webCluster();
        Message answer = ask("web.service.conclave.", Type.SRV);
        Set<String> targets = new HashSet<>();
        for (Record record : answer.getSection(Section.ANSWER)) {
            SRVRecord srv = (SRVRecord) record;
            targets.add(srv.getTarget().toString());
            assertEquals(1, srv.getPriority());
            assertEquals(srv.getTarget().toString().startsWith("c0a80109") ? 9090 : 8080, srv.getPort());
        }
        assertEquals(Set.of("n1.node.dc1.conclave.", "n2.node.dc1.conclave.", "c0a80109.addr.dc1.conclave."), targets);
        assertEquals(Set.of("10.0.0.1", "10.0.0.2", "192.168.1.9"), addresses(answer, Section.ADDITIONAL));
        assertTrue(answer.getSection(Section.ADDITIONAL).stream().anyMatch(record -> record instanceof TXTRecord txt
                && txt.getName().toString().equals("n1.node.dc1.conclave.") && txt.getStrings().equals(List.of("rack=a"))));
    }

    @Test
    void nodes_addr_names_and_the_apex() throws IOException {
        webCluster();
        register("consul-s1", "10.0.1.1", Map.of(), service("consul", "consul", "", 8300));
        assertEquals(Set.of("10.0.0.1"), addresses(ask("n1.node.conclave.", Type.A), Section.ANSWER));
        Message txt = ask("n1.node.dc1.conclave.", Type.TXT);
        assertEquals("rack=a", ((TXTRecord) txt.getSection(Section.ANSWER).get(0)).getStrings().get(0));
        assertEquals(Set.of("10.1.2.3"), addresses(ask("0a010203.addr.dc1.conclave.", Type.A), Section.ANSWER));
        Message soa = ask("conclave.", Type.SOA);
        SOARecord record = (SOARecord) soa.getSection(Section.ANSWER).get(0);
        assertEquals("ns.conclave.", record.getHost().toString());
        assertEquals("hostmaster.conclave.", record.getAdmin().toString());
        assertEquals(1_700_000_000L, record.getSerial());
        Message ns = ask("conclave.", Type.NS);
        assertEquals("consul-s1.node.dc1.conclave.", ((NSRecord) ns.getSection(Section.ANSWER).get(0)).getTarget().toString());
        assertEquals(Set.of("10.0.1.1"), addresses(ns, Section.ADDITIONAL));
    }

    @Test
    void a_missing_name_is_nxdomain_and_a_missing_type_nodata_both_with_the_soa() throws IOException {
        webCluster();
        for (String name : List.of("nosuch.service.conclave.", "nosuch.node.conclave.", "n1.node.dc2.conclave.", "web.other.conclave.",
                "zz.addr.conclave.", "service.conclave.")) {
            Message answer = ask(name, Type.A);
            assertEquals(Rcode.NXDOMAIN, answer.getRcode(), name);
            assertTrue(answer.getSection(Section.AUTHORITY).get(0) instanceof SOARecord, name);
        }
        Message noData = ask("n1.node.conclave.", Type.AAAA);
        assertEquals(Rcode.NOERROR, noData.getRcode());
        assertTrue(noData.getSection(Section.ANSWER).isEmpty());
        assertTrue(noData.getSection(Section.AUTHORITY).get(0) instanceof SOARecord);
        register("gone", "10.0.0.9", Map.of(), service("x-1", "x", "", 1), check("service:x-1", "x-1", "critical"));
        assertEquals(Rcode.NXDOMAIN, ask("x.service.conclave.", Type.A).getRcode(), "no healthy instance: Consul's NXDOMAIN");
        assertEquals(Rcode.NOTIMP, ask("conclave.", Type.AXFR).getRcode());
    }

    @Test
    void a_host_name_address_is_a_cname() throws IOException {
        register("ext", "10.0.0.20", Map.of(), service("api-1", "api", "api.example.org", 443));
        Record record = ask("api.service.conclave.", Type.A).getSection(Section.ANSWER).get(0);
        assertEquals("api.example.org.", ((CNAMERecord) record).getTarget().toString());
    }

    @Test
    void udp_answers_are_cut_to_fit_and_tc_is_set_only_when_enable_truncate_says_so() throws IOException {
        for (int i = 0; i < 200; i++) {
            register("node-" + i, "10.1." + (i / 250) + "." + (i % 250 + 1), Map.of(), service("big-" + i, "big", "", 80));
        }
        Message answer = ask("big.service.conclave.", Type.A);
        assertEquals(200, answer.getSection(Section.ANSWER).size());
        Message classic = new Message(DnsAnswers.toWire(answer, DnsServer.CLASSIC_UDP_BYTES, 3, false));
        assertEquals(3, classic.getSection(Section.ANSWER).size(), "udp_answer_limit without EDNS0");
        assertFalse(classic.getHeader().getFlag(Flags.TC));
        byte[] srvWire = DnsAnswers.toWire(ask("big.service.conclave.", Type.SRV), DnsServer.CLASSIC_UDP_BYTES, 0, true);
        assertTrue(srvWire.length <= 512);
        Message srv = new Message(srvWire);
        assertTrue(srv.getHeader().getFlag(Flags.TC), "enable_truncate: the client retries over TCP");
        for (Record record : srv.getSection(Section.ANSWER)) {
            String target = ((SRVRecord) record).getTarget().toString();
            assertTrue(srv.getSection(Section.ADDITIONAL).stream().anyMatch(extra -> extra.getName().toString().equals(target)),
                    "each SRV kept keeps its address");
        }
        Message edns = query("big.service.conclave.", Type.A);
        edns.addRecord(new OPTRecord(4096, 0, 0), Section.ADDITIONAL);
        byte[] large = DnsAnswers.toWire(DnsAnswers.answer(edns, catalog(), SETTINGS, 1, new SplittableRandom(2), false), 4096, 0, false);
        assertTrue(large.length <= 4096);
        assertEquals(200, new Message(large).getSection(Section.ANSWER).size(), "200 A records fit 4096 bytes");
        byte[] tcp = DnsAnswers.toWire(ask("big.service.conclave.", Type.SRV), DnsServer.MAX_TCP_BYTES, 0, false);
        assertEquals(200, new Message(tcp).getSection(Section.ANSWER).size(), "over TCP, every instance");
    }

    @Test
    void every_server_shuffles_the_instances() throws IOException {
        for (int i = 0; i < 20; i++) {
            register("node-" + i, "10.2.0." + (i + 1), Map.of(), service("s-" + i, "s", "", 80));
        }
        Set<String> firsts = new HashSet<>();
        for (int seed = 0; seed < 20; seed++) {
            Message answer = DnsAnswers.answer(query("s.service.conclave.", Type.A), catalog(), SETTINGS, 1, new SplittableRandom(seed),
                    false);
            firsts.add(((ARecord) answer.getSection(Section.ANSWER).get(0)).getAddress().getHostAddress());
        }
        assertTrue(firsts.size() > 5, "the first answer varies: " + firsts);
    }

    @Test
    void what_the_acl_system_denies_is_answered_as_if_it_did_not_exist() throws IOException {
        webCluster();
        DnsAnswers.Access onlyN1 = new DnsAnswers.Access() {
            @Override
            public boolean nodeRead(String node) {
                return node.equals("n1");
            }

            @Override
            public boolean serviceRead(String service) {
                return service.equals("web");
            }
        };
        Message web = DnsAnswers.answer(query("web.service.conclave.", Type.A), catalog(), SETTINGS, 1, new SplittableRandom(1), false,
                onlyN1);
        assertEquals(Set.of("10.0.0.1"), addresses(web, Section.ANSWER));
        Message n2 = DnsAnswers.answer(query("n2.node.conclave.", Type.A), catalog(), SETTINGS, 1, new SplittableRandom(1), false, onlyN1);
        assertEquals(Rcode.NXDOMAIN, n2.getRcode());
        DnsAnswers.Access nothing = new DnsAnswers.Access() {
            @Override
            public boolean nodeRead(String node) {
                return false;
            }

            @Override
            public boolean serviceRead(String service) {
                return false;
            }
        };
        assertEquals(Rcode.NXDOMAIN, DnsAnswers.answer(query("web.service.conclave.", Type.A), catalog(), SETTINGS, 1,
                new SplittableRandom(1), false, nothing).getRcode(), "default_policy deny: nothing is named");
    }

    @Test
    void a_client_agent_asks_a_server_for_what_the_query_names() throws IOException {
        assertEquals(new DnsAnswers.Target(DnsAnswers.Kind.SERVICE, "web"), DnsAnswers.target(query("web.service.conclave.", Type.A), SETTINGS));
        assertEquals(new DnsAnswers.Target(DnsAnswers.Kind.SERVICE, "web"),
                DnsAnswers.target(query("V1.Web.service.dc1.consul.", Type.A), SETTINGS), "a tag, a datacenter, the alt domain");
        assertEquals(new DnsAnswers.Target(DnsAnswers.Kind.SERVICE, "web"), DnsAnswers.target(query("_web._tcp.service.conclave.", Type.SRV),
                SETTINGS));
        assertEquals(new DnsAnswers.Target(DnsAnswers.Kind.NODE, "n1"), DnsAnswers.target(query("n1.node.conclave.", Type.A), SETTINGS));
        assertEquals(new DnsAnswers.Target(DnsAnswers.Kind.APEX, "consul"), DnsAnswers.target(query("conclave.", Type.NS), SETTINGS));
        for (String none : List.of("0a000001.addr.conclave.", "a.b.c.service.conclave.", "service.conclave.", "x.other.conclave.",
                "example.org.")) {
            assertEquals(DnsAnswers.Kind.NONE, DnsAnswers.target(query(none, Type.A), SETTINGS).kind(), none);
        }
    }
}
