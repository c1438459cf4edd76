package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.status.Status;
import io.conclave.cli.harness.Cli;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.SimpleDateFormat;
import java.time.Duration;
import java.util.Date;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution's logging on Logback, each test on a fresh {@code LoggerContext} (not the one this JVM logs with):
 * the shipped {@code conf/logback.xml} writes slf4j-simple's line byte for byte; {@code log_level}; {@code log_json}
 * lines a JSON reader parses, on the console and in the file; {@code log_file} rotated by size keeping exactly
 * {@code log_rotate_max_files} rotated files, and by age.
 */
class LoggingTest {

    private static final Path SHIPPED = Path.of("src", "conf", "logback.xml");

    /** A fresh context configured from the shipped file, with no warning. */
    private static LoggerContext shipped() throws Exception {
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // what SLF4J's binding sets on its own
        JoranConfigurator configurator = new JoranConfigurator();
        configurator.setContext(context);
        configurator.doConfigure(SHIPPED.toFile());
        List<Status> problems = context.getStatusManager().getCopyOfStatusList().stream()
                .filter(status -> status.getEffectiveLevel() > Status.INFO).toList();
        assertEquals(List.of(), problems, "conf/logback.xml reads without a warning");
        return context;
    }

    /** The shipped console appender's encoder. */
    private static PatternLayoutEncoder shippedEncoder(LoggerContext context) {
        @SuppressWarnings("unchecked")
        OutputStreamAppender<ILoggingEvent> console = (OutputStreamAppender<ILoggingEvent>) context.getLogger("ROOT").getAppender("CONSOLE");
        return (PatternLayoutEncoder) console.getEncoder();
    }

