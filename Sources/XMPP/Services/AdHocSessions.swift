import Foundation
import Synchronization
public import XMLStream

/// Runs XEP-0050 `execute` requests against a set of commands, with multi-stage sessions.
///
/// A session keeps one id from its first answer to its last, as XEP-0050 has it (Gajim refuses a
/// service that changes it). What its stages remember lives in the form: each `executing` answer's
/// form carries a hidden field (`stateField`) holding the stages' states and the expiry, authenticated
/// with a key every instance of the component shares and bound to the session id, the command and the
/// requester's full JID (`AdHocSessionState`). A client returns hidden fields with the form it
/// submits, so the next stage may land on any instance (ejabberd spreads one component JID's stanzas
/// across its connections). The instance that answered a stage also remembers its field under the
/// session id (`KnownSessions`), for a client that keeps the session id but sends no form, or one
/// without the field. A form with fields its stage did not show is refused, so an earlier stage's
/// form cannot take a later stage's fields. Another requester's session, a stale, tampered or foreign
/// field, or a stage without the field on an instance that does not know the session gets
/// `bad-request`/`bad-sessionid`; `cancel` needs none. Access is checked again on every stage.
///
/// A canceled or completed session is `session-expired` on the instance that ended it, until its
/// forms would have expired anyway; on another instance its form re-runs its stage for the same
/// requester, which it could as well reach by starting the command again.
public final class AdHocSessions: Sendable {
    public let commands: [AdHocCommand]
    private let key: AdHocSessionKey
    private let lifetimeMilliseconds: UInt64
    private let now: @Sendable () -> UInt64
    /// The latest state of each session answered here, and the sessions canceled or completed here,
    /// whose forms must not open again (XEP-0050 `session-expired`).
    private let known = KnownSessions(capacity: KnownSessions.defaultCapacity)

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
            let presentedSession = KnownSessions.Key(
                sessionID: presented, node: node, owner: requester.description)
            if action == .cancel {
                known.end(presentedSession, until: expiry(), now: now())
                return Self.reply(node: node, sessionID: presented, response: AdHocResponse(status: .canceled))
            }
            let remembered = known.state(of: presentedSession, at: now())
            guard remembered != .ended else { throw Self.sessionExpired }
            // The field the client sent back, else the latest this instance gave (a client that keeps
            // the session id but not the form).
            guard let sealed = form?.value(Self.stateField) ?? remembered?.latestField else {
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
        let thisSession = KnownSessions.Key(sessionID: sessionID, node: node, owner: requester.description)
        guard response.status == .executing else {
            if presented != nil { known.end(thisSession, until: expiry(), now: now()) }
            return Self.reply(node: node, sessionID: sessionID, response: response)
        }
        session.append(response.state, offering: response.actions)
        session.fields = response.form?.fields.compactMap(\.variable) ?? []
        session.expires = expiry()
        guard let sealed = session.sealed(key: key, sessionID: sessionID, node: node, owner: requester) else {
            throw StanzaError(.resourceConstraint, text: "this command's session does not fit in its form")
        }
        known.remember(thisSession, latestField: sealed, until: session.expires, now: now())
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

/// What this instance knows of the sessions it answered: the latest stage's state field of each open
/// one, or that it ended (canceled or completed). Each is kept until its last form would have expired
/// anyway, at most `capacity` at once (a field is at most `AdHocSessionState.maximumLength`
/// characters): past that the one expiring first is forgotten, and that session goes on as it would
/// on another instance, which knows none of them (ejabberd active/active): with the form's own field,
/// which opens until it expires.
final class KnownSessions: Sendable {
    struct Key: Hashable, Sendable {
        var sessionID: String
        var node: String
        var owner: String
    }

    enum State: Equatable, Sendable {
        case open(latestField: String)
        case ended

        var latestField: String? {
            guard case .open(let field) = self else { return nil }
            return field
        }
    }

    /// At most about 8 MiB of fields (2,000 of at most 4 KiB).
    static let defaultCapacity = 2000
    private let capacity: Int
    private let sessions = Mutex<[Key: (state: State, expires: UInt64)]>([:])

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func remember(_ key: Key, latestField: String, until expires: UInt64, now: UInt64) {
        insert(key, .open(latestField: latestField), until: expires, now: now)
    }

    func end(_ key: Key, until expires: UInt64, now: UInt64) {
        insert(key, .ended, until: expires, now: now)
    }

    private func insert(_ key: Key, _ state: State, until expires: UInt64, now: UInt64) {
        sessions.withLock { sessions in
            if sessions.count >= capacity, sessions[key] == nil {
                sessions = sessions.filter { $0.value.expires > now }
                if sessions.count >= capacity, let first = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                    sessions[first.key] = nil
                }
            }
            sessions[key] = (state, expires)
        }
    }

    /// What is known of the session at `now`: nil when nothing is, or no longer.
    func state(of key: Key, at now: UInt64) -> State? {
        sessions.withLock { sessions in
            guard let known = sessions[key] else { return nil }
            guard known.expires > now else {
                sessions[key] = nil
                return nil
            }
            return known.state
        }
    }
}
