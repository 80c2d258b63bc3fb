import PostgreSQL
import SQLCore
import SQLite

/// The schema of `SQLitePushStore` (its last version) on PostgreSQL, one migration per version
/// (`schema_version`); the store migrates on connect.
extension PostgreSQLPushStore {
    /// Ids come from identity sequences, so a removed registration's or retry's id is never handed out
    /// again (work in flight for it must not land on another). Booleans are `boolean`, times `bigint`
    /// milliseconds. `sizes` keeps the totals that caps check and /metrics shows, by triggers, so no
    /// check counts a whole table; a cap's check locks its total's row, so two transactions never
    /// both take the last place.
    static let migrations = [
        Migration(
            version: 1,
            sql: """
                CREATE TABLE registrations (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    domain text NOT NULL,
                    token text NOT NULL,
                    push_module text NOT NULL,
                    account text,
                    device_key bytea NOT NULL,
                    calls text NOT NULL,
                    wants_reads boolean NOT NULL,
                    collapse_key bytea NOT NULL,
                    created_at bigint NOT NULL,
                    updated_at bigint NOT NULL,
                    last_push_at bigint,
                    last_error text,
                    last_error_at bigint,
                    last_wake_at bigint,
                    push_count bigint NOT NULL DEFAULT 0,
                    error_count bigint NOT NULL DEFAULT 0,
                    fingerprint text NOT NULL
                );
                CREATE UNIQUE INDEX registrations_by_token ON registrations (token, domain, coalesce(account, ''));
                CREATE INDEX registrations_by_account ON registrations (account);
                CREATE INDEX registrations_by_fingerprint ON registrations (fingerprint);
                CREATE TABLE tombstones (
                    token text NOT NULL,
                    push_module text NOT NULL,
                    scope text NOT NULL,
                    buried_at bigint NOT NULL,
                    PRIMARY KEY (token, push_module, scope)
                );
                CREATE TABLE chats (
                    registration_id bigint NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    chat text NOT NULL,
                    count bigint NOT NULL,
                    last_message_at bigint,
                    window_ends_at bigint,
                    window_ms bigint NOT NULL,
                    held text,
                    noticed_since_read boolean NOT NULL,
                    last_read_push_at bigint,
                    PRIMARY KEY (registration_id, chat)
                );
                CREATE INDEX chats_by_window_end ON chats (window_ends_at) WHERE window_ends_at IS NOT NULL;
                CREATE TABLE sightings (
                    registration_id bigint NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    key text NOT NULL,
                    seen_at bigint NOT NULL,
                    PRIMARY KEY (registration_id, key)
                );
                CREATE INDEX sightings_by_age ON sightings (registration_id, seen_at);
                CREATE TABLE calls (
                    registration_id bigint NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    sid text NOT NULL,
                    chat text NOT NULL,
                    caller text NOT NULL,
                    media text NOT NULL,
                    at bigint NOT NULL,
                    PRIMARY KEY (registration_id, sid)
                );
                CREATE INDEX calls_by_age ON calls (registration_id, at);
                CREATE TABLE retries (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    registration_id bigint NOT NULL REFERENCES registrations (id) ON DELETE CASCADE,
                    summary text NOT NULL,
                    kind text NOT NULL,
                    collapse_chat text,
                    attempts bigint NOT NULL,
                    next_at bigint NOT NULL,
                    deadline bigint NOT NULL
                );
                CREATE INDEX retries_by_next ON retries (next_at);
                CREATE INDEX retries_by_registration ON retries (registration_id);
                CREATE INDEX retries_calls_by_next ON retries (next_at) WHERE kind = 'call';
                CREATE INDEX retries_by_deadline ON retries (deadline);
                CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL);
                CREATE TABLE unknown_node_answers (at bigint NOT NULL);
                CREATE INDEX unknown_node_answers_by_time ON unknown_node_answers (at);
                CREATE TABLE policies (account text PRIMARY KEY, document text NOT NULL);

                CREATE TABLE sizes (name text PRIMARY KEY, count bigint NOT NULL);
                INSERT INTO sizes (name, count) VALUES ('registrations', 0), ('retries', 0);
                CREATE FUNCTION count_size(size_name text, change bigint) RETURNS void LANGUAGE sql AS $$
                    INSERT INTO sizes (name, count) VALUES (size_name, change)
                    ON CONFLICT (name) DO UPDATE SET count = sizes.count + change
                $$;
                CREATE FUNCTION count_registrations() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP IN ('DELETE', 'UPDATE') THEN
                        PERFORM count_size('registrations@' || OLD.domain, -1);
                    END IF;
                    IF TG_OP IN ('INSERT', 'UPDATE') THEN
                        PERFORM count_size('registrations@' || NEW.domain, 1);
                    END IF;
                    IF TG_OP = 'INSERT' THEN
                        PERFORM count_size('registrations', 1);
                    ELSIF TG_OP = 'DELETE' THEN
                        PERFORM count_size('registrations', -1);
                    END IF;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER registrations_counted AFTER INSERT OR DELETE ON registrations
                    FOR EACH ROW EXECUTE FUNCTION count_registrations();
                CREATE TRIGGER registrations_moved_domain AFTER UPDATE OF domain ON registrations
                    FOR EACH ROW WHEN (OLD.domain IS DISTINCT FROM NEW.domain) EXECUTE FUNCTION count_registrations();
                CREATE FUNCTION count_retries() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM count_size('retries', CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END);
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER retries_counted AFTER INSERT OR DELETE ON retries
                    FOR EACH ROW EXECUTE FUNCTION count_retries();
                """),
        // Several instances share the store. A policy change counts a generation (by a trigger, so an
        // edit by hand counts too): an instance forgets the policies it resolved at an older one before
        // its next push. Work that comes due (a window's end, a retry's or a lease's time) is announced
        // on the channel `apush_due` with its time, so an instance asleep until later wakes for it,
        // whichever instance stored it (and however that one ended).
        Migration(
            version: 2,
            sql: """
                CREATE TABLE policy_generation (value bigint NOT NULL);
                INSERT INTO policy_generation (value) VALUES (0);
                CREATE FUNCTION count_policy_generation() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    UPDATE policy_generation SET value = value + 1;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON policies
                    FOR EACH STATEMENT EXECUTE FUNCTION count_policy_generation();

                CREATE FUNCTION announce_due() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_notify('apush_due', to_jsonb(NEW) ->> TG_ARGV[0]);
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER window_opened AFTER INSERT ON chats
                    FOR EACH ROW WHEN (NEW.window_ends_at IS NOT NULL) EXECUTE FUNCTION announce_due('window_ends_at');
                CREATE TRIGGER window_moved AFTER UPDATE OF window_ends_at ON chats
                    FOR EACH ROW WHEN (NEW.window_ends_at IS NOT NULL AND NEW.window_ends_at IS DISTINCT FROM OLD.window_ends_at)
                    EXECUTE FUNCTION announce_due('window_ends_at');
                CREATE TRIGGER retry_stored AFTER INSERT ON retries
                    FOR EACH ROW EXECUTE FUNCTION announce_due('next_at');
                CREATE TRIGGER retry_moved AFTER UPDATE OF next_at ON retries
                    FOR EACH ROW WHEN (NEW.next_at IS DISTINCT FROM OLD.next_at) EXECUTE FUNCTION announce_due('next_at');
                """),
        // Every push puts an item in the outbox and takes it out when answered: one row keeping the total
        // of retries, updated by each, held every push of every instance in line behind each other's
        // commit. The total is kept in `retryShards` rows, one chosen by the item's id, and the cap is
        // checked against their sum unlocked: concurrent transactions may pass it by as many items as
        // there are of them, never more.
        Migration(
            version: 3,
            sql: """
                INSERT INTO sizes (name, count) SELECT 'retries#' || shard, 0 FROM generate_series(0, 15) AS shard;
                UPDATE sizes SET count = (SELECT count FROM sizes WHERE name = 'retries') WHERE name = 'retries#0';
                DELETE FROM sizes WHERE name = 'retries';
                CREATE OR REPLACE FUNCTION count_retries() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' THEN
                        UPDATE sizes SET count = count + 1 WHERE name = 'retries#' || (NEW.id % 16);
                    ELSE
                        UPDATE sizes SET count = count - 1 WHERE name = 'retries#' || (OLD.id % 16);
                    END IF;
                    RETURN NULL;
                END
                $$;
                """),
        // As SQLite's migration 7: an expired item is swept once it is due, found through next_at, so
        // the deadline's index only cost a write for every push.
        Migration(version: 4, sql: "DROP INDEX retries_by_deadline;"),
        // As SQLite's migration 8: each account's `#test` pushes of the last minute.
        Migration(
            version: 5,
            sql: """
                CREATE TABLE test_pushes (account TEXT NOT NULL, at BIGINT NOT NULL);
                CREATE INDEX test_pushes_by_account ON test_pushes (account, at);
                CREATE INDEX test_pushes_by_time ON test_pushes (at);
                """),
        // Issue 20, item 4, as SQLite's migration 9: each chat's generation, and the one a message push
        // in the outbox was decided at.
        Migration(
            version: 6,
            sql: """
                ALTER TABLE chats ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
                ALTER TABLE retries ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
                """),
        // Issue 20, item 7, as SQLite's migration 10: each registration's last use, indexed, and the
        // total of registrations with no account.
        Migration(
            version: 7,
            sql: """
                ALTER TABLE registrations ADD COLUMN last_used_at bigint NOT NULL DEFAULT 0;
                UPDATE registrations SET last_used_at = greatest(updated_at, coalesce(last_push_at, 0));
                CREATE INDEX registrations_by_last_use ON registrations (last_used_at);
                INSERT INTO sizes (name, count)
                    SELECT 'registrations-without-account', count(*) FROM registrations WHERE account IS NULL;
                CREATE FUNCTION count_registrations_without_account() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP IN ('DELETE', 'UPDATE') AND OLD.account IS NULL THEN
                        PERFORM count_size('registrations-without-account', -1);
                    END IF;
                    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.account IS NULL THEN
                        PERFORM count_size('registrations-without-account', 1);
                    END IF;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER registrations_counted_without_account AFTER INSERT OR DELETE ON registrations
                    FOR EACH ROW EXECUTE FUNCTION count_registrations_without_account();
                CREATE TRIGGER registrations_moved_account AFTER UPDATE OF account ON registrations
                    FOR EACH ROW WHEN ((OLD.account IS NULL) IS DISTINCT FROM (NEW.account IS NULL))
                    EXECUTE FUNCTION count_registrations_without_account();
                """),
        // Issue 20, item 13, as SQLite's migration 11: each policy generation logs the account it
        // changed, row by row (a TRUNCATE logs `''`: every policy), keeping the latest 1,024.
        Migration(
            version: 8,
            sql: """
                CREATE TABLE policy_changes (generation bigint PRIMARY KEY, account text NOT NULL);
                DROP TRIGGER policies_changed ON policies;
                DROP FUNCTION count_policy_generation();
                CREATE FUNCTION log_policy_change(account text) RETURNS void LANGUAGE plpgsql AS $$
                DECLARE
                    changed bigint;
                BEGIN
                    UPDATE policy_generation SET value = value + 1 RETURNING value INTO changed;
                    INSERT INTO policy_changes (generation, account) VALUES (changed, account);
                    DELETE FROM policy_changes WHERE generation <= changed - 1024;
                END
                $$;
                CREATE FUNCTION policy_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'TRUNCATE' THEN
                        PERFORM log_policy_change('');
                    ELSIF TG_OP = 'INSERT' THEN
                        PERFORM log_policy_change(NEW.account);
                    ELSIF TG_OP = 'DELETE' THEN
                        PERFORM log_policy_change(OLD.account);
                    ELSE
                        PERFORM log_policy_change(CASE WHEN OLD.account = NEW.account THEN NEW.account ELSE '' END);
                    END IF;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE ON policies
                    FOR EACH ROW EXECUTE FUNCTION policy_changed();
                CREATE TRIGGER policies_truncated AFTER TRUNCATE ON policies
                    FOR EACH STATEMENT EXECUTE FUNCTION policy_changed();
                """),
        // Notifications are signed (PostgreSQLPushStore+Announcements): anyone who may connect may
        // notify. `notify_signed` sends `<hex HMAC-SHA256(channel ␠ body)> ␠ <body>` under the key whose
        // HMAC pads the session setting `apush.notification_key` holds (inner then outer, 128 bytes in
        // hex), which only the store's own sessions set; a session without it notifies nothing. The due
        // times the triggers announce are signed so.
        Migration(
            version: 9,
            sql: """
                CREATE FUNCTION notify_signed(channel text, body text) RETURNS void LANGUAGE plpgsql AS $$
                DECLARE
                    pads bytea := decode(coalesce(current_setting('apush.notification_key', true), ''), 'hex');
                BEGIN
                    IF length(pads) = 128 THEN
                        PERFORM pg_notify(channel, encode(sha256(substr(pads, 65, 64)
                            || sha256(substr(pads, 1, 64) || convert_to(channel || ' ' || body, 'UTF8'))), 'hex')
                            || ' ' || body);
                    END IF;
                END
                $$;
                CREATE OR REPLACE FUNCTION announce_due() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM notify_signed('apush_due', to_jsonb(NEW) ->> TG_ARGV[0]);
                    RETURN NULL;
                END
                $$;
                """),
        // A btree entry holds at most 2,704 bytes: a 2,048-byte token with an account of about 1 KB did
        // not fit the unique index on (token, domain, account), nor the tombstones' key, and such a
        // registration could not be stored. They index the MD5 of the token and of the account (or
        // scope) instead, and each query by token names `md5(token)` beside the token itself, to use
        // them. MD5, not SHA-256: it is IMMUTABLE on text, as an index needs (a text's bytes are not).
        // Two values with one MD5 must both be crafted, by one user for his own account: the most a
        // collision does is refuse his second registration.
        Migration(
            version: 10,
            sql: """
                DROP INDEX registrations_by_token;
                CREATE UNIQUE INDEX registrations_by_token
                    ON registrations (md5(token), domain, md5(coalesce(account, '')));
                ALTER TABLE tombstones DROP CONSTRAINT tombstones_pkey;
                CREATE UNIQUE INDEX tombstones_by_token ON tombstones (md5(token), push_module, md5(scope));
                """),
        // As SQLite's migration 12 (issue 20 item 3): unknown-node answers budgeted per account too.
        Migration(
            version: 11,
            sql: """
                ALTER TABLE unknown_node_answers ADD COLUMN account text NOT NULL DEFAULT '';
                CREATE INDEX unknown_node_answers_by_account ON unknown_node_answers (account);
                """),
        // Issue 22 item 5, as SQLite's migration 13: each registration's unread total, kept by a trigger
        // on its chats' counts. A change of a chat holds its registration's row already (`updateChat`);
        // a prune that forgets a counted chat takes the row after the chat's, and loses a deadlock at
        // worst (its transaction runs again).
        Migration(
            version: 12,
            sql: """
                ALTER TABLE registrations ADD COLUMN unread bigint NOT NULL DEFAULT 0;
                UPDATE registrations
                    SET unread = (SELECT coalesce(sum(count), 0)::bigint FROM chats WHERE registration_id = registrations.id)
                    WHERE id IN (SELECT registration_id FROM chats WHERE count <> 0);
                CREATE FUNCTION count_unread() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF TG_OP = 'INSERT' AND NEW.count <> 0 THEN
                        UPDATE registrations SET unread = unread + NEW.count WHERE id = NEW.registration_id;
                    ELSIF TG_OP = 'UPDATE' AND NEW.count <> OLD.count THEN
                        UPDATE registrations SET unread = unread + NEW.count - OLD.count WHERE id = NEW.registration_id;
                    ELSIF TG_OP = 'DELETE' AND OLD.count <> 0 THEN
                        UPDATE registrations SET unread = unread - OLD.count WHERE id = OLD.registration_id;
                    END IF;
                    RETURN NULL;
                END
                $$;
                CREATE TRIGGER chats_unread_counted AFTER INSERT OR UPDATE OF count OR DELETE ON chats
                    FOR EACH ROW EXECUTE FUNCTION count_unread();
                """),
    ]

    /// A total kept by the `sizes` triggers, its row locked until the transaction ends: the check of a
    /// cap and the write it limits are atomic against other connections.
    static func lockedSize(_ name: String, in connection: Connection) throws -> Int {
        Int(
            try connection.queryOne("SELECT count FROM sizes WHERE name = $1 FOR UPDATE", [.text(name)])
                .decode("count", \.int64Value))
    }
}
