import XMLStream
import XMPP

/// What the App Server's answer to one publish means (docs/wire-contract.md, Coalescing, reads, calls, answers). Pure.
enum UpstreamOutcome: Sendable, Equatable {
    /// Taken (or dropped by its rate limit, or not a call on a voip module).
    case accepted
    /// `cancel` with `item-not-found` or `gone`: the token is dead. Remove the registration and tell the server.
    case deadToken
    /// `wait`, a timeout, a lost link, or the App Server refusing us: keep the registration and try again
    /// within bounds.
    case retry(RetryReason)
    /// Any other error (`modify`, `auth`): retrying the same push cannot help; drop it and count it.
    case rejected(reason: String)

    init(answer: Element) {
        guard answer[attribute: "type"] == "error" else {
            self = .accepted
            return
        }
        let error = StanzaError(stanza: answer) ?? StanzaError(.undefinedCondition, type: .cancel)
        switch error.type {
        // The App Server was not reached: ejabberd answers for an unreachable domain (the App Server's
        // component down, say) with cancel/remote-server-not-found. Not the App Server's word on the
        // token: taking it as one would bury every token at once.
        case .cancel where Self.unreachable.contains(error.condition): self = .retry(.unreachable(error.condition))
        case .cancel where Self.dead.contains(error.condition): self = .deadToken
        // Any other cancel (forbidden, not-allowed, a bug of its own, no condition at all) is the App
        // Server refusing us, not a word on the token: a misconfiguration must never wipe registrations.
        case .cancel: self = .retry(.refused(error.condition))
        case .wait: self = .retry(.busy(error.condition))
        default: self = .rejected(reason: "\(error.type.rawValue)/\(error.condition.rawValue)")
        }
    }

    static let unreachable: Set<StanzaError.Condition> = [.remoteServerNotFound, .remoteServerTimeout]
    static let dead: Set<StanzaError.Condition> = [.itemNotFound, .gone]

    init(failure: any Error) {
        switch failure {
        case ComponentLinkError.timedOut: self = .retry(.timeout)
        default: self = .retry(.linkDown)
        }
    }
}

/// Why a push is tried again instead of taken or dropped. Its description is the registration's last
/// error (`wait/timeout`, `cancel/forbidden`…).
enum RetryReason: Sendable, Hashable, CustomStringConvertible {
    /// The App Server said `wait`.
    case busy(StanzaError.Condition)
    /// The App Server's domain was not reached (`cancel`/`remote-server-not-found` from the server).
    case unreachable(StanzaError.Condition)
    /// Any other `cancel`: the App Server refuses us (a sender it does not allow, a bug of its own).
    case refused(StanzaError.Condition)
    /// No answer within the upstream timeout.
    case timeout
    /// The link to the server is down.
    case linkDown
    /// Too many publishes in flight upstream: not sent.
    case inFlightCap

    var description: String {
        switch self {
        case .busy(let condition): "wait/\(condition)"
        case .unreachable(let condition), .refused(let condition): "cancel/\(condition)"
        case .timeout: "wait/timeout"
        case .linkDown: "wait/link-down"
        case .inFlightCap: "wait/in-flight-cap"
        }
    }

    /// The server's publish is answered `wait`: our overload, or the App Server out of reach.
    var serverAnswer: ServerAnswer {
        .wait(self == .inFlightCap ? .resourceConstraint : .remoteServerTimeout)
    }
}
