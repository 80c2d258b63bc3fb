import ComponentHost
import Logging
import Store
import Synchronization
import XMLStream
import XMPP

/// Answers passed between the instances that share the store (`PushStore.tellPeers`): an instance
/// that reads the answer to another's request (ejabberd spreads a component JID's stanzas over every
/// connection of it: an App Server's result, a keepalive's pong) passes it on, and the one that asked
/// takes it.
///
/// At most `maximumInFlight` answers are being passed at once, so a flood of stray results (anyone
/// may send the component an IQ result) cannot hold the store's connections: past it they are
/// dropped, as a stray answer was before instances shared a JID.
final class StoreAnswerRelay: AnswerRelay {
    static let maximumInFlight = 64
    /// What every message this relay passes begins with, so other kinds of message can share the channel.
    static let kind = "answer "

    private let store: any PushStore
    private let appServer: JID
    private let logger: Logger
    private let inFlight = Mutex(0)
    private let dropLog = Mutex(LogLimiter(interval: 60_000, capacity: 2))
    private let clock: PushClock
    /// Told of each message that did not verify (dropped by the store).
    private let rejected: @Sendable () -> Void

    init(
        store: any PushStore, appServer: JID, logger: Logger, clock: PushClock,
        rejected: @escaping @Sendable () -> Void
    ) {
        self.store = store
        self.appServer = appServer
        self.logger = logger
        self.clock = clock
        self.rejected = rejected
    }

    /// The module asks only the App Server.
    func asks(_ entity: JID) -> Bool { entity == appServer }

    func pass(_ answer: Element) {
        guard let message = Self.message(for: answer) else {
            dropped("an answer too large to pass on to the other instances")
            return
        }
        let admitted = inFlight.withLock { count in
            guard count < Self.maximumInFlight else { return false }
            count += 1
            return true
        }
        guard admitted else {
            dropped("answers for other instances come faster than they can be passed on")
            return
        }
        Task { [self] in
            do {
                try await store.tellPeers(message)
            } catch {
                logger.debug("could not pass an answer on to the other instances: \(error)")
            }
            inFlight.withLock { $0 -= 1 }
        }
    }

    func watch(_ deliver: @escaping @Sendable (Element) -> Void) throws -> (any RelayWatch)? {
        try store.watchPeers(
            { message in
                guard message.hasPrefix(Self.kind),
                    let answer = try? Element.parse(String(message.dropFirst(Self.kind.count)))
                else { return }
                deliver(answer)
            }, rejected: rejected
        ).map(StoreRelayWatch.init)
    }

    /// The answer as a message: whole if it fits, else the IQ with only its error (what a requester
    /// reads of a failure), else nil.
    static func message(for answer: Element) -> String? {
        let whole = kind + answer.serialized()
        if whole.utf8.count <= peerMessageLimit { return whole }
        var shell = answer
        shell.children = answer.child("error").map { [.element($0)] } ?? []
        let trimmed = kind + shell.serialized()
        return trimmed.utf8.count <= peerMessageLimit ? trimmed : nil
    }

    private func dropped(_ reason: String) {
        if dropLog.withLock({ $0.allows(reason, at: clock.now()) }) {
            logger.warning("\(reason): dropped (logged once a minute)")
        }
    }
}

private struct StoreRelayWatch: RelayWatch {
    let watch: any StoreWatch

    func stop() { watch.stop() }
}
