import Foundation
import Logging
import Synchronization
import Testing
import XMLStream
import Sockets
import XMPP

@testable import LocalServers

/// The component's link against the stand-in server on loopback.
@Suite(.timeLimit(.minutes(3)))
struct ComponentConnectionTests {
    static let component = try! JID("apush.localhost")
    static let server = try! JID("localhost")

    /// A running link to a stand-in, with what it delivered and reported.
    final class Link: Sendable {
        let server: StandInComponentServer
        let connection: ComponentConnection
        let events = Mailbox<ConnectionEvent>(name: "a connection event")
        let delivered = Mailbox<Element>(name: "a stanza delivered to the component")
        let strays = Mailbox<Element>(name: "an answer to another instance's request")
        /// When each disconnection was reported: a gap between two is measured where it happened, not
        /// where a loaded test got round to looking.
        let disconnectionTimes = Mailbox<ContinuousClock.Instant>(name: "a disconnection's time")
        private let runner = MutexTask()

        init(
            secret: String = "stand-in-secret", relaysStrays: Bool = false,
            configure: (inout ComponentConnectionSettings) -> Void = { _ in }
        ) throws {
            server = try StandInComponentServer(componentJID: "apush.localhost", secret: "stand-in-secret")
            var settings = ComponentConnectionSettings(
                componentJID: "apush.localhost", secret: secret,
                host: "127.0.0.1", port: server.port, keepaliveTarget: "localhost")
            configure(&settings)
            connection = ComponentConnection(settings: settings, logger: .disabled)
            let (connection, events, delivered, strays) = (connection, events, delivered, strays)
            let disconnectionTimes = disconnectionTimes
            let passOn: (@Sendable (Element) -> Void)? = relaysStrays ? { @Sendable in strays.put($0) } : nil
            runner.set(
                Task {
                    await connection.run(
                        onStanza: { delivered.put($0) },
                        onEvent: { event in
                            if case .disconnected = event { disconnectionTimes.put(.now) }
                            events.put(event)
                        }, onStrayAnswer: passOn)
                })
        }

        func connected(timeout: Duration = .seconds(20)) async throws {
            _ = try await events.take(matching: { $0 == .connected }, timeout: timeout)
        }

        func disconnected(timeout: Duration = .seconds(20)) async throws -> ComponentStreamFailure {
            let event = try await events.take(matching: { $0 != .connected }, timeout: timeout)
            guard case .disconnected(let failure) = event else { preconditionFailure("filtered") }
            return failure
        }

        func stop() async {
            await runner.cancelAndWait()
            server.stop()
        }
    }

    private func message(_ text: String) -> Element {
        .message(type: .normal, id: text, from: Self.server, to: Self.component)
    }

    @Test func connectsHandshakesAndReceivesStanzas() async throws {
        let link = try Link()
        try await link.connected()
        #expect(link.server.connectionCount == 1)
        #expect(link.server.isConnected)
        try link.server.send(message("one"))
        try link.server.send(message("two"))
        let first = try await link.delivered.take(timeout: .seconds(20))
        let second = try await link.delivered.take(timeout: .seconds(20))
        #expect(Set([first.stanzaID, second.stanzaID]) == ["one", "two"])
        #expect(first.namespace == Namespace.componentAccept)
        await link.stop()
    }

