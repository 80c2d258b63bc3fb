import Testing

@testable import Store

extension PushStoreTests {
    @Suite struct Calls {}
}

extension PushStoreTests.Calls {
    @Test(arguments: [[], ["audio"], ["audio", "video"]])
    func takeCallReturnsTheRememberedCallOnce(media: [String]) async throws {
        try await withStore(.file) { store in
            let id = try await registered(store).id
            let call = PendingCall(
                registrationID: id, sid: "sid-1", chat: "bob@example.org",
                caller: "bob@example.org/phone", media: media, at: 1_000)
            try await store.rememberCall(call)
            #expect(try await store.takeCall(registrationID: id, sid: "sid-1", chat: nil) == call)
            #expect(try await store.takeCall(registrationID: id, sid: "sid-1", chat: nil) == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func callsAreFoundOnlyByTheirRegistrationAndSid(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let one = try await registered(store, token: "one").id
            let two = try await registered(store, token: "two").id
            try await store.rememberCall(
                PendingCall(
                    registrationID: one, sid: "s", chat: "c", caller: "c",
                    media: ["audio"], at: 1_000))
            #expect(try await store.takeCall(registrationID: two, sid: "s", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: one, sid: "other", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: one, sid: "s", chat: nil) != nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aCallTakenForAnotherChatStaysForItsOwn(kind: StoreKind) async throws {
        try await withStore(kind) { store in
            let id = try await registered(store).id
            try await store.rememberCall(
                PendingCall(
                    registrationID: id, sid: "s", chat: "bob@example.org",
                    caller: "bob@example.org/phone", media: ["audio"], at: 1_000))
            #expect(try await store.takeCall(registrationID: id, sid: "s", chat: "mallory@example.org") == nil)
            #expect(
                try await store.takeCall(registrationID: id, sid: "s", chat: "bob@example.org")?.chat
                    == "bob@example.org")
            #expect(try await store.takeCall(registrationID: id, sid: "s", chat: "bob@example.org") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pushedCallsPastTheCapForgetTheOldest(kind: StoreKind) async throws {
        try await withStore(kind, limits: changedLimits { $0.callsPerRegistration = 2 }) { store async throws in
            let id = try await registered(store).id
            for index in 0..<3 {
                try await store.rememberCall(
                    PendingCall(
                        registrationID: id, sid: "s\(index)", chat: "c", caller: "c",
                        media: [], at: Timestamp(index)))
            }
            #expect(try await store.takeCall(registrationID: id, sid: "s0", chat: nil) == nil)
            #expect(try await store.takeCall(registrationID: id, sid: "s1", chat: nil) != nil)
            #expect(try await store.takeCall(registrationID: id, sid: "s2", chat: nil) != nil)
        }
    }
}
