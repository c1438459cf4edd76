package io.conclave.cli;

import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/**
 * {@code conclave keygen}: a new gossip encryption key for {@code encrypt}, as Consul's {@code keygen} makes one:
 * 32 random bytes (AES-256) in standard base64. Needs no agent.
 */
@Command(name = "keygen", description = "Prints a new gossip encryption key (32 random bytes, base64) for encrypt.",
        footer = {"  conclave keygen"})
final class KeygenCommand implements Callable<Integer> {

    static final int KEY_BYTES = 32;

    @Override
    public Integer call() {
        System.out.println(newKey(new SecureRandom()));
        return 0;
    }

    static String newKey(SecureRandom random) {
        byte[] key = new byte[KEY_BYTES];
        random.nextBytes(key);
        return Base64.getEncoder().encodeToString(key);
    }
}
