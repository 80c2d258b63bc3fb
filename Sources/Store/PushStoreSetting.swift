import Foundation
public import SQLite

/// The `store` setting (or `APUSH_STORE`): a `postgresql://` (or `postgres://`) URL names a
/// PostgreSQL database, anything else an SQLite file.
public enum PushStoreSetting {
    /// Opens the store the setting names (an SQLite file's commits waiting for the disk as
    /// `synchronous` says). One that cannot be reached or opened for now is returned all the same, with
    /// why (`unavailableAtStart`): it is tried again on use. The instances sharing a PostgreSQL store
    /// authenticate what they tell each other with a key derived from `componentSecret`.
    public static func open(
        _ setting: String, limits: StoreLimits, componentSecret: String, synchronous: Synchronous = .full
    ) async throws(UnusableStoreError) -> (store: any PushStore, unavailableAtStart: StoreUnavailableError?) {
        if isPostgreSQL(setting) {
            let store = try await PostgreSQLPushStore.open(
                url: setting, componentSecret: componentSecret, limits: limits)
            return (store, store.unavailableAtStart)
        }
        let store = try SQLitePushStore(.file(path: setting), limits: limits, synchronous: synchronous)
        return (store, store.unavailableAtStart)
    }

    /// Whether the setting names a PostgreSQL database rather than an SQLite file.
    public static func isPostgreSQL(_ setting: String) -> Bool {
        setting.hasPrefix("postgresql://") || setting.hasPrefix("postgres://")
    }

    /// The setting as it may be shown or logged: a URL's password (in its user part or a `password=`
    /// parameter) is masked.
    public static func redacted(_ setting: String) -> String {
        guard isPostgreSQL(setting), let schemeEnd = setting.range(of: "://") else { return setting }
        let rest = setting[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
            authority.replaceSubrange(authority.index(after: colon)..<at, with: "***")
        }
        var tail = String(rest[authorityEnd...])
        if let query = tail.firstIndex(of: "?") {
            let parameters = tail[tail.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false)
                .map { $0.hasPrefix("password=") ? "password=***" : String($0) }
            tail = String(tail[...query]) + parameters.joined(separator: "&")
        }
        return String(setting[..<schemeEnd.upperBound]) + authority + tail
    }
}
