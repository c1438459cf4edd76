package io.conclave.example.enterprise;

import io.conclave.api.PluginContext;
import io.conclave.api.Provider;
import io.conclave.api.autopilot.Promoter;
import io.conclave.api.autopilot.PromoterProvider;
import io.vertx.core.json.JsonObject;

/**
 * Provides {@link RedundancyZonePromoter} with {@link Provider#PRIORITY_OVERRIDE}: present in {@code plugins/}, it
 * replaces the shipped {@code stable} promoter unless the configuration names another under {@code plugins.promoter}.
 * Its one setting, {@code plugin_config.redundancy-zones.zone_tag}, is the {@code node_meta} key naming the zone.
 */
public final class RedundancyZonePromoterProvider implements PromoterProvider {

    private static final java.util.regex.Pattern KEY = java.util.regex.Pattern.compile("[A-Za-z0-9_-]{1,64}");

    @Override
    public String name() {
        return RedundancyZonePromoter.NAME;
    }

    @Override
    public int priority() {
        return Provider.PRIORITY_OVERRIDE;
    }

    @Override
    public String description() {
        return "enterprise example: one voter per redundancy zone (node_meta zone), the zone's stand-in promoted when it fails";
    }

    @Override
    public Promoter create(PluginContext context) {
        JsonObject config = context.configuration();
        for (String key : config.fieldNames()) {
            if (!key.equals("zone_tag")) {
                throw new IllegalArgumentException("plugin_config." + RedundancyZonePromoter.NAME + "." + key + ": unknown key; allowed keys here: [zone_tag]");
            }
        }
        Object tag = config.getValue("zone_tag", RedundancyZonePromoter.DEFAULT_ZONE_TAG);
        if (!(tag instanceof String text) || !KEY.matcher(text).matches()) {
            throw new IllegalArgumentException("plugin_config." + RedundancyZonePromoter.NAME + ".zone_tag: value " + tag
                    + " is not allowed: a node_meta key (letters, digits, '_' and '-', at most 64 characters)");
        }
        return new RedundancyZonePromoter(text);
    }
}
