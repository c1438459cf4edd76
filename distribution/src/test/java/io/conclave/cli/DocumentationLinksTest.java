package io.conclave.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The README, {@code docs/} and the examples' READMEs speak to users: every link in them is to a file inside the
 * repository that exists (or to a web address), never to a design file beside the repository.
 */
class DocumentationLinksTest {

    private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

    @Test
    void when_the_user_documentation_is_read_then_every_link_is_to_an_existing_file_inside_the_repository() throws Exception {
        Path root = Path.of("..").toAbsolutePath().normalize();
        assertTrue(Files.isRegularFile(root.resolve("README.md")) && Files.isDirectory(root.resolve("docs")), "the repository is at " + root);
        List<Path> pages = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(path -> path.toString().endsWith(".md")).forEach(pages::add);
        }
        try (Stream<Path> examples = Files.walk(root.resolve("examples"))) {
            examples.filter(path -> path.getFileName().toString().equals("README.md") && !path.toString().contains("/target/"))
                    .forEach(pages::add);
        }
        List<String> broken = new ArrayList<>();
        int links = 0;
        for (Path page : pages) {
            Matcher matcher = LINK.matcher(Files.readString(page));
            while (matcher.find()) {
                String link = matcher.group(1);
                if (link.startsWith("https://") || link.startsWith("http://") || link.startsWith("#")) {
                    continue;
                }
                links++;
                Path target = page.getParent().resolve(link.replaceFirst("#.*$", "")).normalize();
                if (!target.startsWith(root)) {
                    broken.add(root.relativize(page) + ": " + link + " points outside the repository");
                } else if (!Files.exists(target)) {
                    broken.add(root.relativize(page) + ": " + link + " does not exist");
                }
            }
        }
        assertEquals(List.of(), broken);
        assertTrue(links >= 20, "links checked: " + links);
        assertTrue(pages.size() >= 8, "pages read: " + pages);
    }
}
