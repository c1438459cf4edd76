package io.conclave.engine.raft.http;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Consul's {@code ?filter} expressions (its go-bexpr language), parsed once and evaluated against each element of an
 * answer as Consul shows it in JSON, so that a selector names what a client reads: {@code Service.Tags},
 * {@code Node.Meta.rack}, {@code Checks.Status}.
 *
 * <pre>
 *   expression := or
 *   or         := and ("or" and)*
 *   and        := not ("and" not)*
 *   not        := "not" not | "(" expression ")" | match
 *   match      := selector ("==" | "!=") value
 *               | selector "is" ["not"] "empty"
 *               | selector ["not"] ("contains" | "matches") value
 *               | value ["not"] "in" selector
 *   selector   := name ("." name | "[" string "]")*
 *   value      := "string" | `raw string` | number | true | false | bare-word
 * </pre>
 *
 * Semantics, go-bexpr's: a selector that crosses a list ({@code Checks.Status}) matches when any element does
 * ({@code !=} and {@code not ...} when none does); {@code in} and {@code contains} look for an element of a list, a
 * key of a map, or a substring of a string; {@code matches} looks for the regular expression anywhere in the value;
 * {@code is empty} holds for a missing value, an empty string, list or map. A map's key that is absent matches nothing
 * but {@code !=}, {@code is empty} and {@code not ...}.
 *
 * <p>Every selector is checked at parse time against the endpoint's {@link Field} schema, and every error — a syntax
 * error, an unknown selector, a regular expression that does not compile — is a {@link Invalid} naming the position
 * (from 0) where it was found, answered 400. Bounded: {@link #MAX_BYTES}, {@link #MAX_DEPTH} levels of nesting (the
 * parser recurses), {@link #MAX_REGEX_STEPS} steps of each regular expression match (Java's matcher backtracks where
 * Go's RE2 does not, so a costly pattern is cut off rather than left to run).
 */
public final class Filter {

    /** The longest expression: far above any real filter, below the HTTP server's 8 KiB request line. */
    public static final int MAX_BYTES = 4096;
    /** The deepest nesting of parentheses and {@code not}: the parser recurses once per level. */
    public static final int MAX_DEPTH = 64;
    /** The most characters one regular expression match may read (backtracking included) before it is cut off. */
    public static final int MAX_REGEX_STEPS = 100_000;

    /** A filter that cannot be used: answered 400 with its message, which names the position. */
    public static final class Invalid extends RuntimeException {
        public Invalid(String message) {
            super(message, null, false, false);
        }
    }

    /** What a selector may name: an endpoint's element, as Consul's filter documentation lists its selectors. */
    public static final class Field {
        enum Kind { VALUE, LIST, MAP, OBJECT, OBJECTS }

        final Kind kind;
        final Map<String, Field> fields;
        final Field values;

        private Field(Kind kind, Map<String, Field> fields, Field values) {
            this.kind = kind;
            this.fields = fields;
            this.values = values;
        }

        /** A string, number or boolean. */
        public static final Field VALUE = new Field(Kind.VALUE, Map.of(), null);
        /** A list of values (tags). */
        public static final Field LIST = new Field(Kind.LIST, Map.of(), null);
        /** A map of names to values (metadata, a node's tagged addresses). */
        public static final Field MAP = new Field(Kind.MAP, Map.of(), VALUE);

        /** An object with these fields. */
        public static Field object(Map<String, Field> fields) {
            return new Field(Kind.OBJECT, Map.copyOf(fields), null);
        }

        /** A list of objects with these fields (a service's checks). */
        public static Field objects(Map<String, Field> fields) {
            return new Field(Kind.OBJECTS, Map.copyOf(fields), null);
        }

        /** A map of names to objects with these fields (a service's tagged addresses). */
        public static Field mapOf(Field values) {
            return new Field(Kind.MAP, Map.of(), values);
        }
    }

    private final Node root;

    private Filter(Node root) {
        this.root = root;
    }

    /**
     * Parses {@code expression} against {@code schema} (the fields of the elements it will be evaluated on).
     *
     * @throws Invalid naming what is wrong and where
     */
    public static Filter parse(String expression, Field schema) {
        int bytes = expression.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_BYTES) {
            throw new Invalid("filter of " + bytes + " bytes is above the " + MAX_BYTES + " byte limit");
        }
        Parser parser = new Parser(expression, schema);
        Node root = parser.or(0);
        parser.skipSpace();
        if (parser.position < expression.length()) {
            throw parser.error("expected \"and\", \"or\" or the end");
        }
        return new Filter(root);
    }

    /** Whether {@code element} (an answer's element as Consul's JSON shows it) passes the filter. Any thread. */
    public boolean test(JsonObject element) {
        return root.test(element);
    }

    // ---------------------------------------------------------------- the tree

    private interface Node {
        boolean test(JsonObject element);
    }

    private record And(Node left, Node right) implements Node {
        public boolean test(JsonObject element) {
            return left.test(element) && right.test(element);
        }
    }

    private record Or(Node left, Node right) implements Node {
        public boolean test(JsonObject element) {
            return left.test(element) || right.test(element);
        }
    }

    private record Not(Node inner) implements Node {
        public boolean test(JsonObject element) {
            return !inner.test(element);
        }
    }

    private enum Operator { EQUAL, EMPTY, CONTAINS, MATCHES }

    /** A match: {@code negated} when written {@code !=}, {@code not ...} or {@code is not empty}. */
    private record Match(List<String> selector, Operator operator, Object value, Pattern pattern, boolean negated) implements Node {
        public boolean test(JsonObject element) {
            List<Object> found = new ArrayList<>();
            boolean crossedList = resolve(element, selector, 0, found);
            boolean holds = switch (operator) {
                case EQUAL -> found.stream().anyMatch(candidate -> equal(candidate, value));
                case EMPTY -> found.isEmpty() || found.stream().allMatch(Match::empty);
                case CONTAINS -> found.stream().anyMatch(candidate -> contains(candidate, value));
                case MATCHES -> found.stream().anyMatch(candidate -> matches(candidate, pattern));
            };
            if (operator == Operator.EMPTY && crossedList) {
                holds = found.stream().allMatch(Match::empty);
            }
            return holds != negated;
        }

        private static boolean empty(Object value) {
            return value == null || (value instanceof String text && text.isEmpty()) || (value instanceof JsonArray array && array.isEmpty())
                    || (value instanceof JsonObject object && object.isEmpty());
        }
    }

    /**
     * The values {@code selector} names in {@code value}, from its segment {@code at} on; a list crossed mid-way gives
     * one value per element. Whether a list was crossed.
     */
    private static boolean resolve(Object value, List<String> selector, int at, List<Object> found) {
        if (at == selector.size()) {
            found.add(value);
            return false;
        }
        if (value instanceof JsonObject object) {
            return resolve(object.getValue(selector.get(at)), selector, at + 1, found);
        }
        if (value instanceof JsonArray array) {
            for (Object element : array) {
                resolve(element, selector, at, found);
            }
            return true;
        }
        found.add(null); // a missing key, or a value with no fields: nothing to match
        return false;
    }

    private static boolean equal(Object candidate, Object wanted) {
        if (candidate instanceof JsonArray array) {
            return array.stream().anyMatch(element -> equal(element, wanted));
        }
        if (candidate == null) {
            return false;
        }
        if (candidate instanceof Number number && wanted instanceof Number expected) {
            return Double.compare(number.doubleValue(), expected.doubleValue()) == 0;
        }
        if (candidate instanceof Boolean flag) {
            return String.valueOf(flag).equals(String.valueOf(wanted).toLowerCase(Locale.ROOT));
        }
        return text(candidate).equals(text(wanted));
    }

    private static boolean contains(Object candidate, Object wanted) {
        if (candidate instanceof JsonArray array) {
            return array.stream().anyMatch(element -> equal(element, wanted));
        }
        if (candidate instanceof JsonObject map) {
            return map.containsKey(text(wanted));
        }
        return candidate instanceof String string && string.contains(text(wanted));
    }

    private static boolean matches(Object candidate, Pattern pattern) {
        if (candidate instanceof JsonArray array) {
            return array.stream().anyMatch(element -> matches(element, pattern));
        }
        if (candidate == null || candidate instanceof JsonObject) {
            return false;
        }
        return pattern.matcher(new Bounded(text(candidate))).find();
    }

    private static String text(Object value) {
        if (value instanceof Double number && number == Math.rint(number) && !Double.isInfinite(number)) {
            return Long.toString(number.longValue());
        }
        return String.valueOf(value);
    }

    /** A value read by a regular expression, cut off once read {@link #MAX_REGEX_STEPS} times. */
    private static final class Bounded implements CharSequence {
        private final String text;
        private final int[] steps;

        Bounded(String text) {
            this(text, new int[1]);
        }

        private Bounded(String text, int[] steps) {
            this.text = text;
            this.steps = steps;
        }

        @Override
        public int length() {
            return text.length();
        }

        @Override
        public char charAt(int index) {
            if (++steps[0] > MAX_REGEX_STEPS) {
                throw new Invalid("a regular expression of the filter took more than " + MAX_REGEX_STEPS + " steps on one value");
            }
            return text.charAt(index);
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new Bounded(text.substring(start, end), steps);
        }

        @Override
        public String toString() {
            return text;
        }
    }

    // ---------------------------------------------------------------- the parser

    private static final class Parser {
        private final String text;
        private final Field schema;
        int position;

        Parser(String text, Field schema) {
            this.text = text;
            this.schema = schema;
        }

        Invalid error(String what) {
            String found = position >= text.length() ? "the end" : "\"" + text.substring(position, Math.min(text.length(), position + 16))
                    + (position + 16 < text.length() ? "..." : "") + "\"";
            return new Invalid("invalid filter at position " + position + ": " + what + ", found " + found);
        }

        void skipSpace() {
            while (position < text.length() && Character.isWhitespace(text.charAt(position))) {
                position++;
            }
        }

        /** Whether the word {@code word} (a keyword) comes next; consumed if so. */
        boolean keyword(String word) {
            skipSpace();
            int end = position + word.length();
            if (end <= text.length() && text.regionMatches(position, word, 0, word.length())
                    && (end == text.length() || !wordCharacter(text.charAt(end)))) {
                position = end;
                return true;
            }
            return false;
        }

        boolean symbol(String symbol) {
            skipSpace();
            if (text.startsWith(symbol, position)) {
                position += symbol.length();
                return true;
            }
            return false;
        }

        private static boolean wordCharacter(char c) {
            return Character.isLetterOrDigit(c) || c == '_' || c == '-' || c == '.' || c == '/' || c == ':';
        }

        Node or(int depth) {
            Node left = and(depth);
            while (keyword("or")) {
                left = new Or(left, and(depth));
            }
            return left;
        }

        Node and(int depth) {
            Node left = not(depth);
            while (keyword("and")) {
                left = new And(left, not(depth));
            }
            return left;
        }

        Node not(int depth) {
            if (depth >= MAX_DEPTH) {
                throw error("nested more than " + MAX_DEPTH + " levels deep (parentheses and not)");
            }
            skipSpace();
            int start = position;
            if (keyword("not")) {
                skipSpace();
                // "not" starts a negation unless it is "not in"/"not contains" after a value (handled by match)
                return new Not(not(depth + 1));
            }
            position = start;
            if (symbol("(")) {
                Node inner = or(depth + 1);
                if (!symbol(")")) {
                    throw error("expected \")\"");
                }
                return inner;
            }
            return match();
        }

        Node match() {
            skipSpace();
            int start = position;
            if (position < text.length() && (text.charAt(position) == '"' || text.charAt(position) == '`'
                    || Character.isDigit(text.charAt(position)) || text.charAt(position) == '-')) {
                Object value = value();
                return membership(value, start);
            }
            List<String> selector = selector();
            int afterSelector = position;
            if (symbol("==")) {
                return new Match(checked(selector, start), Operator.EQUAL, value(), null, false);
            }
            if (symbol("!=")) {
                return new Match(checked(selector, start), Operator.EQUAL, value(), null, true);
            }
            if (keyword("is")) {
                boolean negated = keyword("not");
                if (!keyword("empty")) {
                    throw error("expected \"empty\" or \"not empty\"");
                }
                return new Match(checked(selector, start), Operator.EMPTY, null, null, negated);
            }
            boolean negated = keyword("not");
            if (keyword("contains")) {
                return new Match(checked(selector, start), Operator.CONTAINS, value(), null, negated);
            }
            if (keyword("matches")) {
                int patternAt = skipAndMark();
                Object value = value();
                Pattern pattern;
                try {
                    pattern = Pattern.compile(text(value));
                } catch (PatternSyntaxException e) {
                    position = patternAt;
                    throw error("not a regular expression (" + e.getDescription() + ")");
                }
                return new Match(checked(selector, start), Operator.MATCHES, value, pattern, negated);
            }
            if (keyword("in")) { // a bare word before "in" was a value, not a selector
                position = afterSelector;
                keyword("not");
                keyword("in");
                return new Match(checked(selector(), afterSelector), Operator.CONTAINS, String.join(".", selector), null, negated);
            }
            throw error("expected \"==\", \"!=\", \"is\", \"contains\", \"matches\" or \"in\"");
        }

        /** {@code value [not] in selector}. */
        private Node membership(Object value, int start) {
            boolean negated = keyword("not");
            if (!keyword("in")) {
                throw error("expected \"in\" or \"not in\" after a value");
            }
            skipSpace();
            int at = position;
            return new Match(checked(selector(), at), Operator.CONTAINS, value, null, negated);
        }

        private int skipAndMark() {
            skipSpace();
            return position;
        }

        List<String> selector() {
            skipSpace();
            List<String> segments = new ArrayList<>();
            segments.add(name());
            while (true) {
                if (position < text.length() && text.charAt(position) == '.') {
                    position++;
                    segments.add(name());
                } else if (position < text.length() && text.charAt(position) == '[') {
                    position++;
                    skipSpace();
                    Object key = value();
                    if (!(key instanceof String name)) {
                        throw error("expected a quoted key");
                    }
                    segments.add(name);
                    if (!symbol("]")) {
                        throw error("expected \"]\"");
                    }
                } else {
                    return segments;
                }
            }
        }

        private String name() {
            int start = position;
            while (position < text.length() && (Character.isLetterOrDigit(text.charAt(position)) || text.charAt(position) == '_'
                    || text.charAt(position) == '-')) {
                position++;
            }
            if (start == position) {
                throw error("expected a selector");
            }
            return text.substring(start, position);
        }

        /** {@code selector} if the schema has it, else an error at {@code at}. */
        List<String> checked(List<String> selector, int at) {
            Field field = schema;
            for (String segment : selector) {
                Field next = switch (field.kind) {
                    case OBJECT, OBJECTS -> field.fields.get(segment);
                    case MAP -> field.values;
                    default -> null;
                };
                if (next == null) {
                    position = at;
                    throw error("Selector \"" + String.join(".", selector) + "\" is not valid");
                }
                field = next;
            }
            return List.copyOf(selector);
        }

        Object value() {
            skipSpace();
            if (position >= text.length()) {
                throw error("expected a value");
            }
            char first = text.charAt(position);
            if (first == '"') {
                StringBuilder value = new StringBuilder();
                position++;
                while (position < text.length() && text.charAt(position) != '"') {
                    char c = text.charAt(position++);
                    if (c == '\\' && position < text.length()) {
                        char escaped = text.charAt(position++);
                        value.append(switch (escaped) {
                            case 'n' -> '\n';
                            case 't' -> '\t';
                            case 'r' -> '\r';
                            default -> escaped;
                        });
                    } else {
                        value.append(c);
                    }
                }
                if (position >= text.length()) {
                    throw error("a string without its closing quote");
                }
                position++;
                return value.toString();
            }
            if (first == '`') {
                int end = text.indexOf('`', position + 1);
                if (end < 0) {
                    throw error("a raw string without its closing backtick");
                }
                String value = text.substring(position + 1, end);
                position = end + 1;
                return value;
            }
            int start = position;
            while (position < text.length() && wordCharacter(text.charAt(position))) {
                position++;
            }
            if (start == position) {
                throw error("expected a value");
            }
            String word = text.substring(start, position);
            if (word.equals("true") || word.equals("false")) {
                return Boolean.valueOf(word);
            }
            try {
                return word.contains(".") || word.contains("e") || word.contains("E") ? (Object) Double.valueOf(word) : (Object) Long.valueOf(word);
            } catch (NumberFormatException e) {
                return word; // a bare word: a string
            }
        }
    }
}
