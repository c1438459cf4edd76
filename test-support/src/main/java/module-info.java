/** What the simulator's tests and the real-process reliability suite share: client histories and their checker. */
module io.conclave.testsupport {
    exports io.conclave.testsupport;
}
