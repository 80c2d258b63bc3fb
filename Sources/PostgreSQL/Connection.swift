import CLibPQ
public import SQLCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One session with a PostgreSQL server, over libpq.
///
/// Values and rows are SQLite's `SQLValue` and `Row`, so one decoding serves both engines: a result
/// column of an integer type is `.integer`, `boolean` is `.integer` 1 or 0 (as SQLite stores it),
/// `bytea` is `.blob`, a floating type is `.real`, anything else `.text`.
///
/// Statements whose result nobody reads (a write, a lock, `BEGIN`) can be queued (`enqueue`): they go
/// with the next statement that is read, in one round trip (libpq's pipeline mode), and a transaction
/// sends its `BEGIN` with its first statement and its `COMMIT` with its last writes.
///
/// Not `Sendable`: calls block until the server answers, so its owner keeps it on a thread of its own
/// (never the cooperative pool), one call at a time.
public final class Connection {
    private let handle: OpaquePointer
    /// Statements queued to go with the next exchange, oldest first.
    private var queued: [Statement] = []
    /// Set when a pipeline could not be read to its end: the session's state is unknown.
    private var abandoned = false
    /// Exchanges with the server so far: each statement sent alone, and each pipeline, is one.
    public private(set) var roundTrips = 0
    /// The session's prepared statements, by text and parameter types: a statement with parameters is
    /// prepared the first time it is sent (in the same round trip), so the server parses and analyses
    /// it once per session, not on every call, and plans it once when a generic plan serves.
    private var preparedNames: [PreparedKey: String] = [:]
    /// How many statements the session prepared: each name is new, as a forgotten one (stale after a
    /// schema change) stays on the server.
    private var preparedCount = 0
    /// The most statements a session prepares: the store's are a fixed set, well under it; past it a
    /// statement is sent unnamed, as every one was before.
    static let preparedLimit = 256