    /// Stanzas of one ordering key reach their decision in the order they were read, though each
    /// handler takes a different time to come to it; a stanza without a key has no turn.
    @Test func stanzasOfOneKeyDecideInTheOrderTheyWereRead() async throws {
        let server = try StandInComponentServer(componentJID: "apush.localhost", secret: "stand-in-secret")
        defer { server.stop() }
        let settings = ComponentConnectionSettings(
            componentJID: "apush.localhost", secret: "stand-in-secret", host: "127.0.0.1", port: server.port,
            keepaliveTarget: "localhost", orderingKey: { $0[attribute: "type"] == "chat" ? "the key" : nil })
        let connection = ComponentConnection(settings: settings, logger: .disabled)
        let decided = Mailbox<String>(name: "a decision")
        let unordered = Mailbox<Bool>(name: "a stanza without a key")
        let events = Mailbox<ConnectionEvent>(name: "a connection event")
        let runner = Task {
            await connection.run(
                onStanza: { stanza in
                    guard let turn = StanzaTurn.current else {
                        unordered.put(true)
                        return
                    }
                    try? await Task.sleep(for: .milliseconds(Int.random(in: 0...30)))
                    await turn.wait()
                    decided.put(stanza.stanzaID ?? "")
                }, onEvent: { events.put($0) })
        }
        _ = try await events.take(matching: { $0 == .connected }, timeout: .seconds(20))
        try server.send(Element.message(type: .normal, id: "no key", from: Self.server, to: Self.component))
        #expect(try await unordered.take(timeout: .seconds(20)))
        let ids = (0..<20).map { "m\($0)" }
        for id in ids { try server.send(Element.message(type: .chat, id: id, from: Self.server, to: Self.component)) }
        var order: [String] = []
        for _ in ids { order.append(try await decided.take(timeout: .seconds(20))) }
        #expect(order == ids)
        runner.cancel()
        await runner.value
    }

