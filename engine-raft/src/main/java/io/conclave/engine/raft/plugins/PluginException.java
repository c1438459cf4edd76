package io.conclave.engine.raft.plugins;

/** Plugins could not be loaded or selected. The message names the plugin, the SPI or the configuration key. */
public class PluginException extends RuntimeException {
    public PluginException(String message) {
        super(message);
    }

    public PluginException(String message, Throwable cause) {
        super(message, cause);
    }
}
