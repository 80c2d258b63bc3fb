import Store
import Synchronization

/// The store's total of registrations as /health shows it, read at most once per `interval`: a probe
/// that comes sooner is answered from memory, so probes, however many, cost the store at most one
/// query per interval. A failed read is remembered as nil (the store is reported down) like a good one.
final class StoreReading: Sendable {
    private struct Reading {
        var registrations: Int?
        var at: Timestamp
    }

    static let interval: Timestamp = 5_000

    private let last = Mutex<Reading?>(nil)

    /// The last reading while it is younger than `interval`, else a new one from `read`.
    func registrations(at now: Timestamp, read: () async -> Int?) async -> Int? {
        if let reading = last.withLock({ $0 }), now - reading.at < Self.interval, now >= reading.at {
            return reading.registrations
        }
        let registrations = await read()
        last.withLock { $0 = Reading(registrations: registrations, at: now) }
        return registrations
    }
}
