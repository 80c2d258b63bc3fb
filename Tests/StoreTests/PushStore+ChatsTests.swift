import Foundation
import PostgreSQL
import SQLCore
import SQLite
import SQLiteTesting
import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Chats {}
}

extension PushStoreTests.Chats {
    @Test(arguments: StoreKind.allCases)
    func updateChatCreatesModifiesAndDeletes(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let chat = "bob@example.org"

            let sawNothing = try await store.updateChat(registrationID: id, chat: chat) { state in
                defer {
                    state = ChatState(
                        registrationID: id, chat: chat, count: 1, lastMessageAt: 1_000,
                        windowEndsAt: 11_000, windowMilliseconds: 10_000)
                }
                return state == nil
            }
            #expect(sawNothing)
            let created = ChatState(
                registrationID: id, chat: chat, count: 1, lastMessageAt: 1_000,
                windowEndsAt: 11_000, windowMilliseconds: 10_000)
            #expect(try await store.chats(registrationID: id) == [created])

            let countBefore = try await store.updateChat(registrationID: id, chat: chat) { state in
                let count = state?.count
                state?.count += 1
                state?.noticedSinceRead = true
                state?.lastReadPushAt = 9_000
                state?.windowMilliseconds = 30_000
                return count
            }
            #expect(countBefore == 1)
            var modified = created
            modified.count = 2
            modified.noticedSinceRead = true
            modified.lastReadPushAt = 9_000
            modified.windowMilliseconds = 30_000
            #expect(try await store.chats(registrationID: id) == [modified])

            let deleted = try await store.updateChat(registrationID: id, chat: chat) { state in
                state = nil
                return "gone"
            }
            #expect(deleted == "gone")
            #expect(try await store.chats(registrationID: id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateChatThatLeavesNothingStoresNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let seen = try await store.updateChat(registrationID: id, chat: "bob@example.org") { state in
                state?.count ?? -1
            }
            #expect(seen == -1)
            #expect(try await store.chats(registrationID: id).isEmpty)
        }
    }

    @Test(arguments: [
        HeldNotice(from: "bob@example.org", id: "msg-1", groupchat: false, mention: false, at: 1_234),
        HeldNotice(from: "room@muc.example.org/carol", id: nil, groupchat: true, mention: true, at: 5_678),
    ])
    func heldNoticeRoundTrips(notice: HeldNotice) async throws {
        try await withStore(.file) { store in
            let id = try await registered(store).id
            try await store.updateChat(registrationID: id, chat: "c") { state in
                state = ChatState(registrationID: id, chat: "c", windowEndsAt: 10_000, held: notice)
            }
            #expect(try await store.chats(registrationID: id).first?.held == notice)

            try await store.updateChat(registrationID: id, chat: "c") { state in state?.held = nil }
            #expect(try await store.chats(registrationID: id).first?.held == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func chatsAreKeptPerRegistrationAndListedByName(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store, token: "alice")
            let other = try await registered(store, token: "other")
            for chat in ["zed@example.org", "amy@example.org"] {
                try await openWindow(store, registrationID: alice.id, chat: chat, windowEnd: nil)
            }
            try await openWindow(store, registrationID: other.id, chat: "amy@example.org", windowEnd: nil)
            try await store.updateChat(registrationID: other.id, chat: "amy@example.org") { state in
                state?.count = 7
            }
            #expect(
                try await store.chats(registrationID: alice.id).map(\.chat) == ["amy@example.org", "zed@example.org"])
            #expect(try await store.chats(registrationID: alice.id).map(\.count) == [1, 1])
            #expect(try await store.chats(registrationID: other.id).map(\.count) == [7])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func updateChatForAnUnknownRegistrationFails(kind: StoreKind) async throws {
        try await withStore(kind) { store async throws in
            await #expect {
                try await openWindow(store, registrationID: 42, chat: "c", windowEnd: 1_000)
            } throws: { isConstraintViolation($0) }
            #expect(try await store.nextWindowEnd() == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentUpdatesOfOneChatLoseNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await store.updateChat(registrationID: id, chat: "c") { state in
                            if state == nil {
                                state = ChatState(registrationID: id, chat: "c")
                            }
                            state?.count += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.chats(registrationID: id).first?.count == 100)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func dueWindowsAreTheEndedOnesSoonestFirst(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            let ends: [String: Timestamp?] = ["c300": 300, "c100": 100, "c200": 200, "c900": 900, "closed": nil]
            for (chat, end) in ends {
                try await openWindow(store, registrationID: id, chat: chat, windowEnd: end)
            }
            #expect(try await store.dueWindows(at: 50, limit: 10).isEmpty)
            #expect(try await store.dueWindows(at: 250, limit: 10).map(\.chat) == ["c100", "c200"])
            #expect(try await store.dueWindows(at: 300, limit: 10).map(\.chat) == ["c100", "c200", "c300"])
            #expect(try await store.dueWindows(at: 1_000, limit: 2).map(\.chat) == ["c100", "c200"])
            #expect(try await store.dueWindows(at: 1_000, limit: 10).map(\.windowEndsAt) == [100, 200, 300, 900])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func nextWindowEndIsTheEarliestOpenWindow(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            #expect(try await store.nextWindowEnd() == nil)
            let id = try await registered(store).id
            try await openWindow(store, registrationID: id, chat: "closed", windowEnd: nil)
            #expect(try await store.nextWindowEnd() == nil)
            try await openWindow(store, registrationID: id, chat: "late", windowEnd: 9_000)
            try await openWindow(store, registrationID: id, chat: "soon", windowEnd: 4_000)
            #expect(try await store.nextWindowEnd() == 4_000)
            try await store.updateChat(registrationID: id, chat: "soon") { state in state?.windowEndsAt = nil }
            #expect(try await store.nextWindowEnd() == 9_000)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aNewChatPastTheCapForgetsTheQuietestIdleChatElseIsNotTracked(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.chatsPerRegistration = 2 }) { store async throws in
            let id = try await registered(store).id
            try await store.updateChat(registrationID: id, chat: "idle") { state in
                state = ChatState(registrationID: id, chat: "idle", count: 3, lastMessageAt: 1_000)
            }
            try await openWindow(store, registrationID: id, chat: "open-1", windowEnd: 5_000)
            try await openWindow(store, registrationID: id, chat: "open-2", windowEnd: 6_000)
            #expect(try await store.chats(registrationID: id).map(\.chat) == ["open-1", "open-2"])

            // Every chat has its window open: the new one's change still runs and answers, but is not stored.
            let answer = try await store.updateChat(registrationID: id, chat: "new") { state in
                state = ChatState(registrationID: id, chat: "new", count: 1, windowEndsAt: 7_000)
                return "pushed"
            }
            #expect(answer == "pushed")
            #expect(try await store.chats(registrationID: id).map(\.chat) == ["open-1", "open-2"])
            // A known chat is updated as ever.
            try await openWindow(store, registrationID: id, chat: "open-1", windowEnd: 8_000)
            #expect(try await store.nextWindowEnd() == 6_000)
        }
    }

    @Test func aHeldNoticeThatIsNoLongerItsJSONIsAnErrorNamingItsColumn() async throws {
        try await withTemporaryDatabasePath { path in
            let store = try SQLitePushStore(.file(path: path))
            let alice = try await registered(store)
            try await openWindow(store, registrationID: alice.id, chat: "bob@example.org", windowEnd: 2_000)
            try Database(.file(path: path)).executeScript(#"UPDATE chats SET held = '{"from": 1}'"#)
            let error = await #expect(throws: RowDecodingError.self) {
                try await store.dueWindows(at: 5_000, limit: 10)
            }
            #expect(error?.description.hasPrefix("column held holds a TEXT that is no value this build knows") == true)
        }
    }
}

