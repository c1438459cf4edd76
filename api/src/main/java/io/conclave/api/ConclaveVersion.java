package io.conclave.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/** The version of Conclave, read once from the build. */
public final class ConclaveVersion {

    private static final String CURRENT = load();

    private ConclaveVersion() {
    }

    /** The version of this build, for example {@code 0.1.0-SNAPSHOT}. */
    public static String current() {
        return CURRENT;
    }

    private static String load() {
        try (InputStream in = ConclaveVersion.class.getResourceAsStream("version.properties")) {
            if (in == null) {
                throw new IllegalStateException("io/conclave/api/version.properties is missing from the api jar");
            }
            Properties properties = new Properties();
            properties.load(in);
            return properties.getProperty("version");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
