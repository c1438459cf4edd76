package io.conclave.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.Appender;
import ch.qos.logback.core.AppenderBase;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.filter.Filter;
import ch.qos.logback.core.spi.FilterReply;
import io.conclave.engine.raft.service.LogSource;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * The distribution's log lines for {@code /v1/agent/monitor}, from Logback: an appender on the root logger hands each
 * event to the monitors that asked for its level, formatted as the console writes it (or as JSON). A monitor may ask for
 * a level below {@code log_level}: Conclave's loggers then log at the lowest level a monitor asks for, and the agent's
 * own appenders keep showing only {@code log_level} and above (a filter on each), so a monitor never changes the log.
 */
final class LogbackLogSource implements LogSource {

    private record Subscriber(Level level, boolean json, Consumer<String> sink) {
    }

    private final LoggerContext context;
    private final List<Subscriber> subscribers = new CopyOnWriteArrayList<>();
    /** The level the agent's own log shows for Conclave's loggers: {@code log_level}, changed by a reload. */
    private volatile Level configured;
    private final Appender<ILoggingEvent> appender;
    private final PatternLayout text;
    private final Encoder<ILoggingEvent> json;

    LogbackLogSource(LoggerContext context, String logLevel) {
        this.context = context;
        this.configured = Level.toLevel(logLevel.toUpperCase(Locale.ROOT));
        this.text = new PatternLayout();
        text.setContext(context);
        text.setPattern(Logging.TEXT_PATTERN);
        text.start();
        this.json = Logging.jsonEncoder(context);
        Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        for (Iterator<Appender<ILoggingEvent>> appenders = root.iteratorForAppenders(); appenders.hasNext(); ) {
            appenders.next().addFilter(new OwnLevel()); // before the monitor's appender exists: only the agent's own
        }
        this.appender = new AppenderBase<>() {
            @Override
            protected void append(ILoggingEvent event) {
                deliver(event);
            }
        };
        appender.setContext(context);
        appender.setName("MONITOR");
        appender.start();
        root.addAppender(appender);
    }

    /** The agent's own appenders show Conclave's loggers at {@code log_level} and above, whatever a monitor asked for. */
    private final class OwnLevel extends Filter<ILoggingEvent> {
        OwnLevel() {
            start();
        }

        @Override
        public FilterReply decide(ILoggingEvent event) {
            return conclaves(event.getLoggerName()) && !event.getLevel().isGreaterOrEqual(configured) ? FilterReply.DENY : FilterReply.NEUTRAL;
        }
    }

    private static boolean conclaves(String logger) {
        return Logging.CONCLAVE_LOGGERS.stream().anyMatch(name -> logger.equals(name) || logger.startsWith(name + "."));
    }

    private void deliver(ILoggingEvent event) {
        String textLine = null;
        String jsonLine = null;
        for (Subscriber subscriber : subscribers) {
            if (!event.getLevel().isGreaterOrEqual(subscriber.level())) {
                continue;
            }
            if (subscriber.json()) {
                if (jsonLine == null) {
                    jsonLine = new String(json.encode(event), StandardCharsets.UTF_8);
                }
                subscriber.sink().accept(jsonLine);
            } else {
                if (textLine == null) {
                    textLine = text.doLayout(event);
                }
                subscriber.sink().accept(textLine);
            }
        }
    }

    @Override
    public AutoCloseable subscribe(String level, boolean asJson, Consumer<String> sink) {
        if (!LEVELS.contains(level)) {
            throw new IllegalArgumentException("unknown log level '" + level + "': " + LEVELS);
        }
        Subscriber subscriber = new Subscriber(Level.toLevel(level.toUpperCase(Locale.ROOT)), asJson, sink);
        subscribers.add(subscriber);
        levelLoggers();
        return () -> {
            subscribers.remove(subscriber);
            levelLoggers();
        };
    }

    @Override
    public void level(String level) {
        configured = Level.toLevel(level.toUpperCase(Locale.ROOT));
        levelLoggers();
    }

    /** Conclave's loggers log at the lowest of {@code log_level} and what the monitors ask (levels pinned in logback.xml stay). */
    private synchronized void levelLoggers() {
        Level lowest = configured;
        for (Subscriber subscriber : subscribers) {
            if (!subscriber.level().isGreaterOrEqual(lowest)) {
                lowest = subscriber.level();
            }
        }
        for (String name : Logging.CONCLAVE_LOGGERS) {
            Logger logger = context.getLogger(name);
            if (!Logging.pinned(logger)) {
                logger.setLevel(lowest);
            }
        }
    }
}
