/// When a commit on a WAL file waits for the disk (SQLite's `PRAGMA synchronous`).
///
/// `full` syncs the log at every commit: what was committed survives a power loss or a host crash.
/// `normal` syncs it only at checkpoints: what was committed survives the process being killed, but a
/// power loss may take back the commits since the last checkpoint (the file stays consistent).
public enum Synchronous: String, Sendable, CaseIterable {
    case full
    case normal

    var pragma: String {
        switch self {
        case .full: "PRAGMA synchronous = FULL"
        case .normal: "PRAGMA synchronous = NORMAL"
        }
    }
}