    /// Connects with a conninfo string or a `postgresql://` URL. A connection attempt gives up after
    /// `connectTimeout` seconds unless the conninfo sets `connect_timeout` itself.
    public init(_ conninfo: String, connectTimeout: Int = 5) throws(PostgreSQLError) {
        // Keepalives find a server that vanished without closing (a host down, a partition) within a
        // minute, even on a connection that only listens.
        let keywords = [
            "connect_timeout", "application_name", "keepalives_idle", "keepalives_interval", "keepalives_count",
            "dbname",
        ]
        let values = ["\(connectTimeout)", "apush-component", "30", "10", "3", conninfo]
        // Later entries win: the conninfo's own settings override the defaults before it.
        let connection = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let connection else {
            throw PostgreSQLError(sqlState: nil, message: "out of memory", connectionLost: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.masking(password: Self.password(in: conninfo), in: Self.errorMessage(connection))
            PQfinish(connection)
            throw PostgreSQLError(sqlState: nil, message: message, connectionLost: true)
        }
        handle = connection
        // Notices (e.g. "relation already exists, skipping") are not errors; libpq would print them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// Where the session goes, for a log: `user@host:port/database`, never the password.
    public var target: String {
        func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        return "\(text(PQuser(handle)))@\(text(PQhost(handle))):\(text(PQport(handle)))/\(text(PQdb(handle)))"
    }

    /// The session is gone (the server restarted or the network broke): only a new connection helps.
    public var isBroken: Bool { abandoned || PQstatus(handle) != CONNECTION_OK }

    public var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Runs one statement with `$1`, `$2`... bound to `parameters` (after the queued ones, in the same
    /// round trip); returns how many rows it changed.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgreSQLError) -> Int {
        let result = try exchange([try Statement(sql, parameters)])[0]
        defer { PQclear(result) }
        return Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// Runs one statement with `$1`, `$2`... bound to `parameters` (after the queued ones, in the same
    /// round trip); returns all its rows.
    public func query(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgreSQLError) -> [Row] {
        try queries([(sql, parameters)])[0]
    }

    /// `query(sql, parameters)` of a statement built elsewhere.
    public func query(_ statement: SQLStatement) throws(PostgreSQLError) -> [Row] {
        try queries([statement])[0]
    }

    /// Runs several statements, in order, in one round trip (after the queued ones); returns each one's
    /// rows. The first error is thrown, and the statements after it did not run.
    public func queries(_ statements: [SQLStatement]) throws(PostgreSQLError) -> [[Row]] {
        var encoded: [Statement] = []
        for (sql, parameters) in statements { encoded.append(try Statement(sql, parameters)) }
        let results = try exchange(encoded)
        defer { results.forEach { PQclear($0) } }
        return zip(encoded, results).map { statement, result in Self.rows(of: result, sql: statement.sql) }
    }

    /// Queues a statement whose rows and count nobody reads, to go with the next exchange: its error,
    /// if any, is thrown by the call that sends it. A parameter that cannot be sent is refused here.
    public func enqueue(_ sql: String, _ parameters: [SQLValue] = []) throws(PostgreSQLError) {
        queued.append(try Statement(sql, parameters))
    }

    /// `enqueue(sql, parameters)` of a statement built elsewhere.
    public func enqueue(_ statement: SQLStatement) throws(PostgreSQLError) {
        try enqueue(statement.sql, statement.parameters)
    }

    private static func rows(of result: OpaquePointer, sql: String) -> [Row] {
        let columnCount = PQnfields(result)
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        let types = (0..<columnCount).map { PQftype(result, $0) }
        return (0..<PQntuples(result)).map { row in
            Row(
                columns: columns,
                values: (0..<columnCount).map { column in Self.value(result, row, column, type: types[Int(column)]) },
                sql: sql)
        }
    }

    /// The first row of a statement that must return one (an aggregate, a kept total): none is an error.
    public func queryOne(_ sql: String, _ parameters: [SQLValue] = []) throws -> Row {
        guard let row = try query(sql, parameters).first else { throw RowDecodingError(.noRow, sql: sql) }
        return row
    }

    /// Runs any number of `;`-separated statements without parameters, e.g. a schema (the queued ones
    /// first, in a round trip of their own).
    public func executeScript(_ sql: String) throws(PostgreSQLError) {
        if !queued.isEmpty { _ = try exchange([]) }
        roundTrips += 1
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs `body` in a transaction (`BEGIN ISOLATION LEVEL SERIALIZABLE` unless told otherwise), its
    /// `BEGIN` sent with its first statement. Commits if `body` returns; otherwise rolls back and
    /// rethrows the first error, from `body` or from `COMMIT`.
    public func transaction<T>(
        isolation: String = "SERIALIZABLE", _ body: (Connection) throws -> T
    ) throws -> T {
        try enqueue("BEGIN ISOLATION LEVEL \(isolation)")
        do {
            let result = try body(self)
            try execute("COMMIT")
            return result
        } catch {
            rollBackIfOpen()
            throw error
        }
    }

    /// The notifications (`LISTEN`) that have come, waiting until one does or `stopDescriptor` is
    /// readable (then nil). Waits in `poll`, using no CPU. A lost connection throws.
    public func notifications(unlessReadable stopDescriptor: Int32) throws(PostgreSQLError) -> [ChannelNotification]? {
        while true {
            var pending: [ChannelNotification] = []
            while let notification = PQnotifies(handle) {
                pending.append(
                    ChannelNotification(
                        channel: String(cString: notification.pointee.relname),
                        payload: String(cString: notification.pointee.extra)))
                PQfreemem(notification)
            }
            if !pending.isEmpty { return pending }
            // A session the server ended has no socket left to wait on.
            guard !isBroken else {
                throw PostgreSQLError(sqlState: nil, message: Self.errorMessage(handle), connectionLost: true)
            }
            var descriptors = [
                pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopDescriptor, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&descriptors, 2, -1) >= 0 || errno == EINTR else {
                throw PostgreSQLError(sqlState: nil, message: "poll failed: errno \(errno)", connectionLost: true)
            }
            if descriptors[1].revents != 0 { return nil }
            guard PQconsumeInput(handle) == 1 else {
                throw PostgreSQLError(sqlState: nil, message: Self.errorMessage(handle), connectionLost: true)
            }
        }
    }

    /// Forgets what is queued and ends a transaction that a failure left open; a failed rollback must
    /// not mask the first error.
    public func rollBackIfOpen() {
        queued.removeAll()
        if isInTransaction && !isBroken {
            _ = try? execute("ROLLBACK")
        }
    }

    /// Sends the queued statements and then `statements`, and returns the results of `statements`:
    /// one statement alone as a plain exchange, more (or one to prepare first) as one pipeline. One
    /// round trip either way.
    private func exchange(_ statements: [Statement]) throws(PostgreSQLError) -> [OpaquePointer] {
        let all = queued + statements
        queued.removeAll()
        guard !all.isEmpty else { return [] }
        roundTrips += 1
        let steps = steps(all)
        let results = steps.count > 1 ? try pipeline(steps) : [try single(all[0], prepared: steps[0].preparedName)]
        // The queued statements' results nobody reads.
        let unread = results.count - statements.count
        results.prefix(unread).forEach { PQclear($0) }
        return Array(results.dropFirst(unread))
    }

    /// What the server is sent for `statements`: each one with parameters by its prepared statement,
    /// prepared just before where this session has not yet.
    private func steps(_ statements: [Statement]) -> [Step] {
        var steps: [Step] = []
        var preparing: [PreparedKey: String] = [:]
        for statement in statements {
            let key = statement.preparedKey
            if let name = preparedNames[key] ?? preparing[key] {
                steps.append(.run(statement, preparedName: name))
            } else if statement.encoded.isEmpty || preparedCount + preparing.count >= Self.preparedLimit {
                steps.append(.run(statement, preparedName: nil))
            } else {
                let name = "apush_\(preparedCount + preparing.count)"
                preparing[key] = name
                steps.append(.prepare(name: name, key: key))
                steps.append(.run(statement, preparedName: name))
            }
        }
        return steps
    }

    /// Sends `steps` in one pipeline and reads every result, returning the statements' (a prepared
    /// statement is remembered once the server has it). Past a failed step the server skips the rest
    /// up to the sync; the first error is thrown, with every result cleared.
    private func pipeline(_ steps: [Step]) throws(PostgreSQLError) -> [OpaquePointer] {
        guard PQenterPipelineMode(handle) == 1 else { throw lost(steps[0].sql) }
        var results: [OpaquePointer] = []
        var failure: PostgreSQLError?
        var drained = true
        // Statements this pipeline prepared: none of them can be stale.
        var preparedHere: Set<String> = []
        for step in steps {
            let sent: Int32
            switch step {
            case .prepare(let name, let key):
                sent = PQsendPrepare(handle, name, key.sql, Int32(key.types.count), key.types)
            case .run(let statement, let preparedName?):
                sent = statement.withLibPQParameters { count, _, values, lengths, formats in
                    PQsendQueryPrepared(handle, preparedName, count, values, lengths, formats, 0)
                }
            case .run(let statement, nil):
                sent = statement.withLibPQParameters { count, types, values, lengths, formats in
                    PQsendQueryParams(handle, statement.sql, count, types, values, lengths, formats, 0)
                }
            }
            guard sent == 1 else {
                failure = lost(step.sql)
                break
            }
        }
        if failure == nil, PQpipelineSync(handle) != 1 { failure = lost(steps[0].sql) }
        if failure == nil {
            for step in steps {
                // Each step's result, then a null that ends it.
                guard let result = PQgetResult(handle) else {
                    failure = failure ?? lost(step.sql)
                    drained = false
                    break
                }
                while let extra = PQgetResult(handle) { PQclear(extra) }
                do throws(PostgreSQLError) {
                    if PQresultStatus(result) == PGRES_PIPELINE_ABORTED {
                        throw PostgreSQLError(
                            sqlState: nil, message: "skipped after an earlier statement failed", sql: step.sql)
                    }
                    try check(result, sql: step.sql)
                    if case .prepare(let name, let key) = step {
                        preparedNames[key] = name
                        preparedCount += 1
                        preparedHere.insert(name)
                        PQclear(result)
                    } else {
                        results.append(result)
                    }
                } catch {
                    PQclear(result)
                    failure = failure ?? markedIfStale(error, of: step, preparedHere: preparedHere)
                }
            }
            if drained, let sync = PQgetResult(handle) { PQclear(sync) }
        }
        if PQexitPipelineMode(handle) != 1 { abandoned = true }
        if let failure {
            results.forEach { PQclear($0) }
            throw failure
        }
        return results
    }

    /// Sends one statement alone, by its prepared statement if it has one, and checks its result.
    private func single(_ statement: Statement, prepared name: String?) throws(PostgreSQLError) -> OpaquePointer {
        let result = statement.withLibPQParameters { count, types, values, lengths, formats in
            if let name {
                PQexecPrepared(handle, name, count, values, lengths, formats, 0)
            } else {
                PQexecParams(handle, statement.sql, count, types, values, lengths, formats, 0)
            }
        }
        guard let result else { throw lost(statement.sql) }
        do {
            try check(result, sql: statement.sql)
        } catch {
            PQclear(result)
            throw markedIfStale(error, of: .run(statement, preparedName: name), preparedHere: [])
        }
        return result
    }

    /// `error`, marked `isStalePreparedStatement` when `step` ran a statement prepared in an earlier
    /// exchange and the server refused it as a feature it does not support: its table changed since.
    /// The statement is forgotten, to be prepared anew, under a new name, the next time it is sent.
    private func markedIfStale(_ error: PostgreSQLError, of step: Step, preparedHere: Set<String>) -> PostgreSQLError {
        guard error.sqlState == PostgreSQLError.featureNotSupported, case .run(let statement, let name?) = step,
            !preparedHere.contains(name)
        else { return error }
        preparedNames[statement.preparedKey] = nil
        var stale = error
        stale.isStalePreparedStatement = true
        return stale
    }

    private func lost(_ sql: String) -> PostgreSQLError {
        PostgreSQLError(sqlState: nil, message: Self.errorMessage(handle), sql: sql, connectionLost: true)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws(PostgreSQLError) {
        let status = PQresultStatus(result)
        guard status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY else { return }
        let field = { (code: UInt8) in PQresultErrorField(result, Int32(code)).map { String(cString: $0) } }
        let sqlState = field(UInt8(ascii: "C"))
        throw PostgreSQLError(
            sqlState: sqlState, message: field(UInt8(ascii: "M")) ?? Self.errorMessage(handle), sql: sql,
            connectionLost: isBroken)
    }

    private static func value(_ result: OpaquePointer, _ row: Int32, _ column: Int32, type: Oid) -> SQLValue {
        guard PQgetisnull(result, row, column) == 0, let pointer = PQgetvalue(result, row, column) else {
            return .null
        }
        let text = String(cString: pointer)
        switch type {
        case TypeOID.int8, TypeOID.int2, TypeOID.int4, TypeOID.oid:
            return Int64(text).map(SQLValue.integer) ?? .text(text)
        case TypeOID.bool: return .integer(text == "t" ? 1 : 0)
        case TypeOID.float4, TypeOID.float8, TypeOID.numeric: return Double(text).map(SQLValue.real) ?? .text(text)
        case TypeOID.bytea:
            var length = 0
            guard let bytes = PQunescapeBytea(UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), &length)
            else { return .text(text) }
            defer { PQfreemem(bytes) }
            return .blob(Array(UnsafeBufferPointer(start: bytes, count: length)))
        default: return .text(text)
        }
    }

    private static func errorMessage(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingTrailingNewlines()
    }

    /// The password a conninfo or URL carries, to mask it in libpq's messages.
    static func password(in conninfo: String) -> String? {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &errorMessage) else {
            PQfreemem(errorMessage)
            return nil
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password" {
                return option.pointee.val.map { String(cString: $0) }
            }
            option += 1
        }
        return nil
    }

    static func masking(password: String?, in message: String) -> String {
        guard let password, !password.isEmpty else { return message }
        return message.replacing(password, with: "***")
    }
}

/// A connection must stay on its owner's thread.
@available(*, unavailable)
extension Connection: Sendable {}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var text = self
        while text.last?.isNewline == true { text.removeLast() }
        return text
    }
}

