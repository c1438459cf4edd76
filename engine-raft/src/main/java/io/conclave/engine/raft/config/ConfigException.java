package io.conclave.engine.raft.config;

/** The configuration is wrong. The message names the key, the value and what is allowed. */
public class ConfigException extends RuntimeException {
    private final String key;

    public ConfigException(String key, String message) {
        super(key == null ? message : key + ": " + message);
        this.key = key;
    }

    /** The offending key as a dotted path ({@code raft.election_timeout_min}), or {@code null} for the file. */
    public String key() {
        return key;
    }
}
