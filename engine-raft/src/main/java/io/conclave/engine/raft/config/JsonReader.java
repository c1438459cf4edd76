package io.conclave.engine.raft.config;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Reads one JSON object of the configuration, key by key, with the checks and messages every key needs;
 * {@link #finish()} then rejects the keys nobody read.
 */
final class JsonReader {

    private final JsonObject object;
    private final String prefix;
    private final Set<String> read = new HashSet<>();

    JsonReader(JsonObject object, String prefix) {
        this.object = object == null ? new JsonObject() : object;
        this.prefix = prefix;
    }

    String path(String key) {
        return prefix.isEmpty() ? key : prefix + "." + key;
    }

    boolean has(String key) {
        read.add(key);
        return object.containsKey(key) && object.getValue(key) != null;
    }

    String string(String key, String defaultValue) {
        if (!has(key)) {
            return defaultValue;
        }
        Object value = object.getValue(key);
        if (!(value instanceof String text)) {
            throw wrongType(key, value, "a string");
        }
        return text;
    }

    boolean bool(String key, boolean defaultValue) {
        if (!has(key)) {
            return defaultValue;
        }
        Object value = object.getValue(key);
        if (!(value instanceof Boolean flag)) {
            throw wrongType(key, value, "true or false");
        }
        return flag;
    }

    long integer(String key, long defaultValue, long min, long max) {
        if (!has(key)) {
            return defaultValue;
        }
        Object value = object.getValue(key);
        if (!(value instanceof Number number) || value instanceof Double || value instanceof Float) {
            throw wrongType(key, value, "a whole number from " + min + " to " + max);
        }
        long result = number.longValue();
        if (result < min || result > max) {
            throw new ConfigException(path(key), "value " + result + " is out of range: allowed " + min + " to " + max);
        }
        return result;
    }

    Duration duration(String key, Duration defaultValue, Duration min, Duration max) {
        if (!has(key)) {
            return defaultValue;
        }
        Object value = object.getValue(key);
        if (!(value instanceof String text)) {
            throw wrongType(key, value, "a duration string such as \"200ms\" or \"5s\"");
        }
        Duration result;
        try {
            result = Durations.parse(text);
        } catch (IllegalArgumentException | ArithmeticException e) {
            throw new ConfigException(path(key), e.getMessage());
        }
        if (result.compareTo(min) < 0 || result.compareTo(max) > 0) {
            throw new ConfigException(path(key), "value \"" + text + "\" is out of range: allowed "
                    + Durations.format(min) + " to " + Durations.format(max));
        }
        return result;
    }

    List<String> strings(String key, int maxCount) {
        if (!has(key)) {
            return List.of();
        }
        Object value = object.getValue(key);
        if (!(value instanceof JsonArray array)) {
            throw wrongType(key, value, "an array of strings");
        }
        if (array.size() > maxCount) {
            throw new ConfigException(path(key), array.size() + " entries: allowed at most " + maxCount);
        }
        List<String> result = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            Object item = array.getValue(i);
            if (!(item instanceof String text)) {
                throw new ConfigException(path(key) + "[" + i + "]", "value " + render(item) + " has the wrong type: expected a string");
            }
            result.add(text);
        }
        return List.copyOf(result);
    }

    JsonReader object(String key) {
        if (!has(key)) {
            return new JsonReader(new JsonObject(), path(key));
        }
        Object value = object.getValue(key);
        if (!(value instanceof JsonObject child)) {
            throw wrongType(key, value, "an object");
        }
        return new JsonReader(child, path(key));
    }

    /** The raw object under {@code key} (for free-form sections), or an empty object. */
    JsonObject rawObject(String key) {
        if (!has(key)) {
            return new JsonObject();
        }
        Object value = object.getValue(key);
        if (!(value instanceof JsonObject child)) {
            throw wrongType(key, value, "an object");
        }
        return child.copy();
    }

    /** The value under {@code key} as it is (marked read), or {@code null}. */
    Object raw(String key) {
        return has(key) ? object.getValue(key) : null;
    }

    Set<String> keys() {
        return object.fieldNames();
    }

    void finish() {
        Set<String> unknown = new TreeSet<>(object.fieldNames());
        unknown.removeAll(read);
        if (!unknown.isEmpty()) {
            String key = unknown.iterator().next();
            throw new ConfigException(path(key), "unknown key; allowed keys here: " + new TreeSet<>(read));
        }
    }

    private ConfigException wrongType(String key, Object value, String expected) {
        return new ConfigException(path(key), "value " + render(value) + " has the wrong type: expected " + expected);
    }

    private static String render(Object value) {
        if (value instanceof String text) {
            return "\"" + text + "\"";
        }
        if (value instanceof JsonObject) {
            return "{...}";
        }
        if (value instanceof JsonArray) {
            return "[...]";
        }
        return String.valueOf(value);
    }
}
