/** The {@code conclave} command line: runs an agent, and talks to a running agent's HTTP API. */
module io.conclave.cli {
    requires io.conclave.engine.raft;
    requires info.picocli;
    requires java.net.http;
    requires HdrHistogram;
    requires org.slf4j;
    requires ch.qos.logback.classic;
    requires ch.qos.logback.core;

    opens io.conclave.cli to info.picocli;
}