    @Test func sendsStanzasToTheServer() async throws {
        let link = try Link()
        #expect(throws: ComponentLinkError.notConnected) {
            try ComponentConnection(
                settings: ComponentConnectionSettings(
                    componentJID: "x.localhost", secret: "s", host: "127.0.0.1", port: 1, keepaliveTarget: "localhost"),
                logger: .disabled
            ).send(Element("message"))
        }
        try await link.connected()
        try link.connection.send(Element.message(id: "out", from: Self.component, to: Self.server))
        let received = try await link.server.nextStanza()
        #expect(received.name == "message" && received.stanzaID == "out")
        await link.stop()
    }

    @Test func requestsAreMatchedByIDAndNeverReachTheHandler() async throws {
        let link = try Link()
        try await link.connected()
        async let answer = link.connection.request(
            Element.iq(
                type: .get, id: "q1", from: Self.component, to: Self.server,
                payload: Element("query", namespace: Namespace.version)), timeout: .seconds(20))
        let request = try await link.server.nextStanza()
        #expect(request.stanzaID == "q1")
        try link.server.send(.iq(type: .result, id: "other", from: Self.server, to: Self.component))
        try link.server.send(try #require(request.resultReply(payload: Element("query", namespace: Namespace.version))))
        let result = try await answer
        #expect(result.iqType == .result && result.stanzaID == "q1")
        let unrelated = try await link.delivered.take(timeout: .seconds(20))
        #expect(unrelated.stanzaID == "other", "an answer nobody waits for goes to the handler")
        await link.stop()
    }

    /// Two instances share the JID and the server hands each the other's answers: an answer to a
    /// request this one never sent goes to be passed on, and one passed on by the other is taken.
    @Test func answersToAnotherInstancesRequestsArePassedOnAndTakenWhenRelayed() async throws {
        let link = try Link(relaysStrays: true)
        try await link.connected()
        try link.server.send(.iq(type: .result, id: "other-instance-7", from: Self.server, to: Self.component))
        #expect(try await link.strays.take(timeout: .seconds(20)).stanzaID == "other-instance-7")

        var publish = Element.iq(
            type: .set, id: "", from: Self.component, to: try JID("push.localhost"),
            payload: Element("pubsub", namespace: Namespace.pubsub))
        publish[attribute: "id"] = nil
        async let answer = link.connection.request(publish, timeout: .seconds(20))
        let request = try await link.server.nextStanza()
        var relayed = try #require(request.resultReply())
        relayed[attribute: "from"] = "push.localhost"
        link.connection.acceptRelayedAnswer(relayed)
        #expect(try await answer.stanzaID == request.stanzaID)
        // A late answer of its own (the request is done) is not passed on, nor a request.
        try link.server.send(try #require(request.resultReply()))
        try link.server.send(.iq(type: .get, id: "q9", from: Self.server, to: Self.component))
        #expect(try await link.delivered.take(timeout: .seconds(20)).stanzaID == request.stanzaID)
        #expect(try await link.delivered.take(timeout: .seconds(20)).stanzaID == "q9")
        #expect(link.strays.items.isEmpty)
        await link.stop()
    }

    @Test func anAnswerFromAnotherEntityIsNotTakenForTheAnswer() async throws {
        let link = try Link()
        try await link.connected()
        async let answer = link.connection.request(
            Element.iq(
                type: .set, id: "up1", from: Self.component, to: try JID("push.localhost"),
                payload: Element("pubsub", namespace: Namespace.pubsub)), timeout: .seconds(20))
        let request = try await link.server.nextStanza()
        // A user guessing the id answers "cancel" first: it must not count as the App Server's answer.
        var forged = try #require(request.errorReply(StanzaError(.itemNotFound, type: .cancel)))
        forged[attribute: "from"] = "mallory@localhost/x"
        try link.server.send(forged)
        try link.server.send(try #require(request.resultReply()))
        #expect(try await answer.iqType == .result)
        await link.stop()
    }

    @Test func aSecondRequestWithAWaitingIDIsRefused() async throws {
        let link = try Link()
        try await link.connected()
        let iq = Element.iq(
            type: .get, id: "same", from: Self.component, to: Self.server,
            payload: Element("query", namespace: Namespace.version))
        async let first = link.connection.request(iq, timeout: .seconds(20))
        let request = try await link.server.nextStanza()
        await #expect(throws: ComponentLinkError.duplicateID) {
            try await link.connection.request(iq, timeout: .seconds(20))
        }
        try link.server.send(try #require(request.resultReply()))
        #expect(try await first.iqType == .result, "the first waiter still gets its answer")
        await link.stop()
    }

    @Test func aRequestWithoutIDGetsOne() async throws {
        let link = try Link()
        try await link.connected()
        var iq = Element.iq(
            type: .get, id: "", from: Self.component, to: Self.server,
            payload: Element("query", namespace: Namespace.version))
        iq[attribute: "id"] = nil
        async let answer = link.connection.request(iq, timeout: .seconds(20))
        let request = try await link.server.nextStanza()
        #expect(request.stanzaID?.isEmpty == false)
        try link.server.send(try #require(request.resultReply()))
        #expect(try await answer.stanzaID == request.stanzaID)
        await link.stop()
    }

    @Test func aRequestWithoutAnswerTimesOut() async throws {
        let link = try Link()
        try await link.connected()
        let started = ContinuousClock.now
        await #expect(throws: ComponentLinkError.timedOut) {
            try await link.connection.request(
                Element.iq(
                    type: .get, id: "lost", from: Self.component, to: Self.server,
                    payload: Element("query", namespace: Namespace.version)), timeout: .milliseconds(200))
        }
        // Well before the keepalive (20 s) could end the link: a liveness bound, loose for a loaded machine.
        #expect(ContinuousClock.now - started < .seconds(15), "the request's own timeout ended it")
        await link.stop()
    }

    @Test func aRequestInFlightFailsWhenTheConnectionDrops() async throws {
        let link = try Link()
        try await link.connected()
        let connection = link.connection
        let answer = Task {
            try await connection.request(
                Element.iq(
                    type: .get, id: "doomed", from: Self.component, to: Self.server,
                    payload: Element("query", namespace: Namespace.version)), timeout: .seconds(10))
        }
        _ = try await link.server.nextStanza()
        link.server.dropConnection()
        await #expect(throws: ComponentLinkError.disconnected) { try await answer.value }
        await link.stop()
    }

    @Test func reconnectsWithinASecondAfterTheConnectionDrops() async throws {
        let link = try Link()
        try await link.connected()
        try await link.server.waitForConnection()
        link.server.dropConnection()
        let failure = try await link.disconnected()
        #expect(!failure.isRejection)
        // The normal backoff (capped at 1 s, BackoffTests) rather than the rejection one is what keeps
        // the component back within a second; the wait here is only a liveness bound.
        try await link.connected(timeout: .seconds(20))
        #expect(try await link.server.waitForConnection() == 2)
        try link.server.send(message("again"))
        #expect(try await link.delivered.take(timeout: .seconds(20)).stanzaID == "again")
        await link.stop()
    }

    @Test func aWrongSecretBacksOffForLong() async throws {
        let link = try Link(secret: "wrong")
        #expect(try await link.disconnected() == .streamError(StreamError(.notAuthorized)))
        #expect(try await link.disconnected() == .streamError(StreamError(.notAuthorized)))
        // The retry came after the rejection backoff (5 s less its 20 % jitter), not the ordinary one.
        let first = try await link.disconnectionTimes.take(timeout: .seconds(20))
        let second = try await link.disconnectionTimes.take(timeout: .seconds(20))
        #expect(second - first >= .seconds(4))
        await link.stop()
    }

    @Test func aConflictIsRetriedOnTheStandbyScheduleNotTheRejectionBackoff() async throws {
        // A rejection backoff of an hour: only the standby schedule (every second, ReconnectScheduleTests)
        // can bring the retries below, so the bounds here are liveness bounds only.
        let link = try Link { settings in
            settings.rejectionBackoff = Backoff(initial: .seconds(3600), maximum: .seconds(3600), jitter: 0)
        }
        link.server.script(handshake: .conflict)
        #expect(try await link.disconnected() == .streamError(StreamError(.conflict)))
        #expect(try await link.disconnected() == .streamError(StreamError(.conflict)))
        #expect(try await link.disconnected() == .streamError(StreamError(.conflict)))
        link.server.script(handshake: .accept)
        try await link.connected()
        #expect(link.server.connectionCount == 4)
        await link.stop()
    }

    @Test func malformedXMLIsAnsweredWithNotWellFormedAndTheLinkReconnects() async throws {
        let link = try Link()
        try await link.connected()
        try await link.server.waitForConnection()
        try link.server.sendRaw("<message from='localhost' to='apush.localhost'><body>x</message>")
        guard case .protocolViolation(let error) = try await link.disconnected() else {
            Issue.record("expected our own stream error")
            return
        }
        #expect(error.condition == .notWellFormed)
        try await link.connected()
        try await link.server.waitForConnection()
        #expect(link.server.streamErrors.map(\.condition) == [.notWellFormed])
        await link.stop()
    }

    @Test func anOversizedStanzaIsRefusedAndTheSameLinkServesTheNextOne() async throws {
        let link = try Link()
        try await link.connected()
        try await link.server.waitForConnection()
        let sent = Mailbox<Element>(name: "a stanza from the component")
        link.server.handleEveryStanza { sent.put($0) }
        let huge =
            "<iq type='set' id='big' from='localhost' to='apush.localhost'><pubsub xmlns='urn:x'><x>"
            + String(repeating: "&apos;", count: 60_000) + "</x></pubsub></iq>"
        try link.server.sendRaw(huge)
        let refusal = try await sent.take(timeout: .seconds(20))
        #expect(refusal.name == "iq" && refusal.stanzaType == "error" && refusal.stanzaID == "big")
        #expect(refusal.fromString == "apush.localhost" && refusal.toString == "localhost")
        let error = try #require(StanzaError(stanza: refusal))
        #expect(error.condition == .policyViolation && error.type == .modify)
        #expect(error.text == "a stanza exceeds 262144 bytes")
        // An oversized error is not answered (RFC 6120 §8.3.1), and the link reads on.
        try link.server.sendRaw(
            "<message type='error' id='e' from='localhost' to='apush.localhost'><body>"
                + String(repeating: "a", count: 300_000) + "</body></message>")
        try link.server.send(message("after"))
        #expect(try await link.delivered.take(timeout: .seconds(20)).stanzaID == "after")
        #expect(link.server.connectionCount == 1)
        #expect(link.server.streamErrors.isEmpty)
        await link.stop()
    }

    @Test func anAnswerOverTheStanzaLimitFailsItsRequestAtOnce() async throws {
        let link = try Link()
        try await link.connected()
        try await link.server.waitForConnection()
        let server = link.server
        server.answerRequests { request in
            try? server.sendRaw(
                "<iq type='result' id='\(request.stanzaID ?? "")' from='localhost' to='apush.localhost'><q xmlns='urn:x'>"
                    + String(repeating: "a", count: 300_000) + "</q></iq>")
            return nil
        }
        let started = ContinuousClock.now
        await #expect(throws: ComponentLinkError.answerTooLarge) {
            try await link.connection.request(
                .iq(
                    type: .get, id: "big-answer", from: Self.component, to: Self.server,
                    payload: Element("q", namespace: "urn:x")),
                timeout: .seconds(60))
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(link.server.connectionCount == 1)
        await link.stop()
    }

    @Test func keepalivePingsKeepAnAnsweringServer() async throws {
        let link = try Link { settings in
            settings.keepaliveInterval = .milliseconds(100)
            settings.keepaliveTimeout = .milliseconds(300)
        }
        try await link.connected()
        await #expect(throws: TimedOut.self) { _ = try await link.disconnected(timeout: .seconds(1)) }
        #expect(link.server.connectionCount == 1)
        await link.stop()
    }

    @Test func keepaliveDetectsAServerThatStopsAnswering() async throws {
        let link = try Link { settings in
            settings.keepaliveInterval = .milliseconds(100)
            settings.keepaliveTimeout = .milliseconds(300)
        }
        link.server.answerPings(false)
        try await link.connected()
        let ping = try await link.server.nextStanza()
        #expect(ping.child("ping", namespace: Namespace.ping) != nil)
        #expect(ping.toString == "localhost")
        #expect(try await link.disconnected(timeout: .seconds(20)) == .keepaliveTimeout)
        try await link.connected()
        await link.stop()
    }

    @Test func stoppingClosesTheStreamPolitely() async throws {
        let link = try Link()
        try await link.connected()
        try await link.server.waitForConnection()
        await link.stop()
        #expect(link.server.streamErrors.isEmpty)
    }
}

/// The link's runner task, kept so a test can cancel it and wait for `run` to return.
final class MutexTask: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    func set(_ newTask: Task<Void, Never>) { task.withLock { $0 = newTask } }

    func cancelAndWait() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }
}

