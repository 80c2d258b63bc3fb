import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers

/// The App Server stand-in, fed publishes through the component-server stand-in.
@Suite(.timeLimit(.minutes(1)))
struct StandInAppServerTests {
    static let envelope = String(repeating: "QUJD", count: 10)

    private func publish(
        node: String = "TOKEN", fields: [DataForm.Field]? = nil, pushModule: String? = "apushIOS",
        summaryType: DataForm.FormType = .submit
    ) -> Element {
        let summary = DataForm(
            type: summaryType, formType: Namespace.pushSummary,
            fields: fields ?? [.value("apushEncrypted", Self.envelope), .value("apushCollapse", "q83vEjRWeJA")])
        var pubsub = Element(
            "pubsub", namespace: Namespace.pubsub, [:],
            children: [
                Element(
                    "publish", namespace: Namespace.pubsub, ["node": node],
                    children: [
                        Element(
                            "item", namespace: Namespace.pubsub, [:],
                            children: [
                                Element("notification", namespace: Namespace.push, [:], children: [summary.element])
                            ])
                    ])
            ])
        if let pushModule {
            let options = DataForm.submit(formType: Namespace.pubsubPublishOptions, values: ["pushModule": pushModule])
            pubsub.append(Element("publish-options", namespace: Namespace.pubsub, [:], children: [options.element]))
        }
        return .iq(
            type: .set, id: "", from: try! JID("apush.localhost"), to: try! JID("push.localhost"), payload: pubsub)
    }

    private func withAppServer(
        accepting: StandInAppServer.Accepting = .apushOnly,
        _ body: (StandInComponentServer, StandInAppServer) async throws -> Void
    ) async throws {
        let server = try StandInComponentServer(componentJID: "push.localhost", secret: "app-secret")
        let app = StandInAppServer(secret: "app-secret", port: Int(server.port), accepting: accepting)
        app.start()
        try await app.waitUntilConnected()
        try await server.waitForConnection()
        try await body(server, app)
        await app.stop()
        server.stop()
    }

    private func send(_ iq: Element, to server: StandInComponentServer, id: String) async throws -> Element {
        var iq = iq
        iq[attribute: "id"] = id
        return try await server.request(iq)
    }

