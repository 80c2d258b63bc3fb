public import XMLStream
import XMPP

/// What the App Server's answer to one publish means (PROTOCOL.md §3.1). Pure.
enum UpstreamOutcome: Sendable, Equatable {
    /// Taken (or dropped by its rate limit, or not a call on a voip module).
    case accepted
    /// `cancel`: the token is dead. Remove the registration and tell the server.
    case deadToken
    /// `wait`, a timeout or a lost link: keep the registration and try again within bounds.
    case retry(reason: String)
    /// Any other error (`modify`, `auth`): retrying the same push cannot help; drop it and count it.
    case rejected(reason: String)

    init(answer: Element) {
        guard answer[attribute: "type"] == "error" else {
            self = .accepted
            return
        }
        let error = StanzaError(stanza: answer) ?? StanzaError(.undefinedCondition, type: .cancel)
        let reason = "\(error.type.rawValue)/\(error.condition.rawValue)"
        switch error.type {
        // The App Server was not reached: ejabberd answers for an unreachable domain (the App Server's
        // component down, say) with cancel/remote-server-not-found. Not the App Server's word on the
        // token: taking it as one would bury every token at once.
        case .cancel where Self.unreachable.contains(error.condition): self = .retry(reason: reason)
        case .cancel: self = .deadToken
        case .wait: self = .retry(reason: reason)
        default: self = .rejected(reason: reason)
        }
    }

    static let unreachable: Set<StanzaError.Condition> = [.remoteServerNotFound, .remoteServerTimeout]

    init(failure: any Error) {
        switch failure {
        case ComponentLinkError.timedOut: self = .retry(reason: "wait/timeout")
        default: self = .retry(reason: "wait/link-down")
        }
    }
}

/// The answer the component gives the server's publish (PROTOCOL.md §3.1).
enum ServerAnswer: Sendable, Equatable {
    /// Accepted: pushed, held, or dropped by policy or a rate limit.
    case accepted
    /// The token is dead upstream, or the node is unknown: the server should drop its registration.
    case gone
    /// Try later: overload, the App Server unreachable, too many publishes in flight.
    case wait(StanzaError.Condition)

    /// The error to answer with; nil for a result.
    var error: StanzaError? {
        switch self {
        case .accepted: nil
        case .gone: StanzaError(.itemNotFound, type: .cancel)
        case .wait(let condition): StanzaError(condition, type: .wait)
        }
    }
}
