package io.conclave.cli;

import io.conclave.engine.raft.tls.Certificates;
import io.conclave.engine.raft.tls.Pem;
import io.conclave.engine.raft.tls.TlsException;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code conclave tls ca create} and {@code conclave tls cert create}: Consul's built-in CA tooling, with the same
 * file names ({@code <domain>-agent-ca.pem}, {@code <dc>-server-<domain>-<n>.pem}) and names in the certificates
 * ({@code server.<dc>.<domain>}), so that a guide written for {@code consul tls} reads the same. Keys are written
 * readable by their owner only. Needs no agent.
 */
@Command(name = "tls", description = "Makes a CA and the certificates it signs, for TLS on the HTTPS and server ports.",
        footer = {"  conclave tls ca create", "  conclave tls cert create -server -dc dc1"},
        subcommands = {TlsCommand.Ca.class, TlsCommand.Cert.class})
final class TlsCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "a tls command is required: ca or cert");
    }

    @Command(name = "ca", description = "The certificate authority: create.",
            footer = {"  conclave tls ca create -domain conclave -days 1825"}, subcommands = CaCreate.class)
    static final class Ca implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "a ca command is required: create");
        }
    }

    @Command(name = "cert", description = "Certificates signed by the CA: create.",
            footer = {"  conclave tls cert create -server", "  conclave tls cert create -client"}, subcommands = CertCreate.class)
    static final class Cert implements Runnable {
        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public void run() {
            throw new CommandLine.ParameterException(spec.commandLine(), "a cert command is required: create");
        }
    }

    @Command(name = "create", description = "Creates a CA: <domain>-agent-ca.pem and <domain>-agent-ca-key.pem in this folder.",
            footer = {"  conclave tls ca create", "  conclave tls ca create -domain consul -days 3650"})
    static final class CaCreate implements Callable<Integer> {
        @Option(names = "-domain", defaultValue = "conclave", paramLabel = "DOMAIN", description = "The agents' domain.")
        String domain;

        @Option(names = "-days", defaultValue = "1825", paramLabel = "DAYS", description = "Days the CA is valid.")
        int days;

        @Override
        public Integer call() {
            if (days < 1) {
                System.err.println("-days must be at least 1, not " + days);
                return 1;
            }
            Path cert = Path.of(domain + "-agent-ca.pem");
            Path key = Path.of(domain + "-agent-ca-key.pem");
            for (Path file : List.of(cert, key)) {
                if (Files.exists(file)) {
                    System.err.println(file + " already exists: remove it, or run this in another folder");
                    return 1;
                }
            }
            KeyPair keys = Certificates.newKeyPair();
            Instant now = Instant.now();
            X509Certificate ca = Certificates.newCa(keys, domain, now.minus(Duration.ofMinutes(1)), now.plus(Duration.ofDays(days)));
            try {
                Pem.writePrivateKey(key, keys.getPrivate());
                Pem.writeCertificate(cert, ca);
            } catch (IOException e) {
                System.err.println("cannot write the CA: " + e);
                return 1;
            }
            System.out.println("==> Saved " + cert);
            System.out.println("==> Saved " + key);
            return 0;
        }
    }

    @Command(name = "create", description = "Creates a server or client certificate signed by the CA, in this folder.",
            footer = {"  conclave tls cert create -server -dc dc1", "  conclave tls cert create -client", "  conclave tls cert create -server -additional-ipaddress 10.0.0.11"})
    static final class CertCreate implements Callable<Integer> {
        @Option(names = "-server", description = "A server certificate (server.<dc>.<domain>).")
        boolean server;

        @Option(names = "-client", description = "A client certificate (client.<dc>.<domain>), for HTTPS with verify_incoming.")
        boolean client;

        @Option(names = "-dc", defaultValue = "dc1", paramLabel = "DC", description = "The datacenter.")
        String datacenter;

        @Option(names = "-domain", defaultValue = "conclave", paramLabel = "DOMAIN", description = "The agents' domain.")
        String domain;

        @Option(names = "-days", defaultValue = "365", paramLabel = "DAYS", description = "Days the certificate is valid.")
        int days;

        @Option(names = "-ca", paramLabel = "FILE", description = "The CA's certificate (default: <domain>-agent-ca.pem).")
        Path caFile;

        @Option(names = "-key", paramLabel = "FILE", description = "The CA's key (default: <domain>-agent-ca-key.pem).")
        Path caKeyFile;

        @Option(names = "-additional-dnsname", paramLabel = "NAME", description = "Another DNS name in the certificate (repeatable).")
        List<String> dnsNames = new ArrayList<>();

        @Option(names = "-additional-ipaddress", paramLabel = "IP", description = "An IP address in the certificate (repeatable).")
        List<String> ipAddresses = new ArrayList<>();

        @Override
        public Integer call() {
            if (server == client) {
                System.err.println("choose one of -server and -client");
                return 1;
            }
            if (days < 1) {
                System.err.println("-days must be at least 1, not " + days);
                return 1;
            }
            if (!datacenter.matches("[a-z0-9_-]{1,64}")) {
                System.err.println("-dc '" + datacenter + "' is not a datacenter name (lower-case letters, digits, '_' and '-')");
                return 1;
            }
            List<InetAddress> ips = new ArrayList<>();
            for (String ip : ipAddresses) {
                if (!ip.matches("[0-9.]+|[0-9a-fA-F:]+")) {
                    System.err.println("-additional-ipaddress '" + ip + "' is not an IP address");
                    return 1;
                }
                try {
                    ips.add(InetAddress.getByName(ip));
                } catch (IOException e) {
                    System.err.println("-additional-ipaddress '" + ip + "' is not an IP address");
                    return 1;
                }
            }
            Path ca = caFile != null ? caFile : Path.of(domain + "-agent-ca.pem");
            Path caKey = caKeyFile != null ? caKeyFile : Path.of(domain + "-agent-ca-key.pem");
            X509Certificate caCertificate;
            PrivateKey caPrivateKey;
            try {
                caCertificate = Pem.certificates(ca, "the CA certificate").get(0);
                caPrivateKey = Pem.privateKey(caKey, "the CA key");
            } catch (TlsException e) {
                System.err.println(e.getMessage() + " (make one with 'conclave tls ca create', or give -ca and -key)");
                return 1;
            }
            String kind = server ? "server" : "client";
            String name = server ? Certificates.serverName(datacenter, domain) : Certificates.clientName(datacenter, domain);
            List<String> names = new ArrayList<>(List.of(name, "localhost"));
            names.addAll(dnsNames);
            if (ips.isEmpty() || server) {
                ips.add(InetAddress.getLoopbackAddress()); // Consul's too: a local CLI reaches a local agent by 127.0.0.1
            }
            KeyPair keys = Certificates.newKeyPair();
            Instant now = Instant.now();
            X509Certificate certificate = Certificates.issue(caCertificate, caPrivateKey, keys.getPublic(),
                    server ? Certificates.Kind.SERVER : Certificates.Kind.CLIENT, name, names, ips.stream().distinct().toList(),
                    now.minus(Duration.ofMinutes(1)), now.plus(Duration.ofDays(days)));
            for (int n = 0; ; n++) {
                Path cert = Path.of(datacenter + "-" + kind + "-" + domain + "-" + n + ".pem");
                Path key = Path.of(datacenter + "-" + kind + "-" + domain + "-" + n + "-key.pem");
                if (Files.exists(cert) || Files.exists(key)) {
                    continue;
                }
                try {
                    Pem.writePrivateKey(key, keys.getPrivate());
                    Pem.writeCertificate(cert, certificate);
                } catch (FileAlreadyExistsException e) {
                    continue; // made meanwhile by another run
                } catch (IOException e) {
                    System.err.println("cannot write the certificate: " + e);
                    return 1;
                }
                System.out.println("==> Using " + ca + " and " + caKey);
                System.out.println("==> Saved " + cert);
                System.out.println("==> Saved " + key);
                return 0;
            }
        }
    }
}
