import Foundation
import Synchronization
public import XMLStream

/// Runs XEP-0050 `execute` requests against a set of commands, with multi-stage sessions.
///
/// A session keeps one id from its first answer to its last, as XEP-0050 has it (Gajim refuses a
/// service that changes it). What its stages remember lives in the form, not in memory: each
/// `executing` answer's form carries a hidden field (`stateField`) holding the stages' states and the
/// expiry, authenticated with a key every instance of the component shares and bound to the session
/// id, the command and the requester's full JID (`AdHocSessionState`). A client returns hidden fields
/// with the form it submits, so the next stage may land on any instance (ejabberd spreads one
/// component JID's stanzas across its connections) and an abandoned session costs nothing. A form
/// with fields its stage did not show is refused, so an earlier stage's form cannot take a later
/// stage's fields. A later stage without that field (no form, or one that dropped it), another
/// requester's, or a stale, tampered or foreign one gets `bad-request`/`bad-sessionid`; `cancel`
/// needs none. Access is checked again on every stage.
///
/// A stage's form opens again until it expires, even after `complete` or `cancel`: a replay by its
/// own requester re-runs a stage it could reach by starting the command again, so nothing is gained.
public final class AdHocSessions: Sendable {
    public let commands: [AdHocCommand]
    private let key: AdHocSessionKey
    private let lifetimeMilliseconds: UInt64
    private let now: @Sendable () -> UInt64
    /// Sessions canceled or completed here, whose forms must not open again (XEP-0050 `session-expired`).
    private let ended = EndedSessions(capacity: EndedSessions.defaultCapacity)

    /// `now` is the wall clock in milliseconds since 1970: instances compare expiry times, so their
    /// clocks must agree (to well within `lifetime`).
    public init(
        commands: [AdHocCommand], key: AdHocSessionKey, lifetime: Duration = .seconds(600),
        now: @escaping @Sendable () -> UInt64 = AdHocSessions.wallClockMilliseconds
    ) {
        self.commands = commands
        self.key = key
        // A year at most, so the sum with the time below cannot overflow.
        let (seconds, attoseconds) = lifetime.components
        lifetimeMilliseconds =
            UInt64(clamping: min(seconds, 366 * 86_400)) * 1000 + UInt64(clamping: attoseconds / 1_000_000_000_000_000)
        self.now = now
    }

    @Sendable public static func wallClockMilliseconds() -> UInt64 {
        let milliseconds = Date().timeIntervalSince1970 * 1000
        return milliseconds > 0 && milliseconds < 1e18 ? UInt64(milliseconds) : 0
    }

    /// The commands `requester` may run, for the disco#items list.
    public func available(to requester: JID) -> [AdHocCommand] {
        commands.filter { $0.isAllowed(requester) }
    }

    /// Answers one `<iq type='set'><command/></iq>`: the result payload, or a StanzaError thrown. Every
    /// StanzaError carries the request's `<command/>` (node, sessionid, status) as its payload, so that
    /// the client finds the session it belongs to: `executing` when the session goes on (a refused
    /// value), `canceled` when it does not.
    public func execute(_ command: Element, from requester: JID) async throws -> Element {
        do {
            return try await run(command, from: requester)
        } catch var error as StanzaError {
            if error.payload == nil { error.payload = Self.echo(of: command, status: .canceled) }
            throw error
        }
    }

