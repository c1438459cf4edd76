package io.conclave.api.raft;

/** Whether a server in the Raft configuration votes and counts toward majorities. */
public enum Suffrage {
    /** Votes in elections and counts toward the commit quorum. */
    VOTER,
    /** Receives the log but neither votes nor counts; a new server catches up as one before promotion. */
    NONVOTER
}
