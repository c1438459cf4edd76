package io.conclave.engine.raft.http;

import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.HttpServerRequest;
import io.vertx.core.http.HttpServerResponse;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The web UI ({@code ui_config.enabled}, {@code -ui}): its files, kept inside this module's jar under
 * {@code io/conclave/engine/raft/http/ui/}, served at {@code /ui/}, and {@code /} redirected there, as Consul's agent
 * does. Nothing is fetched from elsewhere at run time: the pages are plain JavaScript modules that read this agent's
 * own HTTP API.
 *
 * <p>Every answer carries a strict {@link #CONTENT_SECURITY_POLICY} (scripts, styles and requests from this origin
 * only, no inline script, no {@code eval}, no framing), so that a key or node name that slipped into the page as markup
 * could still run nothing. Each file has a strong {@code ETag} (a hash of its bytes) and {@code Cache-Control:
 * no-cache}: a browser keeps it but asks again each time, and a file that did not change is answered 304 without a
 * body. The names of the files are not versioned, so a longer cache would show an upgraded agent's old pages.
 *
 * <p>The files are read once, at construction (tens of kilobytes), so that a request never touches the disk and the
 * handlers never block. The folder is not the top-level {@code ui/}: in a module every resource folder is a package,
 * and a {@code ui} package in another module on the module path would stop the agent from starting (a split package).
 */
public final class UiHttpApi {

    /** Where the UI is served. */
    public static final String PREFIX = "/ui/";

    /**
     * The policy of every UI answer: everything from this agent's origin, nothing inline, nothing evaluated, no plugin,
     * no frame around the pages, and forms and the base URL pinned.
     */
    public static final String CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            + "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

    /** Browsers revalidate each file every time (the ETag makes that a 304 without a body). */
    public static final String CACHE_CONTROL = "no-cache";

    /** The UI's files, relative to {@link #RESOURCES}: a list, since a module's resources cannot be listed. */
    static final List<String> FILES = List.of("index.html", "style.css", "app.js", "api.js", "dom.js", "pages/overview.js",
            "pages/members.js", "pages/kv.js", "pages/sessions.js", "pages/services.js", "pages/nodes.js", "pages/timeline.js", "favicon.svg");

    private static final String RESOURCES = "ui/";

    private static final Map<String, String> CONTENT_TYPES = Map.of(
            "html", "text/html; charset=utf-8",
            "css", "text/css; charset=utf-8",
            "js", "text/javascript; charset=utf-8",
            "svg", "image/svg+xml",
            "png", "image/png");

    /** One file, as served. */
    record Asset(Buffer body, String contentType, String etag) {
    }

    private final Map<String, Asset> assets = new LinkedHashMap<>();

    /**
     * Reads the UI's files from this module.
     *
     * @throws IllegalStateException when one is missing from the jar (a broken build)
     */
    public UiHttpApi() {
        for (String file : FILES) {
            assets.put(file, load(file));
        }
    }

    private static Asset load(String file) {
        try (InputStream in = UiHttpApi.class.getResourceAsStream(RESOURCES + file)) {
            if (in == null) {
                throw new IllegalStateException("the web UI's file " + file + " is missing from the engine's jar");
            }
            byte[] bytes = in.readAllBytes();
            String extension = file.substring(file.lastIndexOf('.') + 1);
            String contentType = CONTENT_TYPES.getOrDefault(extension, "application/octet-stream");
            return new Asset(Buffer.buffer(bytes), contentType, etagOf(bytes));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the web UI's file " + file, e);
        }
    }

    /** A strong validator: the first 128 bits of the file's SHA-256, quoted. */
    static String etagOf(byte[] bytes) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(bytes);
            return "\"" + HexFormat.of().formatHex(digest, 0, 16) + "\"";
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every JDK", e);
        }
    }

    public void register(HttpApi http) {
        for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.HEAD)) {
            http.route(method, "/", UiHttpApi::redirect);
            http.route(method, "/ui", UiHttpApi::redirect);
            http.routePrefix(method, PREFIX, this::serve);
        }
    }

    /** {@code /} and {@code /ui}: to the UI. 302, not Consul's 301, so that a browser does not keep it once the UI is off. */
    private static void redirect(HttpServerRequest request) {
        request.response().setStatusCode(302).putHeader("Location", PREFIX).putHeader("Cache-Control", CACHE_CONTROL).end();
    }

    private void serve(HttpServerRequest request) {
        String file = request.path().substring(PREFIX.length());
        Asset asset = assets.get(file.isEmpty() ? "index.html" : file);
        if (asset == null) { // the pages route with the URL's fragment (#/kv/...), so no other path is a page
            HttpApi.error(request, 404, "no such file in the web UI: " + request.path());
            return;
        }
        HttpServerResponse response = request.response()
                .putHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY)
                .putHeader("X-Content-Type-Options", "nosniff")
                .putHeader("Referrer-Policy", "no-referrer")
                .putHeader("X-Frame-Options", "DENY")
                .putHeader("Cache-Control", CACHE_CONTROL)
                .putHeader("ETag", asset.etag());
        if (matches(request.getHeader("If-None-Match"), asset.etag())) {
            response.setStatusCode(304).end();
            return;
        }
        response.putHeader("Content-Type", asset.contentType()).setStatusCode(200);
        if (request.method().equals(HttpMethod.HEAD)) {
            response.putHeader("Content-Length", Integer.toString(asset.body().length())).end();
        } else {
            response.end(asset.body());
        }
    }

    /** Whether an {@code If-None-Match} header names {@code etag} (or is {@code *}); weak forms match too, as RFC 9110 says. */
    static boolean matches(String ifNoneMatch, String etag) {
        if (ifNoneMatch == null) {
            return false;
        }
        for (String candidate : ifNoneMatch.split(",")) {
            String tag = candidate.trim();
            if (tag.startsWith("W/")) {
                tag = tag.substring(2);
            }
            if (tag.equals("*") || tag.equals(etag)) {
                return true;
            }
        }
        return false;
    }
}