/// `strings` as a NULL-terminated array of C strings, for the duration of `body`.
private func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}

/// Each parameter's bytes (nil for NULL) as pointers for the duration of `body`.
private func withParameterPointers<T>(_ parameters: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies: [UnsafeMutablePointer<CChar>?] = parameters.map { bytes in
        guard let bytes else { return nil }
        let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
        bytes.withUnsafeBytes { raw in
            UnsafeMutableRawPointer(copy).copyMemory(
                from: raw.baseAddress ?? UnsafeRawPointer(copy), byteCount: bytes.count)
        }
        return copy
    }
    defer { copies.forEach { $0?.deallocate() } }
    return body(copies.map { UnsafePointer($0) })
}

/// The built-in types' OIDs (pg_type.dat) that values are read as, or sent as.
private enum TypeOID {
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let text: Oid = 25
    static let oid: Oid = 26
    static let float4: Oid = 700
    static let float8: Oid = 701
    static let numeric: Oid = 1700
}

/// A statement's text with the values of its `$1`, `$2`..., built apart from the call that runs it.
public typealias SQLStatement = (sql: String, parameters: [SQLValue])

/// A statement the session prepares: its text, and the types its parameters are sent as (a value's
/// type decides how the server reads it, so one text sent with other types is another statement).
private struct PreparedKey: Hashable {
    let sql: String
    let types: [Oid]
}

