package io.conclave.plugin.gossip;

import java.util.stream.LongStream;

/** The seeds a simulator test runs: {@code -Dgossip.seed=N} replays one, {@code -Dgossip.seeds=N} sets how many,
 * {@code -Psoak} runs ten times the usual number. */
final class Seeds {
    private Seeds() {
    }

    static LongStream of(int count) {
        String one = System.getProperty("gossip.seed");
        if (one != null && !one.isBlank()) {
            return LongStream.of(Long.parseLong(one.trim()));
        }
        // -Psoak raises gossip.defaultSeeds from 20 to 200: every scenario then runs ten times its seeds
        int scale = Math.max(1, Integer.getInteger("gossip.defaultSeeds", 20) / 20);
        int seeds = Integer.getInteger("gossip.seeds", count * scale);
        long base = Long.getLong("gossip.baseSeed", 1);
        return LongStream.range(base, base + seeds);
    }
}