/// Each registration's unread total (`updateChat`'s `unreadBefore`, the summary's badge): kept by the
/// store as its chats' counts change, whichever way they change.
extension PushStoreTests.Chats {
    /// Sets a chat's count (nil: forgets the chat).
    private func setCount(_ store: any PushStore, _ id: Int64, _ chat: String, _ count: Int?) async throws {
        try await store.updateChat(registrationID: id, chat: chat) { state in
            guard let count else { return state = nil }
            var changed = state ?? ChatState(registrationID: id, chat: chat, lastMessageAt: 1_000)
            changed.count = count
            state = changed
        }
    }

    /// The unread total a chat's change starts from, read through a chat nobody writes in.
    private func unread(_ store: any PushStore, _ id: Int64, excluding: [String] = []) async throws -> Int? {
        try await store.transaction {
            try $0.updateChat(registrationID: id, chat: "nobody@example.org", unreadExcluding: excluding) { $1 }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theUnreadTotalFollowsEveryChatOfItsRegistrationAndNoOther(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let alice = try await registered(store).id
            let otherDevice = try await registered(store, token: "token-2").id
            #expect(try await unread(store, alice) == 0)
            for (chat, count) in [("bob@example.org", 2), ("carol@example.org", 3), ("crew@muc.example.org", 4)] {
                for value in 1...count { try await setCount(store, alice, chat, value) }
            }
            try await setCount(store, otherDevice, "bob@example.org", 7)
            #expect(try await unread(store, alice) == 9)
            #expect(try await unread(store, otherDevice) == 7)

            // A read resets one chat; a chat forgotten takes its count along.
            try await setCount(store, alice, "carol@example.org", 0)
            #expect(try await unread(store, alice) == 6)
            try await setCount(store, alice, "crew@muc.example.org", nil)
            #expect(try await unread(store, alice) == 2)
            #expect(try await unread(store, otherDevice) == 7)

            // A registration removed takes its total along; a new one starts at nothing.
            _ = try await store.retire(registrationID: alice, at: 2_000)
            #expect(try await unread(store, alice) == 0)
            let again = try await registered(store).id
            #expect(again != alice)
            #expect(try await unread(store, again) == 0)
            #expect(try await unread(store, otherDevice) == 7)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theUnreadTotalLeavesOutTheChatsAskedFor(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await setCount(store, id, "bob@example.org", 2)
            try await setCount(store, id, "carol@example.org", 3)
            try await setCount(store, id, "crew@muc.example.org", 4)
            #expect(try await unread(store, id, excluding: ["carol@example.org"]) == 6)
            #expect(
                try await unread(store, id, excluding: ["carol@example.org", "crew@muc.example.org", "x@example.org"])
                    == 2)
            #expect(try await unread(store, id, excluding: ["never@example.org"]) == 9)
            // A name that is not a JID is matched as it is, never as SQL or a pattern.
            #expect(try await unread(store, id, excluding: ["%", "' OR 1=1 --", #"bob@example.org""#]) == 9)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func theUnreadTotalLosesTheChatsPrunedAndThoseForgottenForANewOne(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.chatsPerRegistration = 2 }) { store in
            let id = try await registered(store).id
            try await store.updateChat(registrationID: id, chat: "quiet@example.org") { state in
                state = ChatState(registrationID: id, chat: "quiet@example.org", count: 3, lastMessageAt: 1_000)
            }
            try await store.updateChat(registrationID: id, chat: "recent@example.org") { state in
                state = ChatState(registrationID: id, chat: "recent@example.org", count: 1, lastMessageAt: 9_000)
            }
            // The quietest chat makes room for a new one.
            try await store.updateChat(registrationID: id, chat: "new@example.org") { state in
                state = ChatState(registrationID: id, chat: "new@example.org", count: 2, lastMessageAt: 10_000)
            }
            #expect(try await unread(store, id) == 3)
            try await store.prune(
                tombstonesBefore: 0, sightingsBefore: 0, callsBefore: 0, unknownAnswersBefore: 0,
                quietChatsBefore: 9_500)
            #expect(try await store.chats(registrationID: id).map(\.chat) == ["new@example.org"])
            #expect(try await unread(store, id) == 2)
        }
    }

