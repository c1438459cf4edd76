package io.conclave.api.membership;

/** A member's state as membership sees it; the codes are Consul's ({@code /v1/agent/members} {@code Status}). */
public enum MemberStatus {
    ALIVE(1),
    LEAVING(2),
    LEFT(3),
    FAILED(4);

    private final int consulCode;

    MemberStatus(int consulCode) {
        this.consulCode = consulCode;
    }

    /** The number Consul's API uses for this state. */
    public int consulCode() {
        return consulCode;
    }
}
