import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Maintenance {}
}

extension PushStoreTests.Maintenance {
    @Test(arguments: StoreKind.allCases)
    func quietChatsAreForgottenButOpenWindowsAndHeldNoticesAreKept(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let registration = try await registered(store)
            let id = registration.id
            try await store.updateChat(registrationID: id, chat: "quiet@example.org") { state in
                state = ChatState(registrationID: id, chat: "quiet@example.org", count: 3, lastMessageAt: 1_000)
            }
            try await store.updateChat(registrationID: id, chat: "recent@example.org") { state in
                state = ChatState(registrationID: id, chat: "recent@example.org", count: 1, lastMessageAt: 9_000)
            }
            try await openWindow(store, registrationID: id, chat: "open@example.org", windowEnd: 2_000)
            try await store.updateChat(registrationID: id, chat: "held@example.org") { state in
                state = ChatState(
                    registrationID: id, chat: "held@example.org", count: 2, lastMessageAt: 1_000,
                    held: HeldNotice(
                        from: "h@example.org", id: nil, groupchat: false, mention: false,
                        at: 1_000))
            }
            try await store.prune(
                tombstonesBefore: 0, sightingsBefore: 0, callsBefore: 0, unknownAnswersBefore: 0,
                quietChatsBefore: 5_000)
            let left = try await store.chats(registrationID: id).map(\.chat)
            #expect(left == ["held@example.org", "open@example.org", "recent@example.org"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneForgetsTombstonesOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            try await store.buryDeadToken("old", pushModule: "fcm", at: 1_000)
            try await store.buryDeadToken("young", pushModule: "fcm", at: 3_000)
            try await store.prune(
                tombstonesBefore: 2_000, sightingsBefore: 0, callsBefore: 0, unknownAnswersBefore: 0,
                quietChatsBefore: 0)
            #expect(try await !store.isBuried(token: "old", pushModule: "fcm", account: nil, since: 0))
            #expect(try await store.isBuried(token: "young", pushModule: "fcm", account: nil, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneForgetsSightingsOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            _ = try await store.firstSighting(registrationID: id, key: "old", at: 1_000, since: 0)
            _ = try await store.firstSighting(registrationID: id, key: "young", at: 3_000, since: 0)
            try await store.prune(
                tombstonesBefore: 0, sightingsBefore: 2_000, callsBefore: 0, unknownAnswersBefore: 0,
                quietChatsBefore: 0)
            #expect(try await store.firstSighting(registrationID: id, key: "old", at: 4_000, since: 0))
            #expect(try await !store.firstSighting(registrationID: id, key: "young", at: 4_000, since: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneForgetsCallsOlderThanTheCutoff(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            for (sid, at) in [("old", Timestamp(1_000)), ("young", 3_000)] {
                try await store.rememberCall(
                    PendingCall(
                        registrationID: id, sid: sid, chat: "c", caller: "c",
                        media: ["audio"], at: at))
            }
            try await store.prune(
                tombstonesBefore: 0, sightingsBefore: 0, callsBefore: 2_000, unknownAnswersBefore: 0,
                quietChatsBefore: 0)
            #expect(try await store.takeCall(registrationID: id, sid: "old", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: id, sid: "young", chat: nil)?.at == 3_000)
        }
    }
}
