import Store
import Synchronization

/// The module's clock where several instances share the store: the instance's own clock moved by its
/// offset to the store's (the database's `clock_timestamp()`), so every time they keep in it (a lease,
/// a window's end, a retry's time and deadline, a sighting, a tombstone) is on one clock, whatever each
/// machine's says. On their own clocks, an instance 30 s ahead took pushes still in flight from
/// another (sending them twice), dropped its fresh retries and ended its windows early.
///
/// The offset is measured from one round trip, at start (`ready`) and then on the first reading
/// `remeasureInterval` after the last attempt, without delaying that reading; readings in between take
/// no round trip. A failed measurement keeps the last offset. Where one process alone uses the store
/// (SQLite: no reading), its own clock is the clock.
final class SharedClock: Sendable {
    static let remeasureInterval: Timestamp = 30_000

    /// The offset from the base clock to the shared one. Pure: the caller passes the times.
    struct Offset: Equatable, Sendable {
        /// A round trip longer than this, once an offset is known, is not used: its reading is placed
        /// at the round trip's midpoint, and may be off by up to half of it.
        static let maximumRoundTrip: Timestamp = 1000

        private(set) var milliseconds: Timestamp = 0
        private(set) var isMeasured = false

        /// Takes `reading`, made on the shared clock between `sent` and `received` on the base clock,
        /// as made at their midpoint; false if it was not used (a round trip too long, or negative: the
        /// base clock was set back meanwhile).
        @discardableResult
        mutating func record(sent: Timestamp, reading: Timestamp, received: Timestamp) -> Bool {
            let roundTrip = received - sent
            guard roundTrip >= 0, roundTrip <= Self.maximumRoundTrip || !isMeasured else { return false }
            milliseconds = reading - (sent + roundTrip / 2)
            isMeasured = true
            return true
        }
    }

    private struct State {
        var offset = Offset()
        /// On the base clock; nil until the first measurement ends.
        var lastAttempt: Timestamp?
        /// The first measurement starts with the clock.
        var isMeasuring = true
        /// False once the store says no other process shares it.
        var isShared = true
    }

    private let base: PushClock
    private let reading: @Sendable () async throws -> Timestamp?
    private let state = Mutex(State())
    private let firstMeasurement = Mutex<Task<Void, Never>?>(nil)

    /// `reading` is `PushStore.clockReading`.
    init(base: PushClock, reading: @escaping @Sendable () async throws -> Timestamp?) {
        self.base = base
        self.reading = reading
        firstMeasurement.withLock { $0 = Task { await self.measure() } }
    }

    /// The corrected clock: reads and sleeps on the shared time.
    var clock: PushClock {
        PushClock(
            now: { self.now() },
            sleep: { deadline in try await self.base.sleep(deadline - self.state.withLock { $0.offset.milliseconds }) })
    }

    /// Returns once the first measurement has ended (whether or not it succeeded): what an instance
    /// writes to a shared store before it would be on its own clock.
    func ready() async {
        await firstMeasurement.withLock { $0 }?.value
    }

    private func now() -> Timestamp {
        let at = base.now()
        let (offset, remeasure) = state.withLock { state in
            let remeasure =
                state.isShared && !state.isMeasuring
                && state.lastAttempt.map { at - $0 >= Self.remeasureInterval } == true
            if remeasure { state.isMeasuring = true }
            return (state.offset.milliseconds, remeasure)
        }
        if remeasure { Task { await measure() } }
        return at + offset
    }

    private func measure() async {
        let sent = base.now()
        let result: Result<Timestamp?, any Error>
        do {
            result = .success(try await reading())
        } catch {
            result = .failure(error)
        }
        let received = base.now()
        state.withLock { state in
            state.isMeasuring = false
            state.lastAttempt = received
            switch result {
            case .success(let shared?): state.offset.record(sent: sent, reading: shared, received: received)
            case .success(nil): state.isShared = false
            case .failure: break
            }
        }
    }
}
