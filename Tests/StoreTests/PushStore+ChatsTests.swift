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
