import XMPP

/// The answer the component gives the server's publish (docs/wire-contract.md, Coalescing, reads, calls, answers).
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
