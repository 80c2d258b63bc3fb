public import Logging
import Sealing
import Synchronization
import XMLStream
public import XMPP

/// A push the App Server accepted as well-formed (docs/wire-contract.md, Output).
public struct ReceivedPush: Sendable, Equatable {
    /// The device token the push is for.
    public var node: String
    public var pushModule: String
    /// The sealed summary, standard base64.
    public var envelope: String
    /// `voip`, `read` or `wake`; nil for a message.
    public var kind: String?
    /// The collapse tag (base64url), messages only.
    public var collapse: String?
    /// The component that published it.
    public var from: String
    /// A stock XEP-0357 publish's summary fields (e.g. `last-message-sender`), taken only from a stand-in
    /// that accepts them (`.apushOrStock`); nil for an apush push, whose `envelope` holds the summary.
    public var stockSummary: [String: String]?

    public init(
        node: String, pushModule: String, envelope: String, kind: String?, collapse: String?, from: String,
        stockSummary: [String: String]? = nil
    ) {
        self.node = node
        self.pushModule = pushModule
        self.envelope = envelope
        self.kind = kind
        self.collapse = collapse
        self.from = from
        self.stockSummary = stockSummary
    }
}

/// The App Server (apushd) as a second component of a real XMPP server: it takes the apush
/// component's upstream publishes, checks them the way apushd does, records them, and answers each
/// node as scripted. Usable by tests and by the demo alike.
public final class StandInAppServer: Sendable {
    /// How a publish to a node is answered.
    public enum Answer: Sendable, Equatable {
        /// Taken.
        case result
        /// An error of `type`, with `condition` (nil: an `<error/>` with no condition at all, as a
        /// sloppy App Server may send).
        case error(StanzaError.ErrorType, StanzaError.Condition?)
        /// No answer at all, as from an App Server that hangs.
        case silence

        /// The token is dead: `cancel` + `item-not-found`.
        public static let cancel = Answer.error(.cancel, .itemNotFound)
        /// Try later: `wait` + `resource-constraint`.
        public static let wait = Answer.error(.wait, .resourceConstraint)
    }

    /// Which publishes are well-formed.
    public enum Accepting: Sendable {
        /// Only what apushd takes (docs/wire-contract.md, Output).
        case apushOnly
        /// Also a stock XEP-0357 publish, as a server's mod_cloud_notify sends straight to an App Server:
        /// a summary form with no apush field is recorded as it is, without apushd's checks. For the load
        /// benchmark's direct path.
        case apushOrStock
    }

    public let jid: String
    private let accepting: Accepting
    private let connection: ComponentConnection
    private let state = Mutex(State())
    private let received = Mailbox<ReceivedPush>(name: "a push at the App Server")
    private let events = Mailbox<ConnectionEvent>(name: "the App Server's link to connect")

    private struct State {
        var answers: [String: Answer] = [:]
        var defaultAnswer = Answer.result
        var delay = Duration.zero
        var pushes: [ReceivedPush] = []
        var requestIDs: [String] = []
        var taken: [ReceivedPush] = []
        var violations: [String] = []
        var observer: (@Sendable (ReceivedPush) -> Void)?
        var runner: Task<Void, Never>?
    }

    /// `host:port` is the server's component port, where `jid` is configured with `secret`.
    public init(
        jid: String = "push.localhost", secret: String, host: String = "127.0.0.1", port: Int,
        accepting: Accepting = .apushOnly, logger: Logger = .disabled
    ) {
        self.jid = jid
        self.accepting = accepting
        connection = ComponentConnection(
            settings: ComponentConnectionSettings(
                componentJID: jid, secret: secret, host: host, port: UInt16(port),
                keepaliveTarget: host),
            logger: logger)
    }

    /// Connects (and keeps reconnecting) in the background until `stop()`.
    public func start() {
        let runner = Task { [connection, events] in
            await connection.run(
                onStanza: { [weak self] stanza in
                    guard let self, let (reply, delay) = self.handle(stanza) else { return }
                    guard delay > .zero else {
                        try? connection.send(reply)
                        return
                    }
                    // Each answer waits on its own, as a slow App Server still takes publishes in parallel.
                    Task {
                        try? await Task.sleep(for: delay)
                        try? connection.send(reply)
                    }
                },
                onEvent: { event in
                    events.put(event)
                })
        }
        state.withLock { $0.runner = runner }
    }

