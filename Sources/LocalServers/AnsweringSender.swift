import Synchronization
public import XMLStream
public import XMPP

/// An App Server answering every request at once with a result, and counting them: for measuring
/// only our own cost (the benchmark).
public final class AnsweringSender: StanzaSender {
    private let count = Mutex(0)

    public init() {}

    public func send(_ stanza: Element) throws {}

    public func request(_ iq: Element, timeout: Duration) async throws -> Element {
        count.withLock { $0 += 1 }
        return Element("iq", namespace: Namespace.componentAccept, ["type": "result", "id": iq[attribute: "id"]])
    }

    public var sent: Int { count.withLock { $0 } }
}