    /** Runs {@code body} with this JVM's standard output (where the shipped console appender writes) captured. */
    private static String capturingStandardOutput(ThrowingRunnable body) throws Exception {
        synchronized (Cli.class) { // Cli swaps the streams too
            java.io.PrintStream out = System.out;
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            System.setOut(new java.io.PrintStream(captured, true, StandardCharsets.UTF_8));
            try {
                body.run();
            } finally {
                System.setOut(out);
            }
            return captured.toString(StandardCharsets.UTF_8);
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static ConclaveConfig.Log log(boolean json, Path file, long bytes, Duration age, int maxFiles) {
        return new ConclaveConfig.Log(json, Optional.ofNullable(file), bytes, age, maxFiles);
    }

    @Test
    void when_the_shipped_configuration_logs_a_line_then_it_is_slf4j_simples_line_byte_for_byte() throws Exception {
        LoggerContext context = shipped();
        PatternLayoutEncoder encoder = shippedEncoder(context);
        assertEquals(Logging.TEXT_PATTERN, encoder.getPattern());
        long time = 1_790_000_123_456L;
        for (Level level : List.of(Level.INFO, Level.WARN, Level.ERROR, Level.DEBUG)) {
            LoggingEvent event = new LoggingEvent("x", context.getLogger("conclave.agent"), level, "agent started: node {}", null,
                    new Object[] {"n1"});
            event.setTimeStamp(time);
            // slf4j-simple 2.0 with the distribution's former settings: date (SimpleDateFormat, the JVM's zone), level,
            // name, " - ", message, println
            String simple = new SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ss.SSSXXX").format(new Date(time)) + " " + level + " conclave.agent - "
                    + "agent started: node n1" + System.lineSeparator();
            assertEquals(simple, new String(encoder.encode(event), StandardCharsets.UTF_8));
        }
        assertEquals(Level.WARN, context.getLogger("io.netty").getLevel());
        assertEquals(Level.WARN, context.getLogger("io.vertx").getLevel());
        assertEquals(Level.INFO, context.getLogger("ROOT").getLevel());
    }

    @Test
    void when_log_level_is_applied_then_conclaves_loggers_follow_it_unless_the_file_pins_one() throws Exception {
        LoggerContext context = shipped();
        context.getLogger("io.conclave").setLevel(Level.ERROR); // as a <logger> in conf/logback.xml would
        Logging.apply(context, "debug", log(false, null, 0, Duration.ofHours(24), 10), "n1", "dc1", System::currentTimeMillis);
        assertTrue(context.getLogger("conclave.raft").isDebugEnabled());
        assertEquals(Level.ERROR, context.getLogger("io.conclave").getLevel(), "pinned in the file");
        assertEquals(Level.WARN, context.getLogger("io.netty").getLevel(), "the libraries' levels stay");
    }

    @Test
    void when_log_json_is_on_then_every_line_on_the_console_and_in_the_file_is_one_json_object(@TempDir Path work) throws Exception {
        LoggerContext context = shipped();
        Path file = work.resolve("logs").resolve("conclave.log");
        String console = capturingStandardOutput(() -> {
            Logging.apply(context, "INFO", log(true, file, 0, Duration.ofHours(24), 10), "n1", "dc1", System::currentTimeMillis);
            org.slf4j.Logger logger = context.getLogger("conclave.agent");
            logger.info("agent started: node {}", "n1");
            logger.warn("a \"quoted\" value,\nover two lines");
            logger.error("storage failed", new java.io.IOException("disk full"));
            logger.debug("not at INFO");
        });
        for (String text : List.of(console, Files.readString(file))) {
            List<String> lines = text.lines().toList();
            assertEquals(3, lines.size(), "one line an event: " + text);
            List<JsonObject> objects = lines.stream().map(JsonObject::new).toList(); // a JSON reader (Jackson) parses each
            for (JsonObject object : objects) {
                assertTrue(object.getLong("timestamp") > 0 && object.getString("threadName") != null, object.encode());
                assertEquals("conclave.agent", object.getString("loggerName"));
                JsonObject properties = object.getJsonObject("context").getJsonObject("properties");
                assertEquals("n1", properties.getString("node"));
                assertEquals("dc1", properties.getString("datacenter"));
            }
            assertEquals("INFO", objects.get(0).getString("level"));
            assertEquals("agent started: node n1", objects.get(0).getString("formattedMessage"));
            assertEquals("a \"quoted\" value,\nover two lines", objects.get(1).getString("formattedMessage"));
            assertEquals("ERROR", objects.get(2).getString("level"));
            assertEquals("java.io.IOException", objects.get(2).getJsonObject("throwable").getString("className"));
            assertEquals("disk full", objects.get(2).getJsonObject("throwable").getString("message"));
        }
    }

    /** The files in {@code folder}, by name. */
    private static List<String> files(Path folder) throws Exception {
        try (Stream<Path> listed = Files.list(folder)) {
            return listed.map(path -> path.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void when_the_file_outgrows_log_rotate_bytes_then_it_rotates_and_exactly_log_rotate_max_files_rotated_files_stay(@TempDir Path work)
            throws Exception {
        LoggerContext context = shipped();
        context.getLogger("ROOT").detachAppender("CONSOLE"); // the file alone: nothing on this JVM's output
        Path file = work.resolve("agent.log");
        Logging.apply(context, "INFO", log(false, file, 1024, Duration.ofHours(24), 3), "n1", "dc1", System::currentTimeMillis);
        org.slf4j.Logger logger = context.getLogger("conclave.agent");
        String padding = "x".repeat(60);
        for (int i = 0; i < 200; i++) {
            logger.info("line {} {}", String.format("%03d", i), padding); // about 110 bytes a line: 10 lines a file
        }
        assertEquals(List.of("agent-1.log", "agent-2.log", "agent-3.log", "agent.log"), files(work),
                "log_rotate_max_files 3: three rotated files beside the active one, the older ones deleted");
        for (String name : List.of("agent-1.log", "agent-2.log", "agent-3.log")) {
            long size = Files.size(work.resolve(name));
            assertTrue(size >= 1024 && size < 1024 + 200, name + " holds " + size + " bytes: past the limit by at most one line");
        }
        assertTrue(Files.readString(file).contains("line 199 "), "the newest line is in the active file");
        List<String> newestRotated = Files.readAllLines(work.resolve("agent-1.log"));
        List<String> active = Files.readAllLines(file);
        int lastRotated = Integer.parseInt(newestRotated.get(newestRotated.size() - 1).replaceAll(".* line (\\d+) .*", "$1"));
        int firstActive = Integer.parseInt(active.get(0).replaceAll(".* line (\\d+) .*", "$1"));
        assertEquals(lastRotated + 1, firstActive, "no line lost at the rollover");
    }

    @Test
    void when_the_file_was_written_for_log_rotate_duration_then_it_rotates_however_small(@TempDir Path work) throws Exception {
        LoggerContext context = shipped();
        context.getLogger("ROOT").detachAppender("CONSOLE"); // the file alone: nothing on this JVM's output
        AtomicLong clock = new AtomicLong(1_000_000);
        Logging.apply(context, "INFO", log(false, work.resolve("conclave.log"), 0, Duration.ofHours(1), 2), "n1", "dc1", clock::get);
        org.slf4j.Logger logger = context.getLogger("conclave.agent");
        logger.info("first hour");
        clock.addAndGet(Duration.ofMinutes(59).toMillis());
        logger.info("still the first hour");
        assertEquals(List.of("conclave.log"), files(work));
        clock.addAndGet(Duration.ofMinutes(1).toMillis());
        logger.info("second hour");
        assertEquals(List.of("conclave-1.log", "conclave.log"), files(work));
        assertTrue(Files.readString(work.resolve("conclave-1.log")).contains("still the first hour"));
        assertTrue(Files.readString(work.resolve("conclave.log")).contains("second hour"));
    }

    @Test
    void when_log_file_cannot_be_written_then_the_error_names_the_key(@TempDir Path work) throws Exception {
        LoggerContext context = shipped();
        Files.writeString(work.resolve("plain-file"), "not a folder");
        ConfigException underFile = assertThrows(ConfigException.class, () -> Logging.apply(context, "INFO",
                log(false, work.resolve("plain-file").resolve("conclave.log"), 0, Duration.ofHours(1), 2), "n1", "dc1",
                System::currentTimeMillis));
        assertEquals("log_file", underFile.key(), underFile.getMessage());
        ConfigException folder = assertThrows(ConfigException.class, () -> Logging.apply(context, "INFO",
                log(false, work, 0, Duration.ofHours(1), 2), "n1", "dc1", System::currentTimeMillis));
        assertTrue(folder.getMessage().startsWith("log_file: value \"" + work + "\" is a folder: end it with '/'"), folder.getMessage());
    }
}
