import Store
import Synchronization

/// The background loop's own state: the bell that wakes it when stored work appears (a window opened,
/// a retry stored, another instance's due time), when it plans to wake, and its slots for the stored
/// pushes it is sending, at most `capacity` at once.
final class DueWork: Sendable {
    private let clock: PushClock
    private let bell: Doorbell
    /// When the loop sleeping in `sleep(until:)` wakes; nil while it is awake.
    private let plannedWake = Mutex<Timestamp?>(nil)
    private let deliveries = Mutex(0)
    private let slotFreed: Doorbell
    let capacity: Int

    init(clock: PushClock, capacity: Int) {
        self.clock = clock
        self.capacity = capacity
        bell = Doorbell(clock: clock)
        slotFreed = Doorbell(clock: clock)
    }

    /// New work was stored: a sleeping loop wakes, an awake one takes another turn.
    func ring() { bell.ring() }

    /// Sleeps until `wake`, or until rung.
    func sleep(until wake: Timestamp) async {
        plannedWake.withLock { $0 = wake }
        await bell.wait(until: wake)
        plannedWake.withLock { $0 = nil }
    }

    /// When the sleeping loop wakes; nil while it is awake.
    var plannedWakeTime: Timestamp? { plannedWake.withLock { $0 } }

    /// Another instance sharing the store stored work due at `due` (or `Timestamp.min`: anything may be
    /// due): rings the loop if it sleeps until later. While it is awake every announcement rings, as
    /// its turn may have looked at the store before the work was there.
    func cameDue(at due: Timestamp) {
        let rings = plannedWake.withLock { planned in planned.map { due < $0 } ?? true }
        if rings { bell.ring() }
    }

    /// Stored pushes being sent.
    var deliveriesInFlight: Int { deliveries.withLock { $0 } }

    /// Takes every free slot. When none is free (every one waits on the App Server) it waits for one,
    /// at most `slotWaitLimit`, so that the loop's maintenance still runs.
    func takeFreeSlots() async -> Int {
        if deliveriesInFlight >= capacity {
            await slotFreed.wait(until: clock.now() + Self.slotWaitLimit)
        }
        return deliveries.withLock { inUse in
            let free = max(0, capacity - inUse)
            inUse += free
            return free
        }
    }

    /// Gives back slots taken and not used.
    func release(_ slots: Int) { deliveries.withLock { $0 -= slots } }

    /// A stored push's delivery ended: its slot is free.
    func deliveryEnded() {
        deliveries.withLock { $0 -= 1 }
        slotFreed.ring()
    }

    /// How long a turn waits for a slot when every one waits on the App Server.
    static let slotWaitLimit: Timestamp = 1000

    /// When to wake, at `now`, for work due at `due`: at once for a time past, and never later than a
    /// flush interval from now, so a clock set back cannot put the loop to sleep for long.
    static func wakeTime(for due: Timestamp, now: Timestamp) -> Timestamp {
        now + min(max(0, due - now), MaintenanceSchedule.flushInterval)
    }
}