    /// A store from before the total was kept: the migration starts each registration at its chats' sum,
    /// and the triggers go on from there.
    @Test(arguments: StoreKind.allCases)
    func aStoreFromBeforeTheTotalStartsAtItsChatsSum(kind: StoreKind) async throws {
        let rows = """
            INSERT INTO registrations (domain, token, push_module, account, device_key, calls, wants_reads,
                collapse_key, created_at, updated_at, fingerprint)
            VALUES ('example.org', 'a', 'fcm', 'alice@example.org', X'01', 'none', false, X'A1', 1, 1, 'fa'),
                   ('example.org', 'b', 'fcm', 'bob@example.org', X'02', 'none', false, X'B2', 1, 1, 'fb');
            INSERT INTO chats (registration_id, chat, count, window_ms, noticed_since_read)
            SELECT id, 'one@example.org', 2, 10000, false FROM registrations WHERE token = 'a';
            INSERT INTO chats (registration_id, chat, count, window_ms, noticed_since_read)
            SELECT id, 'two@example.org', 5, 10000, false FROM registrations WHERE token = 'a';
            """
        // Every migration before the one that keeps the total (the merger may renumber it).
        let isTheTotals = { (migration: Migration) in migration.sql.contains("ADD COLUMN unread") }
        let check = { (store: any PushStore) in
            let ids = try await store.registrations(matching: RegistrationFilter(), limit: 10, offset: 0).map(\.id)
            try #require(ids.count == 2)
            #expect(try await self.unread(store, ids[0]) == 7)
            #expect(try await self.unread(store, ids[1]) == 0)
            try await self.setCount(store, ids[0], "one@example.org", 0)
            try await self.setCount(store, ids[1], "one@example.org", 4)
            #expect(try await self.unread(store, ids[0]) == 5)
            #expect(try await self.unread(store, ids[1]) == 4)
        }
        switch kind {
        case .memory, .file:
            try await withTemporaryDatabasePath { path in
                let old = try Database(.file(path: path))
                // Migration 5 fills fingerprints with the store's function; the rows come after it.
                try old.defineFunction("token_fingerprint") { _ in .null }
                try old.migrate(Array(SQLitePushStore.migrations.prefix { !isTheTotals($0) }))
                try old.executeScript(rows.replacingOccurrences(of: "false", with: "0"))
                try await check(try SQLitePushStore(.file(path: path)))
            }
        case .postgresql:
            try await TestDatabase.withSchema { url in
                let old = try Connection(url)
                try old.migrate(Array(PostgreSQLPushStore.migrations.prefix { !isTheTotals($0) }))
                try old.executeScript(rows.replacingOccurrences(of: "X'", with: "'\\x"))
                try await check(
                    try await PostgreSQLPushStore.open(url: url, componentSecret: TestDatabase.componentSecret))
            }
        }
    }
}
