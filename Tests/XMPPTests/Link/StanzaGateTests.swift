import Testing
import XMLStream

@testable import XMPP

@Suite(.timeLimit(.minutes(1)))
struct StanzaGateTests {
    private func stanza(_ id: String) -> Element { Element("message", ["id": id]) }

    @Test func pastItsHandlersStanzasWaitAndEachEndingHandlerTakesTheNext() {
        let gate = StanzaGate<Element>(maxHandling: 2, maxWaiting: 3)
        #expect(gate.admit(stanza("1")))
        #expect(gate.admit(stanza("2")))
        #expect(!gate.admit(stanza("3")))
        #expect(!gate.admit(stanza("4")))
        #expect(gate.held == (2, 2))
        #expect(gate.next()?[attribute: "id"] == "3")
        #expect(gate.next()?[attribute: "id"] == "4")
        #expect(gate.held == (2, 0))
        #expect(gate.next() == nil)
        #expect(gate.held == (1, 0))
        #expect(gate.admit(stanza("5")))
    }

    @Test func theReaderIsHeldOnlyWhileTheLineIsFull() async {
        let gate = StanzaGate<Element>(maxHandling: 1, maxWaiting: 2)
        #expect(gate.admit(stanza("1")))
        #expect(!gate.admit(stanza("2")))
        await gate.waitForRoom()  // one place left: returns at once
        #expect(!gate.admit(stanza("3")))
        let reader = Task { await gate.waitForRoom() }
        while !gate.isHoldingReader { await Task.yield() }
        #expect(gate.next()?[attribute: "id"] == "2")
        await reader.value
        #expect(!gate.isHoldingReader)
    }

    @Test func cancellingTheReaderEndsItsWait() async {
        let gate = StanzaGate<Element>(maxHandling: 1, maxWaiting: 1)
        #expect(gate.admit(stanza("1")))
        #expect(!gate.admit(stanza("2")))
        let reader = Task { await gate.waitForRoom() }
        while !gate.isHoldingReader { await Task.yield() }
        reader.cancel()
        await reader.value
        #expect(gate.held == (1, 1))
    }
}
