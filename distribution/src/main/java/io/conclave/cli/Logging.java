package io.conclave.cli;

/** Defaults for slf4j-simple, set before the first logger is made; a -D on the command line wins. */
final class Logging {

    private Logging() {
    }

    static void configureDefaults() {
        setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
        setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX");
        setIfAbsent("org.slf4j.simpleLogger.showThreadName", "false");
        setIfAbsent("org.slf4j.simpleLogger.logFile", "System.out");
        setIfAbsent("org.slf4j.simpleLogger.log.io.netty", "warn");
        setIfAbsent("org.slf4j.simpleLogger.log.io.vertx", "warn");
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
