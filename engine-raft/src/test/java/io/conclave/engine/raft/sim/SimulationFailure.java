package io.conclave.engine.raft.sim;

/** A checker found a violation. The message carries the seed and the command that replays it. */
public final class SimulationFailure extends AssertionError {
    public SimulationFailure(long seed, String testName, String what) {
        super(what + "\n  seed " + seed + "; replay: mvn -B -pl engine-raft -am verify -Dsurefire.failIfNoSpecifiedTests=false"
                + " -Dtest=" + testName + " -Dsim.seed=" + seed);
    }
}
