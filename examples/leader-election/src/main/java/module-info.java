/** The leader-election example: an application of Conclave's Consul API, with the JDK's HTTP client and nothing else. */
module io.conclave.example.leader {
    requires java.net.http;
}
