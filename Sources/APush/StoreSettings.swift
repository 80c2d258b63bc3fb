public import ComponentHost
import Store

/// Where the module's store is (`store`: an SQLite file, or a PostgreSQL URL) and when an SQLite
/// store's commit reaches the disk (`storeSynchronous`): top-level keys of the configuration that are
/// the push module's, not the host's.
public struct StoreSettings: Sendable, Equatable {
    /// Whether a commit waits for the disk (`full`: it survives a power loss) or only checkpoints do
    /// (`normal`: a commit survives the process being killed, not the host losing power).
    public enum Synchronous: String, Sendable, Equatable, CaseIterable {
        case full
        case normal
    }

    public static let defaultLocation = "/var/lib/apush-component/apush.sqlite"
    static let keys = ["store", "storeSynchronous"]
    static let environment = [
        EnvironmentOverride("STORE", key: "store"), EnvironmentOverride("STORE_SYNCHRONOUS", key: "storeSynchronous"),
    ]

    public var location: String
    public var synchronous: Synchronous

    public init(location: String = defaultLocation, synchronous: Synchronous = .full) {
        self.location = location
        self.synchronous = synchronous
    }

    /// Reads both keys; `storeSynchronous` is an SQLite setting, refused beside a PostgreSQL store.
    public init(from configuration: Configuration) throws(ConfigurationError) {
        self.init(location: try configuration.moduleString("store") ?? Self.defaultLocation)
        if let name = try configuration.moduleString("storeSynchronous") {
            guard let synchronous = Synchronous(rawValue: name) else {
                let names = Synchronous.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError(key: "storeSynchronous", reason: "'\(name)' is not one of \(names)")
            }
            self.synchronous = synchronous
        }
        if synchronous != .full, PushStoreSetting.isPostgreSQL(location) {
            throw ConfigurationError(
                key: "storeSynchronous", reason: "applies to an SQLite store only (PostgreSQL has synchronous_commit)")
        }
    }
}
