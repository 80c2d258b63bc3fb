import SQLCore
import SQLite

/// The schema, one migration per version (`PRAGMA user_version`); `SQLitePushStore` migrates on open.
extension SQLitePushStore {
    /// Registration and retry ids are AUTOINCREMENT so a removed one's id is never handed out again: work
    /// still in flight for it (a held window, a push's outcome, a retry timer) must not land on another.
    static let migrations = [
        Migration(
            version: 1,
            sql: """
                CREATE TABLE registrations (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    domain TEXT NOT NULL,
                    token TEXT NOT NULL,
                    push_module TEXT NOT NULL,
                    account TEXT,
                    device_key BLOB NOT NULL,
                    calls TEXT NOT NULL,
                    wants_reads INTEGER NOT NULL,
                    collapse_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    last_push_at INTEGER,
                    last_error TEXT,
                    last_error_at INTEGER,
                    last_wake_at INTEGER,
                    push_count INTEGER NOT NULL DEFAULT 0,
                    error_count INTEGER NOT NULL DEFAULT 0,
                    UNIQUE (domain, token)
                );
                CREATE INDEX registrations_by_account ON registrations (account);
                CREATE TABLE tombstones (
                    token TEXT NOT NULL,
                    push_module TEXT NOT NULL,
                    buried_at INTEGER NOT NULL,
                    PRIMARY KEY (token, push_module)
                );
                CREATE TABLE chats (
                    registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    chat TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    last_message_at INTEGER,
                    window_ends_at INTEGER,
                    window_ms INTEGER NOT NULL,
                    held TEXT,
                    noticed_since_read INTEGER NOT NULL,
                    last_read_push_at INTEGER,
                    PRIMARY KEY (registration_id, chat)
                );
                CREATE INDEX chats_by_window_end ON chats (window_ends_at) WHERE window_ends_at IS NOT NULL;
                CREATE TABLE sightings (
                    registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    key TEXT NOT NULL,
                    seen_at INTEGER NOT NULL,
                    PRIMARY KEY (registration_id, key)
                );
                CREATE TABLE calls (
                    registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    sid TEXT NOT NULL,
                    chat TEXT NOT NULL,
                    caller TEXT NOT NULL,
                    media TEXT NOT NULL,
                    at INTEGER NOT NULL,
                    PRIMARY KEY (registration_id, sid)
                );
                CREATE TABLE retries (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    registration_id INTEGER NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    summary TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    collapse_chat TEXT,
                    attempts INTEGER NOT NULL,
                    next_at INTEGER NOT NULL,
                    deadline INTEGER NOT NULL
                );
                CREATE INDEX retries_by_next ON retries (next_at);
                CREATE INDEX retries_by_registration ON retries (registration_id);
                CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
                CREATE TABLE unknown_node_answers (at INTEGER NOT NULL);
                CREATE TABLE policies (account TEXT PRIMARY KEY, document TEXT NOT NULL);
                """),
        // A registration is (domain, account, token), and a tombstone has a scope: `*` for a dead token
        // (every account), `''` for the registration with no account, else the account. SQLite cannot
        // drop a UNIQUE constraint, so both tables are rebuilt (SQLite's 12 steps: foreign keys off, so
        // dropping the old registrations does not cascade to chats, sightings, calls and retries; every
        // row kept with its id, and the AUTOINCREMENT high-water mark too). Old tombstones were dead
        // tokens or removals of the token's only registration: they stay for every account.
        // `sizes` keeps the totals that caps check, so no check counts a whole table.
        Migration(
            version: 2, rebuildsTables: true,
            sql: """
                CREATE TABLE registrations_v2 (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    domain TEXT NOT NULL,
                    token TEXT NOT NULL,
                    push_module TEXT NOT NULL,
                    account TEXT,
                    device_key BLOB NOT NULL,
                    calls TEXT NOT NULL,
                    wants_reads INTEGER NOT NULL,
                    collapse_key BLOB NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    last_push_at INTEGER,
                    last_error TEXT,
                    last_error_at INTEGER,
                    last_wake_at INTEGER,
                    push_count INTEGER NOT NULL DEFAULT 0,
                    error_count INTEGER NOT NULL DEFAULT 0
                );
                INSERT INTO registrations_v2 (id, domain, token, push_module, account, device_key, calls, wants_reads,
                    collapse_key, created_at, updated_at, last_push_at, last_error, last_error_at, last_wake_at,
                    push_count, error_count)
                SELECT id, domain, token, push_module, account, device_key, calls, wants_reads, collapse_key,
                    created_at, updated_at, last_push_at, last_error, last_error_at, last_wake_at, push_count,
                    error_count FROM registrations;
                DELETE FROM sqlite_sequence WHERE name = 'registrations_v2';
                INSERT INTO sqlite_sequence (name, seq)
                    SELECT 'registrations_v2', seq FROM sqlite_sequence WHERE name = 'registrations';
                DROP TABLE registrations;
                ALTER TABLE registrations_v2 RENAME TO registrations;
                CREATE UNIQUE INDEX registrations_by_token ON registrations (token, domain, ifnull(account, ''));
                CREATE INDEX registrations_by_account ON registrations (account);

                CREATE TABLE tombstones_v2 (
                    token TEXT NOT NULL,
                    push_module TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    buried_at INTEGER NOT NULL,
                    PRIMARY KEY (token, push_module, scope)
                );
                INSERT INTO tombstones_v2 (token, push_module, scope, buried_at)
                    SELECT token, push_module, '*', buried_at FROM tombstones;
                DROP TABLE tombstones;
                ALTER TABLE tombstones_v2 RENAME TO tombstones;

                CREATE INDEX sightings_by_age ON sightings (registration_id, seen_at);
                CREATE INDEX calls_by_age ON calls (registration_id, at);

                CREATE TABLE sizes (name TEXT PRIMARY KEY, count INTEGER NOT NULL);
                INSERT INTO sizes (name, count) SELECT 'registrations', count(*) FROM registrations;
                INSERT INTO sizes (name, count) SELECT 'retries', count(*) FROM retries;
                CREATE TRIGGER registrations_added AFTER INSERT ON registrations
                    BEGIN UPDATE sizes SET count = count + 1 WHERE name = 'registrations'; END;
                CREATE TRIGGER registrations_removed AFTER DELETE ON registrations
                    BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'registrations'; END;
                CREATE TRIGGER retries_added AFTER INSERT ON retries
                    BEGIN UPDATE sizes SET count = count + 1 WHERE name = 'retries'; END;
                CREATE TRIGGER retries_removed AFTER DELETE ON retries
                    BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'retries'; END;
                """),
        // The retries table is also the outbox (every push is kept there until its answer is recorded):
        // due calls are claimed first, and expired items are found without a scan.
        Migration(
            version: 3,
            sql: """
                CREATE INDEX retries_calls_by_next ON retries (next_at) WHERE kind = 'call';
                CREATE INDEX retries_by_deadline ON retries (deadline);
                """),
        // Each domain's registrations, kept like the total, so /metrics counts no table.
        Migration(
            version: 4,
            sql: """
                INSERT INTO sizes (name, count)
                    SELECT 'registrations@' || domain, count(*) FROM registrations GROUP BY domain;
                CREATE TRIGGER registrations_added_to_domain AFTER INSERT ON registrations
                    BEGIN
                        INSERT OR IGNORE INTO sizes (name, count) VALUES ('registrations@' || NEW.domain, 0);
                        UPDATE sizes SET count = count + 1 WHERE name = 'registrations@' || NEW.domain;
                    END;
                CREATE TRIGGER registrations_removed_from_domain AFTER DELETE ON registrations
                    BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'registrations@' || OLD.domain; END;
                CREATE TRIGGER registrations_moved_domain AFTER UPDATE OF domain ON registrations
                    WHEN OLD.domain IS NOT NEW.domain
                    BEGIN
                        UPDATE sizes SET count = count - 1 WHERE name = 'registrations@' || OLD.domain;
                        INSERT OR IGNORE INTO sizes (name, count) VALUES ('registrations@' || NEW.domain, 0);
                        UPDATE sizes SET count = count + 1 WHERE name = 'registrations@' || NEW.domain;
                    END;
                """),
        // An operator names a registration by its token's fingerprint (`Fingerprint`): kept and indexed,
        // so finding one is a lookup, not a scan that hashes every token. The rows stored before are
        // filled by `token_fingerprint`, which the store defines on its connection.
        Migration(
            version: 5,
            sql: """
                ALTER TABLE registrations ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
                UPDATE registrations SET fingerprint = token_fingerprint(token);
                CREATE INDEX registrations_by_fingerprint ON registrations (fingerprint);
                """),
        // Every change of a policy counts one generation, by triggers (so an edit by hand counts too): a
        // process that cached policies resolved at an older generation forgets them before its next push.
        Migration(
            version: 6,
            sql: """
                CREATE TABLE policy_generation (value INTEGER NOT NULL);
                INSERT INTO policy_generation (value) VALUES (0);
                CREATE TRIGGER policies_added AFTER INSERT ON policies
                    BEGIN UPDATE policy_generation SET value = value + 1; END;
                CREATE TRIGGER policies_changed AFTER UPDATE ON policies
                    BEGIN UPDATE policy_generation SET value = value + 1; END;
                CREATE TRIGGER policies_removed AFTER DELETE ON policies
                    BEGIN UPDATE policy_generation SET value = value + 1; END;
                """),
        // The outbox takes an insert and a delete for every push. An expired item is swept once it is
        // due (`deadline < now AND next_at <= now`), which the next_at index finds: the deadline's index
        // only cost writes.
        Migration(version: 7, sql: "DROP INDEX retries_by_deadline;"),
        // Each account's `#test` pushes of the last minute, in the store so that every instance
        // sharing it counts them (`takeTestPush`).
        Migration(
            version: 8,
            sql: """
                CREATE TABLE test_pushes (account TEXT NOT NULL, at INTEGER NOT NULL);
                CREATE INDEX test_pushes_by_account ON test_pushes (account, at);
                CREATE INDEX test_pushes_by_time ON test_pushes (at);
                """),
        // Issue 20, item 4: each chat counts its decisions (`generation`, which never goes back as the
        // count does after a read), and a message push in the outbox keeps the one it was decided at,
        // so a retry is dropped once its chat moved on even when the count came back to its value.
        // Rows from before start at 0 on both sides: current until their chat's next decision.
        Migration(
            version: 9,
            sql: """
                ALTER TABLE chats ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE retries ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
                """),
        // Issue 20, item 7: each registration's last use (registered, renewed, pushed), indexed, so the
        // maintenance chore finds those unused for `push.registrationExpiryDays` without a scan (rows
        // from before: their last change or push); and the total of registrations with no account,
        // kept like the others, for their cap.
        Migration(
            version: 10,
            sql: """
                ALTER TABLE registrations ADD COLUMN last_used_at INTEGER NOT NULL DEFAULT 0;
                UPDATE registrations SET last_used_at = max(updated_at, ifnull(last_push_at, 0));
                CREATE INDEX registrations_by_last_use ON registrations (last_used_at);
                INSERT INTO sizes (name, count)
                    SELECT 'registrations-without-account', count(*) FROM registrations WHERE account IS NULL;
                CREATE TRIGGER registrations_added_without_account AFTER INSERT ON registrations
                    WHEN NEW.account IS NULL
                    BEGIN UPDATE sizes SET count = count + 1 WHERE name = 'registrations-without-account'; END;
                CREATE TRIGGER registrations_removed_without_account AFTER DELETE ON registrations
                    WHEN OLD.account IS NULL
                    BEGIN UPDATE sizes SET count = count - 1 WHERE name = 'registrations-without-account'; END;
                CREATE TRIGGER registrations_account_changed AFTER UPDATE OF account ON registrations
                    WHEN (OLD.account IS NULL) IS NOT (NEW.account IS NULL)
                    BEGIN
                        UPDATE sizes SET count = count + (CASE WHEN NEW.account IS NULL THEN 1 ELSE -1 END)
                        WHERE name = 'registrations-without-account';
                    END;
                """),
        // Issue 20, item 13: each policy generation logs the account whose policy it changed (`''` for
        // the defaults, which every account's policy starts from, or an account renamed by hand), so an
        // instance forgets only those accounts' cached policies. The log keeps the latest 1,024
        // (`StoreLimits.policyChangesKept`); an instance further behind forgets them all.
        Migration(
            version: 11,
            sql: """
                CREATE TABLE policy_changes (generation INTEGER PRIMARY KEY, account TEXT NOT NULL);
                DROP TRIGGER policies_added;
                DROP TRIGGER policies_changed;
                DROP TRIGGER policies_removed;
                CREATE TRIGGER policies_added AFTER INSERT ON policies
                    BEGIN
                        UPDATE policy_generation SET value = value + 1;
                        INSERT INTO policy_changes (generation, account)
                            SELECT value, NEW.account FROM policy_generation;
                        DELETE FROM policy_changes WHERE generation <= (SELECT value - 1024 FROM policy_generation);
                    END;
                CREATE TRIGGER policies_changed AFTER UPDATE ON policies
                    BEGIN
                        UPDATE policy_generation SET value = value + 1;
                        INSERT INTO policy_changes (generation, account)
                            SELECT value, CASE WHEN OLD.account = NEW.account THEN NEW.account ELSE '' END
                            FROM policy_generation;
                        DELETE FROM policy_changes WHERE generation <= (SELECT value - 1024 FROM policy_generation);
                    END;
                CREATE TRIGGER policies_removed AFTER DELETE ON policies
                    BEGIN
                        UPDATE policy_generation SET value = value + 1;
                        INSERT INTO policy_changes (generation, account)
                            SELECT value, OLD.account FROM policy_generation;
                        DELETE FROM policy_changes WHERE generation <= (SELECT value - 1024 FROM policy_generation);
                    END;
                """),
        // Issue 20 item 3: the `cancel` answers for unknown nodes are budgeted per account as well as
        // per server, so one account cannot spend every other's (`recordUnknownNodeAnswer`).
        Migration(
            version: 12,
            sql: """
                ALTER TABLE unknown_node_answers ADD COLUMN account TEXT NOT NULL DEFAULT '';
                CREATE INDEX unknown_node_answers_by_account ON unknown_node_answers (account);
                """),
        // Issue 22 item 5: each registration keeps its unread total (the sum of its chats' counts, the
        // summary's `badge`), changed by triggers in the statement that changes a count, whatever
        // changes it (a message, a read, a chat forgotten or pruned), so no push counts its chats. A
        // registration removed takes its total with it. Rows from before start at their chats' sum (only
        // those with a count are rewritten: the column's default is every other's).
        Migration(
            version: 13,
            sql: """
                ALTER TABLE registrations ADD COLUMN unread INTEGER NOT NULL DEFAULT 0;
                UPDATE registrations
                    SET unread = (SELECT ifnull(sum(count), 0) FROM chats WHERE registration_id = registrations.id)
                    WHERE id IN (SELECT registration_id FROM chats WHERE count <> 0);
                CREATE TRIGGER chats_unread_added AFTER INSERT ON chats WHEN NEW.count <> 0
                    BEGIN UPDATE registrations SET unread = unread + NEW.count WHERE id = NEW.registration_id; END;
                CREATE TRIGGER chats_unread_changed AFTER UPDATE OF count ON chats WHEN NEW.count <> OLD.count
                    BEGIN
                        UPDATE registrations SET unread = unread + NEW.count - OLD.count WHERE id = NEW.registration_id;
                    END;
                CREATE TRIGGER chats_unread_removed AFTER DELETE ON chats WHEN OLD.count <> 0
                    BEGIN UPDATE registrations SET unread = unread - OLD.count WHERE id = OLD.registration_id; END;
                """),
    ]

    /// A total kept by the `sizes` triggers.
    static func size(_ name: String, in database: Database) throws -> Int {
        Int(
            try database.queryOne("SELECT count FROM sizes WHERE name = ?", [.text(name)])
                .decode("count", \.int64Value))
    }
}
