package io.conclave.plugin.gossip;

import java.util.regex.Pattern;

/** {@code host:port} strings, the form every address takes inside the plugin. */
final class Addresses {
    private static final Pattern HOST_PORT = Pattern.compile("(\\[[0-9A-Fa-f:.]{2,45}\\]|[A-Za-z0-9._-]{1,253}):(\\d{1,5})");

    private Addresses() {
    }

    static boolean isHostPort(String address) {
        var matcher = HOST_PORT.matcher(address);
        if (!matcher.matches()) {
            return false;
        }
        int port = Integer.parseInt(matcher.group(2));
        return port > 0 && port <= 65535;
    }

    static String host(String address) {
        String host = address.substring(0, address.lastIndexOf(':'));
        return host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    }

    static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    static String of(String host, int port) {
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
    }
}
