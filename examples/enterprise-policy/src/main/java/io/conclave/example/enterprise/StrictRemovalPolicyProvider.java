package io.conclave.example.enterprise;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.policy.RemovalPolicyProvider;
import io.conclave.api.policy.ServerRemovalPolicy;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Provides {@link StrictRemovalPolicy} with {@link Provider#PRIORITY_OVERRIDE}: it wins over the shipped {@code auto}
 * and {@code legacy} policies unless the configuration names one under {@code plugins.removal_policy}. Its one
 * setting, {@code plugin_config.strict.min_drain_time} ({@code "500ms"}, {@code "2s"}, {@code "1m"}; default 0, at
 * most 10 minutes), is the shortest drain a leave may have.
 */
public final class StrictRemovalPolicyProvider implements RemovalPolicyProvider {

    private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m)");
    private static final Duration MAX_DRAIN = Duration.ofMinutes(10);

    @Override
    public String name() {
        return StrictRemovalPolicy.NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_OVERRIDE;
    }

    @Override
    public String description() {
        return "enterprise example: shutdown-on-remove always (no legacy case), leaves drain at least min_drain_time";
    }

    @Override
    public ServerRemovalPolicy create(PluginContext context) {
        JsonObject config = context.configuration();
        for (String key : config.fieldNames()) {
            if (!key.equals("min_drain_time")) {
                throw new IllegalArgumentException("plugin_config.strict." + key + ": unknown key; allowed keys here: [min_drain_time]");
            }
        }
        return new StrictRemovalPolicy(drain(config.getValue("min_drain_time", "0s")));
    }

    static Duration drain(Object value) {
        Matcher matcher = value instanceof String text ? DURATION.matcher(text) : null;
        if (matcher == null || !matcher.matches()) {
            throw new IllegalArgumentException("plugin_config.strict.min_drain_time: value " + value
                    + " is not allowed: a duration such as \"500ms\", \"2s\" or \"1m\"");
        }
        long amount = Long.parseLong(matcher.group(1));
        Duration drain = switch (matcher.group(2)) {
            case "ms" -> Duration.ofMillis(amount);
            case "s" -> Duration.ofSeconds(amount);
            default -> Duration.ofMinutes(amount);
        };
        if (drain.compareTo(MAX_DRAIN) > 0) {
            throw new IllegalArgumentException("plugin_config.strict.min_drain_time: value " + value + " is longer than 10m");
        }
        return drain;
    }
}
