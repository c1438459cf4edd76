/** What the tests of every module share: client histories and their checker, the one polling wait, HTTP calls to an agent. */
module io.conclave.testsupport {
    requires transitive java.net.http;

    exports io.conclave.testsupport;
}
