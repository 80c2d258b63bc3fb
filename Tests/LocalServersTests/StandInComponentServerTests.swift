import Logging
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers

/// The component-server stand-in's hook for load generators.
@Suite(.timeLimit(.minutes(1)))
struct StandInComponentServerTests {
    @Test func aHandlerTakesEveryStanzaInsteadOfTheMailboxes() async throws {
        let server = try StandInComponentServer(componentJID: "push.localhost", secret: "app-secret")
        let app = StandInAppServer(secret: "app-secret", port: Int(server.port))
        app.start()
        try await app.waitUntilConnected()
        try await server.waitForConnection()
        let handled = Mutex<[Element]>([])
        server.handleEveryStanza { stanza in handled.withLock { $0.append(stanza) } }
        let query = Element("query", namespace: Namespace.discoInfo)
        try server.send(
            .iq(
                type: .get, id: "q1", from: try JID("apush.localhost"), to: try JID("push.localhost"),
                payload: query))
        let deadline = ContinuousClock.now + .seconds(30)  // a liveness bound, for a loaded machine
        while handled.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let answer = try #require(handled.withLock { $0.first })
        #expect(answer.stanzaID == "q1" && answer[attribute: "type"] == "error")
        server.handleEveryStanza(nil)
        let again = Element.iq(
            type: .get, id: "q2", from: try JID("apush.localhost"), to: try JID("push.localhost"),
            payload: query)
        #expect(try await server.request(again).stanzaID == "q2", "without a handler answers reach request again")
        await app.stop()
        server.stop()
    }

    /// A request whose connection is replaced before the component answers goes again on the new one.
    @Test func aRequestGoesAgainOnTheConnectionThatReplacedTheOneItWentOn() async throws {
        let server = try StandInComponentServer(componentJID: "apush.localhost", secret: "stand-in-secret")
        var settings = ComponentConnectionSettings(
            componentJID: "apush.localhost", secret: "stand-in-secret",
            host: "127.0.0.1", port: server.port, keepaliveTarget: "localhost")
        settings.backoff = Backoff(initial: .milliseconds(10), maximum: .milliseconds(50))
        let connection = ComponentConnection(settings: settings, logger: .disabled)
        let received = Mutex(0)
        let running = Task {
            await connection.run(onStanza: { stanza in
                // The first copy is never answered: its connection goes before it could be.
                if received.withLock({ count in
                    count += 1
                    return count == 1
                }) {
                    server.dropConnection()
                } else if let reply = stanza.resultReply() {
                    try? connection.send(reply)
                }
            })
        }
        try await server.waitForConnection()
        let request = Element.iq(
            type: .get, id: "r1", from: try JID("localhost"), to: try JID("apush.localhost"),
            payload: Element("ping", namespace: Namespace.ping))
        let answer = try await server.request(request, timeout: .seconds(30))
        #expect(answer.stanzaID == "r1" && answer[attribute: "type"] == "result")
        #expect(received.withLock { $0 } == 2)
        running.cancel()
        _ = await running.result
        server.stop()
    }
}
