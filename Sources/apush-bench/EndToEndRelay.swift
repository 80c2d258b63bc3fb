import Logging
import Synchronization
import XMLStream
import XMPP

/// A component that does nothing but pass each stock publish on to the App Server, through the same
/// Prosody: the routing the apush component causes (its upstream publish and the answer cross Prosody
/// again), without the bridge and without any work of its own. Between the direct path and the
/// component's, it tells Prosody's cost of the second hop from the bridge's and the component's.
final class Relay: Sendable {
    let jid: String
    let appServer: String
    private let connection: ComponentConnection
    private let connected = Mutex(false)
    private let runner = Mutex<Task<Void, Never>?>(nil)
    private let forwarded = Atomic<Int>(0)

    init(jid: String, secret: String, port: Int, appServer: String) {
        self.jid = jid
        self.appServer = appServer
        connection = ComponentConnection(
            settings: ComponentConnectionSettings(
                componentJID: jid, secret: secret, host: "127.0.0.1", port: UInt16(port),
                keepaliveTarget: "127.0.0.1"),
            logger: .disabled)
    }

    var isConnected: Bool { connected.withLock { $0 } }

    func start() {
        // The task holds the relay until `stop()` cancels it.
        let task = Task {
            await connection.run(
                onStanza: { stanza in self.relay(stanza) },
                onEvent: { event in self.connected.withLock { $0 = event == .connected } })
        }
        runner.withLock { $0 = task }
    }

    func stop() async {
        let task = runner.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    /// A publish is taken at once and sent on; the App Server's answers end here.
    private func relay(_ stanza: Element) {
        guard stanza.isIQRequest, stanza.iqType == .set else { return }
        if let taken = stanza.resultReply() { try? connection.send(taken) }
        let number = forwarded.add(1, ordering: .relaxed).newValue
        var onward = stanza
        onward[attribute: "from"] = jid
        onward[attribute: "to"] = appServer
        onward[attribute: "id"] = "relay-\(number)"
        try? connection.send(onward)
    }
}
