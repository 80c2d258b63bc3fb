import Foundation
public import XMLStream

/// Runs XEP-0050 `execute` requests against a set of commands, with multi-stage sessions.
///
/// A session lives in its id (`AdHocSessionID`), not in memory: the id carries the stages' states and
/// the expiry, authenticated with a key every instance of the component shares, so the next stage may
/// land on any instance (ejabberd spreads one component JID's stanzas across its connections) and an
/// abandoned session costs nothing. Each `executing` answer carries a new id; the requester sends the
/// one of the latest answer (a form with fields its stage did not show is refused, so an earlier
/// stage's id cannot take a later stage's form). An id belongs to the full JID that started it and to
/// one command; any other requester, or a stale, tampered or foreign id, gets
/// `bad-request`/`bad-sessionid`. Access is checked again on every stage.
///
/// An id opens again until it expires, even after `complete` or `cancel`: a replay by its own requester
/// re-runs a stage it could reach by starting the command again, so nothing is gained by it.
public final class AdHocSessions: Sendable {
    public let commands: [AdHocCommand]
    private let key: AdHocSessionKey
    private let lifetimeMilliseconds: UInt64
    private let now: @Sendable () -> UInt64

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

        let presented = command[attribute: "sessionid"]
        var session = AdHocSessionID(nonce: .random(in: .min ... .max), expires: 0, states: [[:]])
        if let presented {
            guard
                let opened = AdHocSessionID(
                    opening: presented, key: key, node: node, owner: requester, now: now())
            else { throw Self.badSessionID("unknown or expired session") }
            session = opened
            if let form, action != .prev, action != .cancel {
                let shown = Set(session.fields)
                let foreign = form.fields.compactMap(\.variable).filter {
                    $0 != DataForm.formTypeVariable && !shown.contains($0)
                }
                if let field = foreign.first {
                    throw Self.badSessionID(
                        "\(field): not a field of this session's stage; send the sessionid of the latest answer")
                }
            }
            if action == .cancel {
                return Self.reply(node: node, sessionID: presented, response: AdHocResponse(status: .canceled))
            }
            if action == .prev {
                // The requester sees the form of stage `stage - 1`; going back re-runs the one before it.
                guard session.stage >= 2 else { throw Self.malformedAction }
                session.states.removeLast(2)
            }
        } else {
            guard action == .execute else { throw Self.malformedAction }
        }

        let request = AdHocRequest(
            requester: requester, action: action, form: action == .prev ? nil : form,
            stage: session.stage, state: session.states.last ?? [:])
        let response = try await definition.handler(request)
        guard response.status == .executing else {
            // A finished session needs no id that opens: a fresh one gets a random one.
            let sessionID = presented ?? String(session.nonce, radix: 36)
            return Self.reply(node: node, sessionID: sessionID, response: response)
        }
        session.states.append(response.state)
        session.fields = response.form?.fields.compactMap(\.variable) ?? []
        let (expires, overflow) = now().addingReportingOverflow(lifetimeMilliseconds)
        session.expires = overflow ? .max : expires
        guard let sessionID = session.sealed(key: key, node: node, owner: requester) else {
            throw StanzaError(.resourceConstraint, text: "this command's session does not fit in a session id")
        }
        return Self.reply(node: node, sessionID: sessionID, response: response)
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
