package io.conclave.api.membership;

import java.util.Objects;

/** A change of one member. */
public record MembershipEvent(Type type, Member member) {

    public enum Type {
        /** A new member was seen alive. */
        JOINED,
        /** A member's tags or address changed. */
        UPDATED,
        /** A member announced it leaves (a leave intent): it is not failed. */
        LEFT,
        /** A member stopped answering without a leave intent. */
        FAILED,
        /** A left or failed member was forgotten. */
        REAPED
    }

    public MembershipEvent {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(member, "member");
    }
}
