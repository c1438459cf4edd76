package io.conclave.engine.raft.sim;

/** A checker found a violation. The message carries the seed and the command that replays it. */
public final class SimulationFailure extends AssertionError {
    public SimulationFailure(long seed, String testName, String what) {
        super(what + "\n  seed " + seed + "; replay: mvn -B -pl engine-raft -am verify -Dsurefire.failIfNoSpecifiedTests=false"
                + " -Dtest=" + testName + " -Dsim.seed=" + seed);
    }

    /** An exception thrown inside a seeded run (a bug, not a checker's finding): it keeps the seed too. */
    public static SimulationFailure of(long seed, String testName, RuntimeException cause) {
        SimulationFailure failure = new SimulationFailure(seed, testName, "an exception in the run: " + cause);
        failure.initCause(cause);
        return failure;
    }
}