/// A server that takes the TCP connection and then says nothing.
@Suite(.timeLimit(.minutes(3)))
struct ComponentHandshakeTimeoutTests {
    @Test func aServerThatNeverAnswersTheHeaderIsLeftAfterTheHandshakeTimeout() async throws {
        let accepted = Mutex<[TCPConnection]>([])
        let listener = try TCPListener { connection in accepted.withLock { $0.append(connection) } }
        defer { listener.close() }
        let settings = ComponentConnectionSettings(
            componentJID: "apush.localhost", secret: "s", host: "127.0.0.1", port: listener.port,
            keepaliveTarget: "localhost", handshakeTimeout: .milliseconds(200))
        let connection = ComponentConnection(settings: settings, logger: .disabled)
        let events = Mailbox<ConnectionEvent>(name: "a connection event")
        let runner = Task { await connection.run(onStanza: { _ in }, onEvent: { events.put($0) }) }
        let event = try await events.take(timeout: .seconds(20))
        #expect(event == .disconnected(.handshakeTimeout))
        try await waitForSecondConnection(accepted)
        runner.cancel()
        await runner.value
        accepted.withLock { connections in for connection in connections { connection.close() } }
    }

    private func waitForSecondConnection(_ accepted: borrowing Mutex<[TCPConnection]>) async throws {
        for _ in 0..<50 where accepted.withLock({ $0.count }) < 2 {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(accepted.withLock { $0.count } >= 2, "the component reconnects after giving up")
    }
}

/// Backpressure: a bounded number of stanzas in handling, and answers that still arrive.
extension ComponentConnectionTests {
    /// Handlers that each wait until released, counted.
    final class HeldHandlers: Sendable {
        struct Counts { var running = 0, mostRunning = 0, handled = 0 }
        private struct State {
            var counts = Counts()
            var released = false
            var held: [CheckedContinuation<Void, Never>] = []
        }
        private let state = Mutex(State())

