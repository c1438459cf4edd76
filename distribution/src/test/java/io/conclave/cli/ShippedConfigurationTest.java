package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigLoader;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The configurations the zip ships in {@code conf/} are valid as shipped, so that a copy of them starts ({@code logback.xml}:
 * {@link LoggingTest}).
 */
class ShippedConfigurationTest {

    private static final Path CONF = Path.of("src", "conf");

    @Test
    void when_the_sample_server_configuration_is_read_then_it_is_valid_and_says_what_it_shows() {
        ConclaveConfig server = ConfigLoader.load(CONF.resolve("server.json"), false);
        assertEquals("server-1", server.nodeName());
        assertTrue(server.server(), "a server says so: without it an agent is a client");
        assertEquals(3, server.bootstrapExpect());
        assertTrue(server.plugins().isEmpty(), "no provider pinned: an override dropped into plugins/ wins by priority");
        assertEquals(java.util.Map.of("zone", "zone-a"), server.nodeMeta());
        assertEquals(2, server.retryJoin().size());
        assertFalse(server.ui().enabled(), "the sample server shows the UI's key, off as Consul's default");
    }

    @Test
    void when_the_dev_configuration_is_read_then_it_is_a_single_server_keeping_its_data() {
        ConclaveConfig dev = ConfigLoader.load(CONF.resolve("dev.json"), false);
        assertEquals(1, dev.bootstrapExpect());
        assertTrue(dev.server(), "a server says so: without it an agent is a client");
        assertEquals(Path.of("data"), dev.dataDir());
        assertTrue(dev.ui().enabled(), "the development server serves the web UI, as -dev does");
    }
}
