package io.conclave.cli;

import io.conclave.engine.raft.config.ConfigLoader;
import io.conclave.engine.raft.service.LogSource;
import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.rolling.FixedWindowRollingPolicy;
import ch.qos.logback.core.rolling.RollingFileAppender;
import io.conclave.engine.raft.config.ConclaveConfig;
import io.conclave.engine.raft.config.ConfigException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.LongSupplier;
import org.slf4j.LoggerFactory;

/**
 * The distribution's logging, on Logback: {@code conf/logback.xml} first (found before the first logger is made), then
 * the agent's configuration on top of it: {@code log_level} for Conclave's loggers, {@code log_json} and
 * {@code log_file} with its rotation.
 */
final class Logging {

    /**
     * A text line: date, level, logger, message. The line the agent wrote with slf4j-simple before Logback, byte for
     * byte ({@code LoggingTest} checks it), which scripts and the process tests read.
     */
    static final String TEXT_PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %level %logger - %msg%n";
    /** The name of the appender {@code log_file} adds. */
    static final String FILE_APPENDER = "LOG_FILE";
    /** The loggers {@code log_level} sets: Conclave's own. */
    static final List<String> CONCLAVE_LOGGERS = List.of("conclave", "io.conclave");

    /**
     * The context's object naming Conclave's loggers whose level conf/logback.xml set, found by the first {@link #apply}:
     * log_level, a reload and the monitors leave them as they are.
     */
    private static final String PINNED = "conclave.pinnedLoggers";

    private Logging() {
    }

    /** Whether conf/logback.xml set {@code logger}'s level (then it is pinned there). */
    static boolean pinned(Logger logger) {
        return pinnedIn(logger.getLoggerContext()).contains(logger.getName());
    }

    @SuppressWarnings("unchecked")
    private static Set<String> pinnedIn(LoggerContext context) {
        Object pinned = context.getObject(PINNED);
        return pinned == null ? Set.of() : (Set<String>) pinned;
    }

    /**
     * Points Logback at the distribution's {@code conf/logback.xml} (when {@code conclave.home} names a distribution
     * that has one), before the first logger is made; {@code -Dlogback.configurationFile} on the command line wins.
     */
    static void configureDefaults() {
        String home = System.getProperty("conclave.home");
        if (home != null && System.getProperty("logback.configurationFile") == null) {
            Path file = Path.of(home, "conf", "logback.xml");
            if (Files.isRegularFile(file)) {
                System.setProperty("logback.configurationFile", file.toString());
            }
        }
    }

