import Foundation
import PostgreSQL
import SQLCore
import Synchronization

/// Samples what the database's busy sessions are doing while a row runs (`pg_stat_activity` every
/// 5 ms on a session of its own): on the server's CPU, waiting on a lock or the log's flush, or idle
/// inside a transaction while the client works or the network carries the next statement. Printed as
/// how many sessions were in each state on average, the busiest first: what limits the rate.
final class WaitSampler: Sendable {
    private let tally = Mutex<(samples: Int, states: [String: Int])>((0, [:]))
    private let stopped = Atomic(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts sampling the sessions of `url`'s database on a thread of its own (none if it cannot
    /// connect).
    init(url: String) {
        Thread.detachNewThread { [self] in
            defer { finished.signal() }
            guard let connection = try? Connection(url) else { return }
            while !stopped.load(ordering: .relaxed) {
                guard let rows = try? connection.query(Self.busySessions) else { return }
                let states = rows.compactMap { $0[0].stringValue }
                tally.withLock { tally in
                    tally.samples += 1
                    for state in states { tally.states[state, default: 0] += 1 }
                }
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
    }

    /// Stops sampling; returns the states with the average number of sessions in each, busiest first.
    func stop() -> [(state: String, sessions: Double)] {
        stopped.store(true, ordering: .relaxed)
        finished.wait()
        let (samples, states) = tally.withLock { $0 }
        return states.map { ($0.key, Double($0.value) / Double(max(1, samples))) }.sorted { $0.sessions > $1.sessions }
    }

    /// The other client sessions of the database that are not idle, each as its state and what it
    /// waits for.
    private static let busySessions = """
        SELECT CASE
            WHEN state = 'active' AND wait_event IS NULL THEN 'running on the server''s CPU'
            WHEN state = 'active' THEN 'waiting: ' || wait_event_type || '/' || wait_event
            ELSE state || ' (the client''s turn)' END AS state
        FROM pg_stat_activity
        WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
            AND state <> 'idle'
        """
}
