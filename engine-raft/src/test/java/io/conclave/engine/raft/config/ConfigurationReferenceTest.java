package io.conclave.engine.raft.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.vertx.core.json.JsonObject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code docs/configuration.md} against the configuration code: each section's table lists exactly the keys the
 * loader reads there (the loader's own list, from its "unknown key" answer), and each default written as a plain
 * value is the loader's default (a file setting the key to it reads the same as a file without it).
 */
class ConfigurationReferenceTest {

    private static final Path REFERENCE = Path.of("..", "docs", "configuration.md");
    private static final Pattern SECTION = Pattern.compile("^## (?:`([a-z_]+)`|Top level)\\s*$");
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z_]+)` \\| ([^|]*) \\|");
    private static final Pattern LITERAL = Pattern.compile("^`([^`]+)`$");
    private static final Pattern NUMBER = Pattern.compile("^(\\d+)(?: \\(.*\\))?$");

    /** Section ("" for the top level) to its rows, key to the default column. */
    private static Map<String, Map<String, String>> documented() throws Exception {
        assertTrue(Files.isRegularFile(REFERENCE), "the reference is at " + REFERENCE.toAbsolutePath());
        Map<String, Map<String, String>> sections = new LinkedHashMap<>();
        String section = null;
        for (String line : Files.readAllLines(REFERENCE)) {
            Matcher heading = SECTION.matcher(line);
            if (heading.matches()) {
                section = heading.group(1) == null ? "" : heading.group(1);
                sections.put(section, new LinkedHashMap<>());
                continue;
            }
            Matcher row = ROW.matcher(line);
            if (row.find() && section != null) {
                sections.get(section).put(row.group(1), row.group(2).trim());
            }
        }
        return sections;
    }

    /** The keys the loader reads in {@code section}, as its refusal of an unknown key lists them. */
    private static Set<String> accepted(String section) {
        JsonObject file = new JsonObject().put("data_dir", "/x");
        if (section.isEmpty()) {
            file.put("no_such_key", 1);
        } else {
            file.put(section, new JsonObject().put("no_such_key", 1));
        }
        try {
            ConfigLoader.parse(file.encode(), false, "reference.json");
            return fail("the loader took an unknown key in " + (section.isEmpty() ? "the top level" : section));
        } catch (ConfigException e) {
            Matcher list = Pattern.compile("allowed keys here: \\[(.*)]").matcher(e.getMessage());
            assertTrue(list.find(), e.getMessage());
            return new TreeSet<>(List.of(list.group(1).split(", ")));
        }
    }

    @Test
    void when_the_reference_is_read_then_every_section_lists_exactly_the_keys_the_loader_reads() throws Exception {
        Map<String, Map<String, String>> documented = documented();
        assertEquals(Set.of("", "ports", "dns_config", "raft", "autopilot", "limits", "gossip_lan", "tls", "acl", "ui_config", "plugins"), documented.keySet(),
                "the sections of the reference");
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, Map<String, String>> section : documented.entrySet()) {
            Set<String> code = accepted(section.getKey());
            Set<String> doc = new TreeSet<>(section.getValue().keySet());
            if (!code.equals(doc)) {
                Set<String> missing = new TreeSet<>(code);
                missing.removeAll(doc);
                Set<String> extra = new TreeSet<>(doc);
                extra.removeAll(code);
                wrong.add((section.getKey().isEmpty() ? "top level" : section.getKey()) + ": not documented " + missing
                        + ", documented but not read " + extra);
            }
        }
        assertEquals(List.of(), wrong, "docs/configuration.md and ConfigLoader disagree");
    }

    @Test
    void when_a_default_is_written_as_a_plain_value_then_it_is_the_loaders_default() throws Exception {
        ConclaveConfig none = ConfigLoader.parse("{\"data_dir\": \"/x\"}", false, "reference.json");
        int checked = 0;
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, Map<String, String>> section : documented().entrySet()) {
            for (Map.Entry<String, String> row : section.getValue().entrySet()) {
                Object value = value(row.getValue());
                if (value == null) {
                    continue;
                }
                JsonObject file = new JsonObject().put("data_dir", "/x");
                if (section.getKey().isEmpty()) {
                    file.put(row.getKey(), value);
                } else {
                    file.put(section.getKey(), new JsonObject().put(row.getKey(), value));
                }
                ConclaveConfig set = ConfigLoader.parse(file.encode(), false, "reference.json");
                checked++;
                if (!set.equals(none)) {
                    wrong.add(section.getKey() + "." + row.getKey() + " = " + value);
                }
            }
        }
        assertEquals(List.of(), wrong, "documented defaults that are not the loader's");
        assertTrue(checked >= 40, "the defaults checked: " + checked);
    }

    /** The default column as a JSON value when it is a plain one (a literal or a number), else null. */
    private static Object value(String column) {
        Matcher literal = LITERAL.matcher(column);
        if (literal.matches()) {
            String text = literal.group(1);
            return switch (text) {
                case "true" -> Boolean.TRUE;
                case "false" -> Boolean.FALSE;
                case "[]", "{}" -> null;
                default -> text;
            };
        }
        Matcher number = NUMBER.matcher(column);
        return number.matches() ? Long.valueOf(number.group(1)) : null;
    }
}