    /// Waits until the link is up (the next `connected` event not yet waited for).
    public func waitUntilConnected(timeout: Duration = .seconds(30)) async throws {
        _ = try await events.take(matching: { $0 == .connected }, timeout: timeout)
    }

    /// Closes the link politely and waits until it is closed.
    public func stop() async {
        let runner = state.withLock { state in
            defer { state.runner = nil }
            return state.runner
        }
        runner?.cancel()
        await runner?.value
    }

    /// Answers every later publish to `node` with `answer` (the answer for every node unless scripted).
    public func script(node: String, answer: Answer) {
        state.withLock { $0.answers[node] = answer }
    }

    /// Answers every later publish, to any node, with `answer`; forgets the scripts of single nodes.
    /// `.silence` and then `.result` again is an App Server that hangs for a while and comes back.
    public func scriptEveryNode(answer: Answer) {
        state.withLock { state in
            state.answers.removeAll()
            state.defaultAnswer = answer
        }
    }

    /// Every later answer is sent `delay` after its publish arrived (`.zero`: at once), as from an App
    /// Server under load. Publishes are still taken while earlier ones wait.
    public func delayAnswers(by delay: Duration) {
        state.withLock { $0.delay = delay }
    }

    /// Calls `observer` with each later well-formed push as it arrives, before it is answered (e.g. to
    /// time it); one observer at a time.
    public func observePushes(_ observer: @escaping @Sendable (ReceivedPush) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Every well-formed push so far, whatever it was answered, oldest first.
    public var pushes: [ReceivedPush] { state.withLock { $0.pushes } }

    /// The ids of the publishes in `pushes`, in the same order: what an answer to each must carry.
    public var requestIDs: [String] { state.withLock { $0.requestIDs } }

    /// The pushes answered `result`, in the order of their answers: what reached the device.
    public var taken: [ReceivedPush] { state.withLock { $0.taken } }

    /// What was wrong with each malformed publish, oldest first (each was answered `bad-request`).
    public var violations: [String] { state.withLock { $0.violations } }

    /// The next well-formed push not yet taken.
    public func nextPush(timeout: Duration = .seconds(10)) async throws -> ReceivedPush {
        try await received.take(timeout: timeout)
    }

    /// The reply to one stanza from the server, if any, and how long to wait before sending it.
    func handle(_ stanza: Element) -> (Element, Duration)? {
        guard stanza.isIQRequest else { return nil }
        guard stanza.iqType == .set, stanza.check("{\(Namespace.pubsub)}pubsub/publish") else {
            return stanza.errorReply(StanzaError(.serviceUnavailable)).map { ($0, .zero) }
        }
        let push: ReceivedPush
        switch Self.validate(stanza, accepting: accepting) {
        case .success(let valid):
            push = valid
        case .failure(let violation):
            state.withLock { $0.violations.append(violation.reason) }
            return stanza.errorReply(StanzaError(.badRequest, text: violation.reason)).map { ($0, .zero) }
        }
        let (answer, delay, observer) = state.withLock { state in
            state.pushes.append(push)
            state.requestIDs.append(stanza[attribute: "id"] ?? "")
            let answer = state.answers[push.node] ?? state.defaultAnswer
            // Recorded as taken when the answer is decided: a delayed result is the App Server's word
            // even if the component gave up waiting for it (the at-least-once case).
            if answer == .result { state.taken.append(push) }
            return (answer, state.delay, state.observer)
        }
        observer?(push)
        received.put(push)
        switch answer {
        case .result: return stanza.resultReply().map { ($0, delay) }
        case .error(let type, let condition?):
            return stanza.errorReply(StanzaError(condition, type: type)).map { ($0, delay) }
        case .error(let type, nil): return Self.errorWithoutCondition(stanza, type: type).map { ($0, delay) }
        case .silence: return nil
        }
    }

    /// An error reply whose `<error/>` carries no condition element.
    static func errorWithoutCondition(_ stanza: Element, type: StanzaError.ErrorType) -> Element? {
        guard var reply = stanza.errorReply(StanzaError(.undefinedCondition, type: type)) else { return nil }
        reply.children = reply.children.map { node in
            guard case .element(var error) = node, error.name == "error" else { return node }
            error.children = []
            return .element(error)
        }
        return reply
    }

    struct Violation: Error {
        let reason: String
    }

    static let apushFields: Set<String> = ["apushEncrypted", "apushKind", "apushCollapse"]
    static let summaryFields = apushFields.union([DataForm.formTypeVariable])
    static let kinds: Set<String> = ["voip", "read", "wake"]

    /// apushd's rules (docs/wire-contract.md, Output): exactly the summary fields, a bounded base64 envelope, a short
    /// base64url collapse tag on messages only, and a pushModule in the publish-options. `.apushOrStock` also
    /// takes a summary with no apush field as a stock publish, unchecked.
    static func validate(_ iq: Element, accepting: Accepting = .apushOnly) -> Result<ReceivedPush, Violation> {
        let pubsub = "{\(Namespace.pubsub)}pubsub"
        guard let node = iq.findString("\(pubsub)/publish@node"), !node.isEmpty else {
            return .failure(Violation(reason: "the publish has no node"))
        }
        let notification = "\(pubsub)/publish/item/{\(Namespace.push)}notification"
        // mod_cloud_notify sends its summary as a form of type `form`, apush as `submit`.
        let anyType = iq.findElements(#"\#(notification)/\{\#(Namespace.pushSummary)}\"#)
        if accepting == .apushOrStock, anyType.count == 1, let summary = try? DataForm(element: anyType[0]),
            !summary.fields.contains(where: { apushFields.contains($0.variable ?? "") })
        {
            return .success(stockPush(iq, node: node, summary: summary))
        }
        let forms = iq.findElements(#"\#(notification)/\{\#(Namespace.pushSummary)}submit\"#)
        guard forms.count == 1, let summary = try? DataForm(element: forms[0]) else {
            return .failure(Violation(reason: "the notification needs exactly one submitted summary form"))
        }
        let variables = summary.fields.compactMap(\.variable)
        if let unknown = variables.first(where: { !summaryFields.contains($0) }) {
            return .failure(Violation(reason: "unexpected summary field \(unknown)"))
        }
        guard Set(variables).count == variables.count else {
            return .failure(Violation(reason: "a summary field appears twice"))
        }
        guard let envelope = summary.value("apushEncrypted"), !envelope.isEmpty else {
            return .failure(Violation(reason: "apushEncrypted is missing"))
        }
        guard envelope.count <= 3072 else {
            return .failure(Violation(reason: "apushEncrypted has \(envelope.count) characters, over 3072"))
        }
        guard Base64.decode(envelope) != nil else {
            return .failure(Violation(reason: "apushEncrypted is not standard base64"))
        }
        let kind = summary.value("apushKind")
        if let kind, !kinds.contains(kind) {
            return .failure(Violation(reason: "apushKind '\(kind)' is not voip, read or wake"))
        }
        let collapse = summary.value("apushCollapse")
        if let collapse {
            guard kind == nil else {
                return .failure(Violation(reason: "apushCollapse on a \(kind ?? "") push (messages only)"))
            }
            guard let tag = Base64.decodeURL(collapse), !tag.isEmpty, tag.count <= 64 else {
                return .failure(Violation(reason: "apushCollapse is not base64url of at most 64 bytes"))
            }
        }
        let pushModule = Self.pushModule(of: iq)
        guard let pushModule, !pushModule.isEmpty else {
            return .failure(Violation(reason: "the publish-options have no pushModule"))
        }
        return .success(
            ReceivedPush(
                node: node, pushModule: pushModule, envelope: envelope, kind: kind,
                collapse: collapse, from: iq.fromString ?? ""))
    }

    /// A stock XEP-0357 publish as it came: its summary's fields, and the pushModule if the client gave one.
    static func stockPush(_ iq: Element, node: String, summary: DataForm) -> ReceivedPush {
        var fields: [String: String] = [:]
        for field in summary.fields {
            if let variable = field.variable, variable != DataForm.formTypeVariable {
                fields[variable] = summary.value(variable) ?? ""
            }
        }
        return ReceivedPush(
            node: node, pushModule: Self.pushModule(of: iq) ?? "", envelope: "", kind: nil, collapse: nil,
            from: iq.fromString ?? "", stockSummary: fields)
    }

    static func pushModule(of iq: Element) -> String? {
        iq.findString(
            #"{\#(Namespace.pubsub)}pubsub/publish-options/\{\#(Namespace.pubsubPublishOptions)}submit@pushModule\"#)
    }
}