        func handle() async {
            await withCheckedContinuation { continuation in
                let go = state.withLock { state in
                    state.counts.running += 1
                    state.counts.mostRunning = max(state.counts.mostRunning, state.counts.running)
                    if !state.released { state.held.append(continuation) }
                    return state.released
                }
                if go { continuation.resume() }
            }
            state.withLock { state in
                state.counts.running -= 1
                state.counts.handled += 1
            }
        }

        func release() {
            let held = state.withLock { state in
                state.released = true
                defer { state.held = [] }
                return state.held
            }
            for continuation in held { continuation.resume() }
        }

        var counts: Counts { state.withLock { $0.counts } }
    }

    private func backpressureLink(
        _ server: StandInComponentServer, maxStanzasInHandling: Int, maxStanzasWaiting: Int,
        onStanza: @escaping @Sendable (ComponentConnection, Element) async -> Void
    )
        async throws -> (ComponentConnection, MutexTask)
    {
        let settings = ComponentConnectionSettings(
            componentJID: "apush.localhost", secret: "stand-in-secret", host: "127.0.0.1", port: server.port,
            keepaliveTarget: "localhost",
            // A slow run (the thread sanitizer, a loaded machine) must not end the link for a ping these
            // tests leave unanswered or that waits behind the flood: backpressure is what they test.
            keepaliveInterval: .seconds(600), maxStanzasInHandling: maxStanzasInHandling,
            maxStanzasWaiting: maxStanzasWaiting)
        let connection = ComponentConnection(settings: settings, logger: .disabled)
        let events = Mailbox<ConnectionEvent>(name: "a connection event")
        let runner = MutexTask()
        runner.set(
            Task {
                await connection.run(onStanza: { await onStanza(connection, $0) }, onEvent: { events.put($0) })
            })
        _ = try await events.take(matching: { $0 == .connected }, timeout: .seconds(20))
        return (connection, runner)
    }

