/// Extended SQLite result codes, which sqlite3.h defines as expressions Swift does not import.
/// SQLITE_IOERR_WRITE: SQLITE_IOERR (10) | 3 << 8.
public let sqliteIOErrorWrite: Int32 = 778
/// SQLITE_CONSTRAINT_UNIQUE: SQLITE_CONSTRAINT (19) | 8 << 8.
public let sqliteConstraintUnique: Int32 = 2067