    @Test func recordsAWellFormedPushAndAcceptsIt() async throws {
        try await withAppServer { server, app in
            let answer = try await send(publish(), to: server, id: "p1")
            #expect(answer.iqType == .result)
            let push = try await app.nextPush()
            #expect(
                push
                    == ReceivedPush(
                        node: "TOKEN", pushModule: "apushIOS", envelope: Self.envelope, kind: nil,
                        collapse: "q83vEjRWeJA", from: "apush.localhost"))
            #expect(app.pushes == [push])
            #expect(app.violations.isEmpty)
        }
    }

    static let stockFields: [DataForm.Field] = [
        .value("message-count", "1"), .value("last-message-sender", "bob@localhost/phone"),
    ]

    @Test func takesAStockPublishAsItCameWhenAskedToAndTellsTheObserver() async throws {
        try await withAppServer(accepting: .apushOrStock) { server, app in
            let observed = Mutex<[ReceivedPush]>([])
            app.observePushes { push in observed.withLock { $0.append(push) } }
            // As mod_cloud_notify sends it: a form of type `form`.
            let stock = publish(fields: Self.stockFields, pushModule: nil, summaryType: .form)
            let answer = try await send(stock, to: server, id: "s1")
            #expect(answer.iqType == .result)
            let expected = ReceivedPush(
                node: "TOKEN", pushModule: "", envelope: "", kind: nil, collapse: nil, from: "apush.localhost",
                stockSummary: ["message-count": "1", "last-message-sender": "bob@localhost/phone"])
            #expect(app.pushes == [expected])
            #expect(observed.withLock { $0 } == [expected])
            #expect(app.violations.isEmpty)
        }
    }

    @Test func stillChecksAnApushPublishWhenItTakesStockOnes() async throws {
        try await withAppServer(accepting: .apushOrStock) { server, app in
            let fields = [DataForm.Field.value("apushEncrypted", "not base64!")]
            let error = try #require(StanzaError(stanza: try await send(publish(fields: fields), to: server, id: "m")))
            #expect(error.condition == .badRequest)
            #expect(app.violations == ["apushEncrypted is not standard base64"])
            let valid = try await send(publish(), to: server, id: "v")
            #expect(valid.iqType == .result)
            #expect(app.pushes.map(\.stockSummary) == [nil])
        }
    }

    @Test func answersEachNodeAsScripted() async throws {
        try await withAppServer { server, app in
            app.script(node: "dead", answer: .cancel)
            app.script(node: "busy", answer: .wait)
            app.script(node: "hung", answer: .silence)
            let dead = try #require(StanzaError(stanza: try await send(publish(node: "dead"), to: server, id: "d")))
            #expect(dead.condition == .itemNotFound && dead.type == .cancel)
            let busy = try #require(StanzaError(stanza: try await send(publish(node: "busy"), to: server, id: "b")))
            #expect(busy.condition == .resourceConstraint && busy.type == .wait)
            var hung = publish(node: "hung")
            hung[attribute: "id"] = "h"
            await #expect(throws: TimedOut.self) { try await server.request(hung, timeout: .milliseconds(300)) }
            #expect(app.pushes.map(\.node) == ["dead", "busy", "hung"])
        }
    }

    @Test(arguments: [
        StanzaError.Condition.itemNotFound, .gone, .forbidden, .notAllowed, .notAuthorized,
        .serviceUnavailable, .internalServerError,
    ])
    func answersAnyErrorTypeAndCondition(condition: StanzaError.Condition) async throws {
        try await withAppServer { server, app in
            app.script(node: "refused", answer: .error(.cancel, condition))
            let answer = try await send(publish(node: "refused"), to: server, id: "e")
            let error = try #require(StanzaError(stanza: answer))
            #expect(error.type == .cancel && error.condition == condition)
            #expect(app.taken.isEmpty)
        }
    }

    @Test func answersAnErrorWithNoConditionAtAll() async throws {
        try await withAppServer { server, app in
            app.script(node: "sloppy", answer: .error(.cancel, nil))
            let answer = try await send(publish(node: "sloppy"), to: server, id: "s")
            let error = try #require(answer.child("error", namespace: Namespace.componentAccept))
            #expect(error[attribute: "type"] == "cancel")
            #expect(error.elements.isEmpty, "no condition element")
        }
    }

    @Test func goesSilentForEveryNodeAndComesBack() async throws {
        try await withAppServer { server, app in
            app.script(node: "dead", answer: .cancel)
            app.scriptEveryNode(answer: .silence)
            var hung = publish(node: "dead")
            hung[attribute: "id"] = "h"
            await #expect(throws: TimedOut.self) { try await server.request(hung, timeout: .milliseconds(300)) }
            app.scriptEveryNode(answer: .result)
            let back = try await send(publish(node: "dead"), to: server, id: "back")
            #expect(back.iqType == .result)
            #expect(app.taken.map(\.node) == ["dead"])
            #expect(app.pushes.count == 2)
        }
    }

    @Test func delaysEachAnswerWhileTakingTheNextPublishes() async throws {
        try await withAppServer { server, app in
            app.delayAnswers(by: .milliseconds(600))
            let started = ContinuousClock.now
            async let first = send(publish(node: "one"), to: server, id: "one")
            async let second = send(publish(node: "two"), to: server, id: "two")
            let answers = try await [first, second]
            let elapsed = ContinuousClock.now - started
            #expect(answers.allSatisfy { $0.iqType == .result })
            #expect(elapsed >= .milliseconds(600), "each answer waits its delay")
            #expect(Set(app.taken.map(\.node)) == ["one", "two"])
        }
    }

    @Test(arguments: [
        ([DataForm.Field.value("apushKind", "voip")], "apushEncrypted is missing"),
        (stockFields, "unexpected summary field message-count"),
        ([.value("apushEncrypted", "not base64!")], "apushEncrypted is not standard base64"),
        (
            [.value("apushEncrypted", String(repeating: "A", count: 3076))],
            "apushEncrypted has 3076 characters, over 3072"
        ),
        (
            [.value("apushEncrypted", envelope), .value("last-message-body", "hi")],
            "unexpected summary field last-message-body"
        ),
        (
            [.value("apushEncrypted", envelope), .value("apushKind", "chat")],
            "apushKind 'chat' is not voip, read or wake"
        ),
        (
            [.value("apushEncrypted", envelope), .value("apushKind", "voip"), .value("apushCollapse", "q83v")],
            "apushCollapse on a voip push (messages only)"
        ),
        (
            [.value("apushEncrypted", envelope), .value("apushCollapse", String(repeating: "A", count: 90))],
            "apushCollapse is not base64url of at most 64 bytes"
        ),
    ])
    func aMalformedPublishIsABadRequest(fields: [DataForm.Field], violation: String) async throws {
        try await withAppServer { server, app in
            let error = try #require(StanzaError(stanza: try await send(publish(fields: fields), to: server, id: "m")))
            #expect(error.condition == .badRequest && error.type == .modify)
            #expect(app.violations == [violation])
            #expect(app.pushes.isEmpty)
        }
    }

    @Test func aPublishWithoutPushModuleIsABadRequest() async throws {
        try await withAppServer { server, app in
            let error = try #require(StanzaError(stanza: try await send(publish(pushModule: nil), to: server, id: "n")))
            #expect(error.condition == .badRequest)
            #expect(app.violations == ["the publish-options have no pushModule"])
        }
    }
}
