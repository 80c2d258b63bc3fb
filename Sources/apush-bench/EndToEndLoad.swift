import Foundation
import Synchronization
import XMLStream
import XMPP
import LocalServers

/// How many more messages may be in flight: a sender takes a place, a push gives one back.
final class InFlightGate: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`'s lock.
    private var places: Int

    init(places: Int) {
        self.places = places
    }

    /// Takes a place, waiting up to `timeout` for one; false when none came.
    func take(timeout: TimeInterval) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while places == 0 {
            guard condition.wait(until: deadline) else { return false }
        }
        places -= 1
        return true
    }

    func give() {
        condition.lock()
        places += 1
        condition.signal()
        condition.unlock()
    }
}

/// The k-th message (`ordinal`) from one sender to one account.
struct PairMessage: Hashable, Sendable {
    var account: Int
    var sender: Int
    var ordinal: Int
}

struct SentMessage: Sendable {
    var pair: PairMessage
    var at: ContinuousClock.Instant
}

struct Arrival: Sendable {
    var push: ReceivedPush
    var at: ContinuousClock.Instant
}

/// Every push at the stand-in App Server with the time it arrived, by path (told by its node); each
/// arrival lets the path's senders put one more message in flight.
final class ArrivalRecorder: Sendable {
    private struct State {
        var arrivals: [PushPath: [Arrival]] = [:]
        var gates: [PushPath: InFlightGate] = [:]
    }

    private let state = Mutex(State())

    func arrived(_ push: ReceivedPush) {
        let now = ContinuousClock.now
        guard let path = PushPath.allCases.first(where: { push.node.hasPrefix($0.nodePrefix) }) else { return }
        let gate = state.withLock { state in
            state.arrivals[path, default: []].append(Arrival(push: push, at: now))
            return state.gates[path]
        }
        gate?.give()
    }

    func count(_ path: PushPath) -> Int {
        state.withLock { $0.arrivals[path]?.count ?? 0 }
    }

    /// The arrivals of `path` from the `start`-th on, oldest first.
    func arrivals(_ path: PushPath, from start: Int) -> [Arrival] {
        state.withLock { Array(($0.arrivals[path] ?? []).dropFirst(start)) }
    }

    /// From now on each push of `path` signals `gate`.
    func admit(_ path: PushPath, through gate: InFlightGate) {
        state.withLock { $0.gates[path] = gate }
    }

    func release(_ gate: InFlightGate) {
        state.withLock { state in
            for (path, current) in state.gates where current === gate { state.gates[path] = nil }
        }
    }
}

/// Fires messages from the sender clients, on a thread of its own: each waits for the gate (a push
/// arrived, so one more may be in flight), then goes to the next pair. Sender `sequence % senders`
/// writes to account `(sequence / senders) % accounts`: every client is kept busy, and a pair
/// (so a chat) recurs only every accounts × senders messages.
struct LoadDriver: Sendable {
    struct Outcome: Sendable {
        var path: PushPath
        var sent: [SentMessage] = []
        var sentPerPair: [Int]
        var sequence: Int
        var failure: String?
    }

    let path: PushPath
    let recipients: [JID]
    let senders: [C2SClient]
    let sentPerPair: [Int]
    let sequence: Int

    func run(count: Int, gate: InFlightGate, until end: ContinuousClock.Instant) async -> Outcome {
        await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
            Thread.detachNewThread { done.resume(returning: drive(count: count, gate: gate, until: end)) }
        }
    }

    private func drive(count: Int, gate: InFlightGate, until end: ContinuousClock.Instant) -> Outcome {
        var outcome = Outcome(path: path, sentPerPair: sentPerPair, sequence: sequence)
        let body = Element("body", namespace: Namespace.client, [:], text: "bench")
        while outcome.sent.count < count, ContinuousClock.now < end {
            guard gate.take(timeout: 0.1) else { continue }
            let sender = outcome.sequence % senders.count
            let account = (outcome.sequence / senders.count) % recipients.count
            let index = account * senders.count + sender
            outcome.sentPerPair[index] += 1
            let message = Element.message(
                type: .chat, id: "\(path.accountPrefix)-\(outcome.sequence)", to: recipients[account], children: [body],
                namespace: Namespace.client)
            let at = ContinuousClock.now
            do {
                try senders[sender].send(message)
            } catch {
                outcome.failure = "\(error)"
                return outcome
            }
            outcome.sent.append(
                SentMessage(
                    pair: PairMessage(account: account, sender: sender, ordinal: outcome.sentPerPair[index]), at: at))
            outcome.sequence += 1
        }
        return outcome
    }
}
