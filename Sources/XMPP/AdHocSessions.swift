import Synchronization
public import XMLStream

/// Runs XEP-0050 `execute` requests against a set of commands, keeping multi-stage sessions.
///
/// A session belongs to the full JID that started it and to one command; any other requester, or a
/// stale id, gets `bad-request`/`bad-sessionid`. Access is checked again on every stage.
///
/// One account (bare JID) holds at most `maximumSessionsPerRequester` open sessions: a new one past
/// that ends its own least recently used, so no one can fill the places everyone shares, nor lock themselves out
/// by abandoning forms.
public final class AdHocSessions: Sendable {
    public let commands: [AdHocCommand]
    private let sessions = Mutex<[String: Session]>([:])
    private let lifetime: Duration
    private let maximumSessions: Int
    private let maximumSessionsPerRequester: Int

    private struct Session {
        var node: String
        var owner: JID
        var stage: Int
        var states: [[String: String]]
        var expires: ContinuousClock.Instant
    }

    public init(
        commands: [AdHocCommand], lifetime: Duration = .seconds(600), maximumSessions: Int = 1000,
        maximumSessionsPerRequester: Int = 10
    ) {
        self.commands = commands
        self.lifetime = lifetime
        self.maximumSessions = maximumSessions
        self.maximumSessionsPerRequester = max(1, maximumSessionsPerRequester)
    }

    /// The commands `requester` may run, for the disco#items list.
    public func available(to requester: JID) -> [AdHocCommand] {
        commands.filter { $0.isAllowed(requester) }
    }

    /// Answers one `<iq type='set'><command/></iq>`: the result payload, or a StanzaError thrown.
    public func execute(_ command: Element, from requester: JID) async throws -> Element {
        guard let node = command[attribute: "node"], let definition = commands.first(where: { $0.node == node }) else {
            throw StanzaError(.itemNotFound, text: "no such command")
        }
        guard definition.isAllowed(requester) else {
            throw StanzaError(.forbidden, text: "you may not run this command")
        }
        let actionName = command[attribute: "action"] ?? AdHocAction.execute.rawValue
        guard let action = AdHocAction(rawValue: actionName) else {
            throw Self.malformedAction
        }
        let form: DataForm?
        if let formElement = command.child("x", namespace: Namespace.dataForms) {
            do {
                form = try DataForm(element: formElement)
            } catch {
                throw StanzaError(.badRequest, text: "the submitted form is malformed: \(error)")
            }
        } else {
            form = nil
        }

        let now = ContinuousClock.now
        var sessionID: String
        var stage = 0
        var states: [[String: String]] = [[:]]
        if let existing = command[attribute: "sessionid"] {
            let session = sessions.withLock { sessions -> Session? in
                Self.removeExpired(from: &sessions, at: now)
                return sessions[existing]
            }
            guard let session, session.owner == requester, session.node == node else {
                throw StanzaError(
                    .badRequest, text: "unknown or expired session",
                    applicationCondition: Element("bad-sessionid", namespace: Namespace.commands))
            }
            sessionID = existing
            stage = session.stage
            states = session.states
            if action == .cancel {
                sessions.withLock { _ = $0.removeValue(forKey: existing) }
                return Self.reply(node: node, sessionID: sessionID, response: AdHocResponse(status: .canceled))
            }
            if action == .prev {
                // The requester sees the form of stage `stage - 1`; going back re-runs the one before it.
                guard stage >= 2 else { throw Self.malformedAction }
                stage -= 2
                states.removeLast(2)
            }
        } else {
            guard action == .execute else { throw Self.malformedAction }
            sessionID = Self.newSessionID()
        }

        let request = AdHocRequest(
            requester: requester, action: action, form: action == .prev ? nil : form,
            stage: stage, state: states.last ?? [:])
        let response = try await definition.handler(request)
        try sessions.withLock { sessions in
            if response.status == .executing {
                // Abandoned sessions must not hold places until someone happens to present an id.
                Self.removeExpired(from: &sessions, at: .now)
                if sessions[sessionID] == nil {
                    removeOldest(of: requester, from: &sessions)
                }
                if sessions[sessionID] == nil && sessions.count >= maximumSessions {
                    throw StanzaError(.resourceConstraint, text: "too many open command sessions")
                }
                sessions[sessionID] = Session(
                    node: node, owner: requester, stage: stage + 1,
                    states: states + [response.state], expires: now + lifetime)
            } else {
                sessions.removeValue(forKey: sessionID)
            }
        }
        return Self.reply(node: node, sessionID: sessionID, response: response)
    }

    /// Makes room for one more session of `requester`'s account by ending its least recently used one, if
    /// it has its share.
    private func removeOldest(of requester: JID, from sessions: inout [String: Session]) {
        let own = sessions.filter { $0.value.owner.bare == requester.bare }
        guard own.count >= maximumSessionsPerRequester,
            let oldest = own.min(by: { $0.value.expires < $1.value.expires })?.key
        else { return }
        sessions.removeValue(forKey: oldest)
    }

    private static func removeExpired(from sessions: inout [String: Session], at now: ContinuousClock.Instant) {
        sessions = sessions.filter { $0.value.expires > now }
    }

    private static let malformedAction = StanzaError(
        .badRequest, text: "that action is not possible here",
        applicationCondition: Element("malformed-action", namespace: Namespace.commands))

    private static func newSessionID() -> String {
        (0..<4).map { _ in String(UInt32.random(in: .min ... .max), radix: 36) }.joined(separator: "-")
    }

    static func reply(node: String, sessionID: String, response: AdHocResponse) -> Element {
        var element = Element(
            "command", namespace: Namespace.commands,
            ["node": node, "sessionid": sessionID, "status": response.status.rawValue])
        if response.status == .executing {
            var actions = Element(
                "actions", namespace: Namespace.commands,
                ["execute": response.actions.first?.rawValue])
            for action in response.actions {
                actions.append(Element(action.rawValue, namespace: Namespace.commands))
            }
            element.append(actions)
        }
        for note in response.notes {
            element.append(
                Element(
                    "note", namespace: Namespace.commands, ["type": note.kind.rawValue],
                    text: note.text))
        }
        if let form = response.form {
            element.append(form.element)
        }
        return element
    }
}