    @Test func aFloodIsHandledAFewStanzasAtATimeAndReadingResumesAsHandlersFinish() async throws {
        let server = try StandInComponentServer()
        defer { server.stop() }
        let handlers = HeldHandlers()
        let (connection, runner) = try await backpressureLink(server, maxStanzasInHandling: 4, maxStanzasWaiting: 4) {
            _, _ in await handlers.handle()
        }
        let total = 3000
        let sent = Mutex(0)
        Thread {
            for index in 0..<total {
                guard (try? server.sendRaw("<message from='localhost' to='apush.localhost' id='f\(index)'/>")) != nil
                else { return }
                sent.withLock { $0 += 1 }
            }
        }.start()
        // The flood is under way and the handlers are full.
        let deadline = ContinuousClock.now + .seconds(30)
        while handlers.counts.running < 4 || sent.withLock({ $0 }) < 100, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(handlers.counts.mostRunning == 4)
        #expect(handlers.counts.handled == 0)
        #expect(connection.stanzasHeld <= 4 + 4)

        handlers.release()
        while handlers.counts.handled < total, ContinuousClock.now < deadline + .seconds(120) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(handlers.counts.handled == total)
        #expect(handlers.counts.mostRunning == 4)
        #expect(connection.stanzasHeld == 0)
        await runner.cancelAndWait()
    }

    /// Every handler waits for an answer to its own request while new stanzas arrive ahead of the
    /// answers: the link must still read the answers, or nothing would ever finish.
    @Test func answersArriveWhileEveryHandlerWaitsForOneAndNewStanzasWait() async throws {
        let server = try StandInComponentServer()
        defer { server.stop() }
        server.answerPings(false)
        let outcomes = Mailbox<String>(name: "a handler's outcome")
        let (_, runner) = try await backpressureLink(server, maxStanzasInHandling: 2, maxStanzasWaiting: 4) {
            connection, stanza in
            let id = stanza.stanzaID ?? "?"
            guard id.hasPrefix("ask") else { return outcomes.put(id) }
            let ping = Element(
                "iq", namespace: Namespace.componentAccept,
                ["type": "get", "from": "apush.localhost", "to": "localhost"],
                children: [Element("ping", namespace: Namespace.ping)])
            let answered = (try? await connection.request(ping, timeout: .seconds(10))) != nil
            outcomes.put("\(id) \(answered ? "answered" : "not answered")")
        }
        for id in ["ask-1", "ask-2"] { try server.send(message(id)) }
        let pings = [try await server.nextStanza(), try await server.nextStanza()]
        for id in ["new-1", "new-2", "new-3"] { try server.send(message(id)) }
        for ping in pings { try server.send(try #require(ping.resultReply())) }

        var seen: Set<String> = []
        for _ in 0..<5 { seen.insert(try await outcomes.take(timeout: .seconds(20))) }
        #expect(seen == ["ask-1 answered", "ask-2 answered", "new-1", "new-2", "new-3"])
        await runner.cancelAndWait()
    }
}
