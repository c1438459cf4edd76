package io.conclave.cli;

/** Defaults for slf4j-simple, set before the first logger is made; a -D on the command line wins. */
final class Logging {

    private Logging() {
    }

    /**
     * The distribution's {@code conf/logging.properties} first (when {@code conclave.home} names a distribution that has
     * one), then these defaults for what it leaves out; a -D on the command line wins over both.
     */
    static void configureDefaults() {
        String home = System.getProperty("conclave.home");
        if (home != null) {
            java.nio.file.Path file = java.nio.file.Path.of(home, "conf", "logging.properties");
            if (java.nio.file.Files.isRegularFile(file)) {
                java.util.Properties properties = new java.util.Properties();
                try (java.io.Reader reader = java.nio.file.Files.newBufferedReader(file, java.nio.charset.StandardCharsets.UTF_8)) {
                    properties.load(reader);
                    properties.stringPropertyNames().forEach(key -> setIfAbsent(key, properties.getProperty(key).strip()));
                } catch (java.io.IOException | IllegalArgumentException e) {
                    System.err.println("conclave: " + file + " was not read (" + e.getMessage() + "); logging uses its defaults");
                }
            }
        }
        setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
        setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX");
        setIfAbsent("org.slf4j.simpleLogger.showThreadName", "false");
        setIfAbsent("org.slf4j.simpleLogger.logFile", "System.out");
        setIfAbsent("org.slf4j.simpleLogger.log.io.netty", "warn");
        setIfAbsent("org.slf4j.simpleLogger.log.io.vertx", "warn");
    }

    /**
     * The configuration's {@code log_level} for Conclave's loggers ({@code conclave.*}, {@code io.conclave.*}).
     * slf4j-simple fixes its default level when it starts, which reading the configuration may already have
     * caused (Vert.x's JSON support logs); a logger's own level is read when the logger is made, and Conclave
     * makes its loggers after this call. A -D on the command line still wins.
     */
    static void applyLevel(String logLevel) {
        String level = logLevel.toLowerCase(java.util.Locale.ROOT);
        setIfAbsent("org.slf4j.simpleLogger.log.conclave", level);
        setIfAbsent("org.slf4j.simpleLogger.log.io.conclave", level);
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
