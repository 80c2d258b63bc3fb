import CSQLite
import Dispatch
import Synchronization

/// Copies a database file's write-ahead log back into the file on a thread of its own, so that no
/// commit waits for a checkpoint's fsyncs. SQLite's automatic checkpoint runs them in the committing
/// thread once the log passes a thousand pages: on the push path that was a few milliseconds every
/// few dozen publishes, and most of the difference between a file and memory.
///
/// A commit hook (`sqlite3_wal_hook`, which replaces the automatic checkpoint) asks for a checkpoint
/// once the log passes `threshold` pages; this runs a PASSIVE one on a connection of its own, which
/// neither blocks the writer nor waits for it. A log is written from its start again only once a
/// checkpoint has copied all of it, which a passive one running beside a busy writer rarely does; so
/// the next pass is asked for only once the log has grown by another `threshold` pages (a pass per
/// commit would copy the same few hot pages and sync the file each time: with a pass asked for at
/// every commit past the threshold, a publish cost an fdatasync), and when the log passes `limit`
/// pages the committing connection checkpoints inline (RESTART), so the log stays bounded. The writer
/// pays for that one pass in `limit / threshold`.
final class WALCheckpointer: Sendable {
    enum Action: Equatable {
        case none
        case schedule
        case checkpointInline
    }

    let path: String
    let threshold: Int
    let limit: Int
    private let queue = DispatchQueue(label: "apush.sqlite.checkpoint", qos: .utility)
    private let state = Mutex(State())
    /// Opened on first use and touched only on `queue`.
    private nonisolated(unsafe) var connection: Database?

    private struct State {
        var scheduled = false
        /// The log's size when the last pass was asked for: the next waits until it grows by `threshold`.
        var scheduledAt = 0
        var completed = 0
    }

    init(path: String, threshold: Int) {
        self.path = path
        self.threshold = max(1, threshold)
        self.limit = max(1, threshold) * 8
    }

    /// What a commit that left `pages` in the log calls for, the last pass having been asked for at
    /// `scheduledAt` pages (a log smaller than that was written from its start again). Pure, so the
    /// bound is tested without a disk.
    static func action(pages: Int, threshold: Int, limit: Int, scheduled: Bool, scheduledAt: Int) -> Action {
        if pages >= limit { return .checkpointInline }
        let grown = pages < scheduledAt ? pages : pages - scheduledAt
        if grown >= threshold, !scheduled { return .schedule }
        return .none
    }

    /// Called by the commit hook, on the committing thread, with the log's size after the commit.
    func committed(pages: Int) -> Action {
        let action = state.withLock { state in
            // A log smaller than at the last ask was written from its start again: count from there.
            if pages < state.scheduledAt { state.scheduledAt = 0 }
            let action = Self.action(
                pages: pages, threshold: threshold, limit: limit, scheduled: state.scheduled,
                scheduledAt: state.scheduledAt)
            switch action {
            case .schedule: (state.scheduled, state.scheduledAt) = (true, pages)
            // RESTART writes the log from its start again.
            case .checkpointInline: state.scheduledAt = 0
            case .none: break
            }
            return action
        }
        switch action {
        case .schedule: queue.async { self.checkpoint() }
        // A pass in progress holds the checkpoint lock, which the inline one would find busy.
        case .checkpointInline: queue.sync {}
        case .none: break
        }
        return action
    }

    /// Checkpoints completed in the background, for tests.
    var completed: Int { state.withLock { $0.completed } }

    /// Returns once a scheduled checkpoint is done: for tests.
    func settle() { queue.sync {} }

    private func checkpoint() {
        defer { state.withLock { $0.scheduled = false } }
        do {
            if connection == nil { connection = try Database(checkpointerOf: path) }
            // PASSIVE copies what no reader still needs and returns SQLITE_BUSY only if it could not
            // start; either way the next threshold asks again.
            guard let connection, connection.checkpointPassively() else { return }
            state.withLock { $0.completed += 1 }
        } catch {
            // The store's own connection meets the same fault and reports it; the log stays bounded
            // by the inline checkpoint at `limit`.
            connection = nil
        }
    }
}
