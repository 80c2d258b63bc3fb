import Synchronization
public import XMLStream
public import XMPP

/// A StanzaSender standing in for the link to the App Server: it records every request and answers
/// each as scripted (by default with a result).
public final class RecordingSender: StanzaSender {
    public enum Answer: Sendable, Equatable {
        case result
        case error(type: String, condition: String)
        /// `<error type='cancel'/>` with no condition in it.
        case errorWithoutCondition
        case timeout
        case disconnected
        /// Answers with a result only when `release()` is called.
        case held
    }

    private struct State {
        var requests: [Element] = []
        var sent: [Element] = []
        var script: [Answer] = []
        var fallback = Answer.result
        var responder: (@Sendable (Element) -> Element?)?
        var waiting: [CheckedContinuation<Void, Never>] = []
        var released = false
    }

    private let state = Mutex(State())

    public init() {}

    /// The next answers, in order; after them, `fallback`.
    public func script(_ answers: Answer...) { state.withLock { $0.script += answers } }
    public func answerAll(_ answer: Answer) { state.withLock { $0.fallback = answer } }

    /// Answers each request `responder` returns an answer for with that answer, before any script.
    public func respond(with responder: @escaping @Sendable (Element) -> Element?) {
        state.withLock { $0.responder = responder }
    }

    public var requests: [Element] { state.withLock { $0.requests } }

    public func send(_ stanza: Element) throws { state.withLock { $0.sent.append(stanza) } }

    public func request(_ iq: Element, timeout: Duration) async throws -> Element {
        let responder = state.withLock { state in
            state.requests.append(iq)
            return state.responder
        }
        if let answer = responder?(iq) { return answer }
        let answer = state.withLock { $0.script.isEmpty ? $0.fallback : $0.script.removeFirst() }
        switch answer {
        case .result:
            return try Element.parse("<iq type='result' from='push.example.org' to='apush.localhost' id='x'/>")
        case .error(let type, let condition):
            return try Element.parse(
                """
                <iq type='error' from='push.example.org' to='apush.localhost' id='x'><error type='\(type)'>\
                <\(condition) xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>
                """)
        case .errorWithoutCondition:
            return try Element.parse(
                """
                <iq type='error' from='push.example.org' to='apush.localhost' id='x'><error type='cancel'/></iq>
                """)
        case .timeout:
            throw ComponentLinkError.timedOut
        case .disconnected:
            throw ComponentLinkError.disconnected
        case .held:
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state in
                    if state.released { return true }
                    state.waiting.append(continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
            return try Element.parse("<iq type='result' from='push.example.org' to='apush.localhost' id='x'/>")
        }
    }

    /// Lets every held request (and any later one) be answered.
    public func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Waits (briefly) until `count` requests have arrived.
    public func waitForRequests(_ count: Int) async throws {
        for _ in 0..<2000 where requests.count < count {
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
