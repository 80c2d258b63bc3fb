import ComponentHost
import Foundation
import Logging
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import APush

@Suite struct StoreAnswerRelayTests {
    static let appServer = try! JID("push.localhost")

    @Test func itAsksOnlyTheAppServer() throws {
        let relay = StoreAnswerRelay(
            store: try SQLitePushStore(.memory), appServer: Self.appServer, logger: .disabled, clock: .system,
            keptFor: .seconds(25), rejected: {})
        #expect(relay.asks(Self.appServer))
        #expect(!relay.asks(try JID("mallory@localhost/x")))
    }

    @Test func anAnswerIsPassedWholeOrWithOnlyItsErrorOrNotAtAll() throws {
        let small = try Element.parse(
            "<iq xmlns='jabber:component:accept' type='result' id='a-1' from='push.localhost'/>")
        #expect(StoreAnswerRelay.message(for: small) == StoreAnswerRelay.kind + small.serialized())

        let padding = String(repeating: "x", count: peerMessageLimit)
        let large = try Element.parse(
            "<iq xmlns='jabber:component:accept' type='error' id='a-2'><pubsub xmlns='http://jabber.org/protocol/pubsub'>"
                + "<publish node='\(padding)'/></pubsub><error type='wait'>"
                + "<resource-constraint xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>")
        let trimmed = try #require(StoreAnswerRelay.message(for: large))
        let passed = try Element.parse(String(trimmed.dropFirst(StoreAnswerRelay.kind.count)))
        #expect(passed.stanzaID == "a-2" && passed.children.count == 1 && passed.child("error") != nil)

        let result = try Element.parse("<iq type='result' id='a-3'><note>\(padding)</note></iq>")
        #expect(StoreAnswerRelay.message(for: result) == StoreAnswerRelay.kind + "<iq type='result' id='a-3'/>")
        let hopeless = try Element.parse("<iq type='result' id='\(padding)'/>")
        #expect(StoreAnswerRelay.message(for: hopeless) == nil)
    }

    @Test func anSQLiteStoreRelaysNothing() throws {
        let relay = StoreAnswerRelay(
            store: try SQLitePushStore(.memory), appServer: try JID("push.localhost"), logger: .disabled,
            clock: .system, keptFor: .seconds(25), rejected: {})
        #expect(try relay.watch { _ in } == nil)
    }

    /// Two instances on one PostgreSQL database: what one passes on, the other hears, as it was read;
    /// another kind of message on the channel, or a damaged one, is not taken for an answer.
    @Test func anAnswerPassedOnByOneInstanceReachesTheOther() async throws {
        let url = try await PostgreSQLServer.shared.url
        let (first, second) = (
            try await PostgreSQLPushStore.open(url: url, componentSecret: testComponentSecret),
            try await PostgreSQLPushStore.open(url: url, componentSecret: testComponentSecret)
        )
        let heard = Mutex<[Element]>([])
        let relays = [first, second].map {
            StoreAnswerRelay(
                store: $0, appServer: Self.appServer, logger: .disabled, clock: .system, keptFor: .seconds(25),
                rejected: {})
        }
        let watch = try #require(try relays[1].watch { answer in heard.withLock { $0.append(answer) } })
        defer { watch.stop() }
        let id = "relay-\(UUID().uuidString)"
        let answer = try Element.parse(
            "<iq xmlns='jabber:component:accept' type='result' id='\(id)' from='push.localhost'/>")
        try await first.tellPeers("other <iq id='\(id)'/>")
        try await first.tellPeers(StoreAnswerRelay.kind + "<iq id='\(id)'")
        let deadline = ContinuousClock.now + .seconds(20)
        while !heard.withLock({ $0.contains { $0.stanzaID == id } }), ContinuousClock.now < deadline {
            relays[0].pass(answer)  // the watch starts on a thread of its own: pass until it hears
            try await Task.sleep(for: .milliseconds(50))
        }
        let mine = heard.withLock { $0.filter { $0.stanzaID == id } }
        #expect(!mine.isEmpty && mine.allSatisfy { $0 == answer })
    }

    /// Issue 25: an answer passed on while PostgreSQL restarts (neither the passing nor the other's
    /// listening goes through) reaches the other instance once both listen again, instead of leaving
    /// its asker to time out and send the push again.
    @Test func anAnswerPassedWhileTheDatabaseRestartsReachesTheOtherOnceItListensAgain() async throws {
        let server = try PostgreSQLServer()
        try await server.start()
        do {
            let stores = [
                try await PostgreSQLPushStore.open(url: server.url, componentSecret: testComponentSecret),
                try await PostgreSQLPushStore.open(url: server.url, componentSecret: testComponentSecret),
            ]
            let relays = stores.map {
                StoreAnswerRelay(
                    store: $0, appServer: Self.appServer, logger: .disabled, clock: .system, keptFor: .seconds(25),
                    rejected: {})
            }
            let heard = Mutex<[String]>([])
            let watches = [
                try #require(try relays[0].watch { _ in }),
                try #require(try relays[1].watch { answer in heard.withLock { $0.append(answer.stanzaID ?? "") } }),
            ]
            defer { watches.forEach { $0.stop() } }
            func answer(_ id: String) throws -> Element {
                try Element.parse(
                    "<iq xmlns='jabber:component:accept' type='result' id='\(id)' from='push.localhost'/>")
            }
            try await waitUntil("the other instance listens", timeout: .seconds(20)) {
                relays[0].pass(try answer("before"))
                return heard.withLock { $0.contains("before") }
            }

            await server.stop()
            relays[0].pass(try answer("during"))
            try await Task.sleep(for: .milliseconds(200))
            try await server.start()
            try await waitUntil("the answer passed during the restart is heard", timeout: .seconds(30)) {
                heard.withLock { $0.contains("during") }
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