/// One message of an exchange: a statement to prepare, or a statement to run (by its prepared
/// statement's name, or unnamed).
private enum Step {
    case prepare(name: String, key: PreparedKey)
    case run(Statement, preparedName: String?)

    var preparedName: String? {
        if case .run(_, let name) = self { name } else { nil }
    }

    var sql: String {
        switch self {
        case .prepare(_, let key): key.sql
        case .run(let statement, _): statement.sql
        }
    }
}

/// A statement with its parameters as libpq takes them: text NUL-terminated, but `bytea` in binary
/// (its raw bytes). Text is sent as `text` and bytes as `bytea`; a number or NULL is left for the
/// server to type from where it is used, so `SQLValue(true)` (the integer 1) fills a `boolean` as well
/// as a `bigint`. PostgreSQL text cannot hold a NUL character: such a parameter is refused rather than
/// cut short.
private struct Statement {
    let sql: String
    let encoded: [(type: Oid, bytes: [UInt8]?, binary: Bool)]

    var preparedKey: PreparedKey { PreparedKey(sql: sql, types: encoded.map(\.type)) }

    init(_ sql: String, _ parameters: [SQLValue]) throws(PostgreSQLError) {
        self.sql = sql
        var encoded: [(type: Oid, bytes: [UInt8]?, binary: Bool)] = []
        for value in parameters {
            switch value {
            case .null: encoded.append((0, nil, false))
            case .integer(let number): encoded.append((0, Array("\(number)".utf8) + [0], false))
            case .real(let number): encoded.append((0, Array("\(number)".utf8) + [0], false))
            case .text(let text):
                guard !text.utf8.contains(0) else {
                    throw PostgreSQLError(
                        sqlState: "22021", message: "a text parameter holds a NUL character", sql: sql)
                }
                encoded.append((TypeOID.text, Array(text.utf8) + [0], false))
            case .blob(let bytes): encoded.append((TypeOID.bytea, bytes, true))
            }
        }
        self.encoded = encoded
    }

    /// `body` given the parameters as libpq takes them: count, types, values, lengths and formats.
    func withLibPQParameters<T>(
        _ body: (Int32, [Oid], [UnsafePointer<CChar>?], [Int32], [Int32]) -> T
    ) -> T {
        withParameterPointers(encoded.map(\.bytes)) { values in
            body(
                Int32(encoded.count), encoded.map(\.type), values, encoded.map { Int32($0.bytes?.count ?? 0) },
                encoded.map { $0.binary ? 1 : 0 })
        }
    }
}

/// A notification a session listened for (`LISTEN channel`; `NOTIFY channel, payload`).
public struct ChannelNotification: Sendable, Equatable {
    public let channel: String
    public let payload: String
}
