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
///
/// An answer passed while the asker did not listen (the store restarted: both the passing and the
/// listening go through it) would be lost, and the asker would send its push again once its request
/// timed out. So each instance tells the others when it listens again (`listeningAgain`), and each
/// then passes again the answers it passed lately (`RecentAnswers`); an asker takes the one it still
/// waits for and ignores the others.
final class StoreAnswerRelay: AnswerRelay {
    static let maximumInFlight = 64
    /// Answers kept to pass again: a PostgreSQL restart's worth at a busy server's rate.
    static let recentCapacity = 256
    /// What every message this relay passes begins with, so other kinds of message can share the channel.
    static let kind = "answer "
    /// What an instance tells the others once it listens again.
    static let listeningAgain = "listening"

    private let store: any PushStore
    private let appServer: JID
    private let logger: Logger
    private let inFlight = Mutex(0)
    private let dropLog = Mutex(LogLimiter(interval: 60_000, capacity: 2))
    private let clock: PushClock
    /// Told of each message that did not verify (dropped by the store).
    private let rejected: @Sendable () -> Void
    private let recent: Mutex<RecentAnswers>

    /// `keptFor`: how long an asker waits for an answer (the upstream timeout).
    init(
        store: any PushStore, appServer: JID, logger: Logger, clock: PushClock, keptFor: Duration,
        rejected: @escaping @Sendable () -> Void
    ) {
        self.store = store
        self.appServer = appServer
        self.logger = logger
        self.clock = clock
        self.rejected = rejected
        recent = Mutex(RecentAnswers(capacity: Self.recentCapacity, keptFor: keptFor))
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
        recent.withLock { $0.keep(message, at: .now) }
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
            { [self] message in
                if message == Self.listeningAgain { return passAgain() }
                guard message.hasPrefix(Self.kind),
                    let answer = try? Element.parse(String(message.dropFirst(Self.kind.count)))
                else { return }
                deliver(answer)
            },
            listening: { [self] in Task { await sayListening() } },
            rejected: rejected
        ).map(StoreRelayWatch.init)
    }

    /// Tells every instance, this one too, that this one listens again; while the store still fails
    /// (its connections come back one by one), again every quarter second, as long as an answer
    /// passed before could still be waited for.
    private func sayListening() async {
        let until = ContinuousClock.now + recent.withLock(\.keptFor)
        while true {
            do {
                return try await store.tellPeers(Self.listeningAgain)
            } catch {
                guard ContinuousClock.now < until else {
                    return logger.debug("could not tell the other instances that this one listens again: \(error)")
                }
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// An instance listens again: the answers this one passed lately go again, one after the other.
    private func passAgain() {
        let messages = recent.withLock { $0.current(at: .now) }
        guard !messages.isEmpty else { return }
        Task { [self] in
            for message in messages {
                do {
                    try await store.tellPeers(message)
                } catch {
                    return logger.debug("could not pass answers again to the other instances: \(error)")
                }
            }
        }
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