    private func run(_ command: Element, from requester: JID) async throws -> Element {
        guard let node = command[attribute: "node"], let definition = commands.first(where: { $0.node == node }) else {
            throw StanzaError(.itemNotFound, text: "no such command")
        }
        guard definition.isAllowed(requester) else {
            throw Self.forbidden
        }
        let actionName = command[attribute: "action"] ?? AdHocAction.execute.rawValue
        guard var action = AdHocAction(rawValue: actionName) else {
            throw Self.malformedAction
        }
        let form: DataForm?
        if let formElement = command.child("x", namespace: Namespace.dataForms) {
            do {
                form = try DataForm(element: formElement)
            } catch {
                throw Self.badPayload(StanzaError(.badRequest, text: "the submitted form is malformed: \(error)"))
            }
        } else {
            form = nil
        }

        let presented = command[attribute: "sessionid"]
        let sessionID = presented ?? String(UInt64.random(in: .min ... .max), radix: 36)
        var session = AdHocSessionState(expires: 0, states: [[:]])
        var submitted = form
        if let presented {
            let ending = EndedSessions.Key(sessionID: presented, node: node, owner: requester.description)
            if action == .cancel {
                ended.insert(ending, until: expiry(), now: now())
                return Self.reply(node: node, sessionID: presented, response: AdHocResponse(status: .canceled))
            }
            guard !ended.contains(ending, at: now()) else { throw Self.sessionExpired }
            guard let sealed = form?.value(Self.stateField) else {
                throw Self.badSessionID("send the form of the latest answer, with its \(Self.stateField) field")
            }
            guard
                let opened = AdHocSessionState(
                    opening: sealed, key: key, sessionID: presented, node: node, owner: requester)
            else { throw Self.badSessionID("unknown session") }
            guard opened.expires > now() else { throw Self.sessionExpired }
            session = opened
            submitted?.fields.removeAll { $0.variable == Self.stateField }
            if let submitted, action != .prev {
                let shown = Set(session.fields)
                let foreign = submitted.fields.compactMap(\.variable).filter {
                    $0 != DataForm.formTypeVariable && !shown.contains($0)
                }
                if let field = foreign.first {
                    throw Self.badSessionID(
                        "\(field): not a field of this session's stage; submit the form of the latest answer")
                }
            }
            // `execute` is the stage's default action (XEP-0050 §3.4); any other must be one it offered.
            let offered = session.offeredActions
            if action == .execute { action = offered.first ?? .complete }
            guard offered.contains(action) else { throw Self.badAction }
            if action == .prev {
                // The requester sees the form of stage `stage - 1`; going back re-runs the one before it.
                guard session.stage >= 2 else { throw Self.badAction }
                session.states.removeLast(2)
            }
        } else {
            guard action == .execute else { throw Self.malformedAction }
        }

        let request = AdHocRequest(
            requester: requester, action: action, form: action == .prev ? nil : submitted,
            stage: session.stage, state: session.handlerState)
        var response: AdHocResponse
        do {
            response = try await definition.handler(request)
        } catch var error as StanzaError {
            // A refused value leaves the stage's form open: the client may correct it and submit again.
            if error.condition == .badRequest { error = Self.badPayload(error) }
            error.payload = Self.echo(of: command, status: presented == nil ? .canceled : .executing)
            throw error
        }
        guard response.status == .executing else {
            if let presented {
                ended.insert(
                    EndedSessions.Key(sessionID: presented, node: node, owner: requester.description),
                    until: expiry(), now: now())
            }
            return Self.reply(node: node, sessionID: sessionID, response: response)
        }
        session.append(response.state, offering: response.actions)
        session.fields = response.form?.fields.compactMap(\.variable) ?? []
        session.expires = expiry()
        guard let sealed = session.sealed(key: key, sessionID: sessionID, node: node, owner: requester) else {
            throw StanzaError(.resourceConstraint, text: "this command's session does not fit in its form")
        }
        // A stage that shows no form still sends one, so that the next stage gets the field back.
        var stageForm = response.form ?? DataForm(type: .form)
        stageForm.fields.append(.hidden(Self.stateField, sealed))
        response.form = stageForm
        return Self.reply(node: node, sessionID: sessionID, response: response)
    }

    /// When a stage answered now expires.
    private func expiry() -> UInt64 {
        let (expires, overflow) = now().addingReportingOverflow(lifetimeMilliseconds)
        return overflow ? .max : expires
    }

    /// The request's `<command/>` as an error sends it back: its node and sessionid, with `status`.
    private static func echo(of command: Element, status: AdHocResponse.Status) -> Element {
        Element(
            "command", namespace: Namespace.commands,
            [
                "node": command[attribute: "node"], "sessionid": command[attribute: "sessionid"],
                "status": status.rawValue,
            ])
    }

    /// The hidden field of every `executing` answer's form that carries the session's stages.
    public static let stateField = "apush-session-state"

    /// XEP-0050 §4.6 gives `forbidden` the type `cancel`.
    private static let forbidden = StanzaError(.forbidden, type: .cancel, text: "you may not run this command")

    private static let sessionExpired = StanzaError(
        .notAllowed, text: "this command's session is over (canceled, completed or expired); start it again",
        applicationCondition: Element("session-expired", namespace: Namespace.commands))

    private static let badAction = StanzaError(
        .badRequest, text: "this stage does not offer that action",
        applicationCondition: Element("bad-action", namespace: Namespace.commands))

    /// `error` (a bad value in the submission) with XEP-0050's `bad-payload` unless it names a condition.
    private static func badPayload(_ error: StanzaError) -> StanzaError {
        var error = error
        if error.applicationCondition == nil {
            error.applicationCondition = Element("bad-payload", namespace: Namespace.commands)
        }
        return error
    }

    private static func badSessionID(_ text: String) -> StanzaError {
        StanzaError(
            .badRequest, text: text, applicationCondition: Element("bad-sessionid", namespace: Namespace.commands))
    }

    private static let malformedAction = StanzaError(
        .badRequest, text: "that action is not possible here",
        applicationCondition: Element("malformed-action", namespace: Namespace.commands))

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

/// The sessions that ended (canceled or completed) on this instance, each kept until its last form
/// would have expired anyway, at most `capacity` at once: past that the one expiring first is forgotten,
/// and its forms open again until they expire, as they did before anything was remembered. Another
/// instance does not know of them (ejabberd active/active): there the forms also open until they expire.
final class EndedSessions: Sendable {
    struct Key: Hashable, Sendable {
        var sessionID: String
        var node: String
        var owner: String
    }

    static let defaultCapacity = 10_000
    private let capacity: Int
    private let expiries = Mutex<[Key: UInt64]>([:])

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func insert(_ key: Key, until expires: UInt64, now: UInt64) {
        expiries.withLock { expiries in
            if expiries.count >= capacity, expiries[key] == nil {
                expiries = expiries.filter { $0.value > now }
                if expiries.count >= capacity, let first = expiries.min(by: { $0.value < $1.value }) {
                    expiries[first.key] = nil
                }
            }
            expiries[key] = expires
        }
    }

    func contains(_ key: Key, at now: UInt64) -> Bool {
        expiries.withLock { expiries in
            guard let expires = expiries[key] else { return false }
            guard expires > now else {
                expiries[key] = nil
                return false
            }
            return true
        }
    }
}