    /**
     * The configuration's logging keys, applied to the running Logback; nothing when another back-end runs (it keeps
     * its own configuration).
     *
     * @throws ConfigException naming {@code log_file} when that file cannot be written
     */
    static void apply(ConclaveConfig config) {
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
            apply(context, config.logLevel(), config.log(), config.nodeName(), config.datacenter(), System::currentTimeMillis);
        }
    }

    /**
     * The process's log lines for {@code /v1/agent/monitor} and its level for a reload, once {@link #apply} ran; without
     * Logback (another back-end on the class path), none.
     */
    static LogSource logSource(ConclaveConfig config) {
        if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
            return new LogbackLogSource(context, config.logLevel());
        }
        return LogSource.NONE;
    }

    /**
     * Applies to {@code context}: {@code logLevel} to Conclave's loggers that the file left without a level; with
     * {@code log.json()}, a JSON encoder to every stream appender of the root logger; with {@code log.file()}, a rolling
     * file appender on the root logger, writing as the console does. {@code clockMillis} times the rotation by age.
     */
    static void apply(LoggerContext context, String logLevel, ConclaveConfig.Log log, String nodeName, String datacenter,
                      LongSupplier clockMillis) {
        if (context.getObject(PINNED) == null) { // the first time: the levels found are the file's
            context.putObject(PINNED, Set.copyOf(CONCLAVE_LOGGERS.stream().filter(name -> context.getLogger(name).getLevel() != null).toList()));
        }
        for (String name : CONCLAVE_LOGGERS) {
            if (!pinnedIn(context).contains(name)) {
                context.getLogger(name).setLevel(Level.toLevel(logLevel.toUpperCase(Locale.ROOT)));
            }
        }
        context.putProperty("node", nodeName); // in each JSON line's context, for a log shipper
        context.putProperty("datacenter", datacenter);
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        String pattern = TEXT_PATTERN;
        for (OutputStreamAppender<ILoggingEvent> appender : streamAppenders(root)) {
            if (appender.getEncoder() instanceof PatternLayoutEncoder encoder) {
                pattern = encoder.getPattern(); // the file writes what the console writes
            }
            if (log.json()) { // stopped while its encoder changes; started again, a console or file appender opens its stream
                appender.stop();
                appender.setEncoder(jsonEncoder(context));
                appender.start();
            }
        }
        if (log.file().isPresent()) {
            root.addAppender(fileAppender(context, log, log.json() ? jsonEncoder(context) : patternEncoder(context, pattern), clockMillis));
        }
    }

    private static List<OutputStreamAppender<ILoggingEvent>> streamAppenders(Logger root) {
        List<OutputStreamAppender<ILoggingEvent>> found = new ArrayList<>();
        for (Iterator<Appender<ILoggingEvent>> appenders = root.iteratorForAppenders(); appenders.hasNext(); ) {
            if (appenders.next() instanceof OutputStreamAppender<ILoggingEvent> stream) {
                found.add(stream);
            }
        }
        return found;
    }

    /**
     * Logback's JSON encoder: one object a line with {@code timestamp} (epoch milliseconds), {@code level},
     * {@code threadName}, {@code loggerName}, {@code context} (its {@code properties}: {@code node},
     * {@code datacenter}), {@code formattedMessage} and {@code throwable} (class, message, frames).
     */
    static Encoder<ILoggingEvent> jsonEncoder(LoggerContext context) {
        JsonEncoder encoder = new JsonEncoder();
        encoder.setContext(context);
        encoder.setWithSequenceNumber(false);
        encoder.setWithNanoseconds(false);
        encoder.setWithMDC(false);
        encoder.setWithKVPList(false);
        encoder.setWithMarkers(false);
        encoder.setWithArguments(false);
        encoder.setWithMessage(false); // the message with its {} placeholders: formattedMessage has them filled in
        encoder.setWithFormattedMessage(true);
        encoder.start();
        return encoder;
    }

    static Encoder<ILoggingEvent> patternEncoder(LoggerContext context, String pattern) {
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern(pattern);
        encoder.start();
        return encoder;
    }

    /**
     * {@code log_file}, rotated by Logback: a {@link RollingFileAppender} whose {@link FixedWindowRollingPolicy} keeps
     * {@code log_rotate_max_files} rotated files ({@code <name>-1<.ext>} the newest), rolled over by
     * {@link SizeOrAgeTriggeringPolicy} ({@code log_rotate_bytes}, {@code log_rotate_duration}).
     */
    private static RollingFileAppender<ILoggingEvent> fileAppender(LoggerContext context, ConclaveConfig.Log log,
                                                                  Encoder<ILoggingEvent> encoder, LongSupplier clockMillis) {
        Path file = log.file().orElseThrow().toAbsolutePath();
        checkWritable(file);
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        String base = dot > 0 ? name.substring(0, dot) : name;
        String extension = dot > 0 ? name.substring(dot) : "";
        RollingFileAppender<ILoggingEvent> appender = new RollingFileAppender<>();
        appender.setContext(context);
        appender.setName(FILE_APPENDER);
        appender.setFile(file.toString());
        appender.setAppend(true);
        appender.setEncoder(encoder);
        FixedWindowRollingPolicy rolling = new FixedWindowRollingPolicy();
        rolling.setContext(context);
        rolling.setParent(appender);
        // %i is the window's index; a literal % in the folder's name would be read as a conversion word
        rolling.setFileNamePattern(file.resolveSibling(base.replace("%", "\\%") + "-%i" + extension.replace("%", "\\%")).toString());
        rolling.setMinIndex(1);
        rolling.setMaxIndex(log.rotateMaxFiles());
        rolling.start();
        SizeOrAgeTriggeringPolicy<ILoggingEvent> trigger = new SizeOrAgeTriggeringPolicy<>(log.rotateBytes(),
                log.rotateDuration().toMillis(), clockMillis);
        trigger.setContext(context);
        trigger.start();
        appender.setRollingPolicy(rolling);
        appender.setTriggeringPolicy(trigger);
        appender.start();
        if (!appender.isStarted()) {
            throw new ConfigException("log_file", "Logback could not open " + file + " (see its messages above)");
        }
        return appender;
    }

    /** Makes the file's folder and opens the file for appending, so that a mistake is one line naming the key. */
    private static void checkWritable(Path file) {
        if (Files.isDirectory(file)) {
            throw new ConfigException("log_file", "value \"" + file + "\" is a folder: end it with '/' to log to "
                    + file.resolve(ConfigLoader.DEFAULT_LOG_FILE_NAME) + " in it");
        }
        try {
            Files.createDirectories(file.getParent());
            try (FileChannel ignored = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND)) {
                // opened for appending: Logback will be able to write it
            }
        } catch (IOException e) {
            throw new ConfigException("log_file", "cannot write " + file + ": " + e);
        }
    }
}
