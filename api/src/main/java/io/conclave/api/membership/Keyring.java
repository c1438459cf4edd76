package io.conclave.api.membership;

import io.vertx.core.Future;
import java.util.Map;

/**
 * The gossip encryption keys of every member, as Consul's {@code /v1/operator/keyring} manages them: each member
 * sends with its primary key and accepts every key of its ring. A change is asked of every alive member; the answer
 * says how many hold each key.
 *
 * <p>Keys are the base64 of 16, 24 or 32 bytes. Removing the primary key is refused; so is using a key not
 * installed. Futures complete on the plugin's context; a failed one says which members refused and why.
 */
public interface Keyring {

    /** Every member's keys. */
    Future<Summary> list();

    /** Adds {@code key} to every member's ring (it receives with it; it still sends with its primary). */
    Future<Summary> install(String key);

    /** Makes {@code key}, already installed, every member's primary key. */
    Future<Summary> use(String key);

    /** Removes {@code key} from every member's ring; refused for the primary key. */
    Future<Summary> remove(String key);

    /**
     * What the members answered: Consul's keyring response.
     *
     * @param keys        each key and how many members hold it
     * @param primaryKeys each primary key and how many members send with it
     * @param numNodes    how many members were asked
     * @param messages    member name to the reason it refused or did not answer
     */
    record Summary(Map<String, Integer> keys, Map<String, Integer> primaryKeys, int numNodes, Map<String, String> messages) {
        public Summary {
            keys = Map.copyOf(keys);
            primaryKeys = Map.copyOf(primaryKeys);
            messages = Map.copyOf(messages);
        }
    }
}
