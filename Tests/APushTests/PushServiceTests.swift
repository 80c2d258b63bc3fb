import Foundation
import Logging
import SQLite
import Sealing
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush
@testable import Store

@Suite struct PushServiceTests {
    static let body = "secret body text"
    static let gone = StanzaError(.itemNotFound, type: .cancel)

    @Test func noLogLineNamesATokenAKeyOrAMessage() async throws {
        let harness = try Harness()
        let token = "tokSECRET123"
        harness.sender.script(
            .error(type: "wait", condition: "resource-constraint"),
            .error(type: "modify", condition: "bad-request"),
            .error(type: "cancel", condition: "item-not-found"))
        try await harness.bridge(Stanzas.registered(token: token, options: harness.options()))
        try await harness.publishBridged(Stanzas.chat(id: "m1", body: Self.body), node: token)
        harness.clock.advance(seconds: 2)
        try await harness.processDueWork()
        harness.clock.advance(seconds: 11)
        try await harness.publishBridged(Stanzas.chat(id: "m2", body: Self.body), node: token)
        try await harness.publishBridged(Stanzas.chat(id: "m3", body: Self.body), node: token)
        try await harness.publish(Stanzas.publish(node: token, notification: "", options: nil))
        try await harness.publish(
            Stanzas.publish(
                node: token, notification: "",
                options: Stanzas.Options(key: "bad" + Self.body)))
        try await harness.bridge(Stanzas.unregistered(token: token))

        let text = harness.logs.text
        #expect(harness.logs.events.count >= 5)
        #expect(text.contains(Fingerprint.of(token)))
        for secret in [token, Base64.encode(harness.device.publicKey), Self.body] {
            #expect(!text.contains(secret), "\(secret) is logged")
        }
    }

    /// SQLITE_READONLY here; SQLITE_FULL takes the same path (SQLitePushStoreTests.Faults).
    /// A transaction that rolls back counts nothing (its work did not happen), and one that commits
    /// counts once, though its body ran on the store's thread.
    @Test func aTransactionCountsOnlyWhatItCommits() async throws {
        let service = try Harness().service
        struct Failed: Error {}
        await #expect(throws: Failed.self) {
            try await service.transaction { _ in
                service.statistics.count(.deduplicated)
                throw Failed()
            }
        }
        #expect(service.statistics.sinceStart.isEmpty)
        try await service.transaction { _ in service.statistics.count(.deduplicated) }
        #expect(service.statistics.sinceStart == ["deduplicated": 1])
    }

    @Test func aStoreThatCannotWriteIsAnsweredWaitAndRecovers() async throws {
        let harness = try Harness()
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil)
        try await harness.store.run { database in try database.executeScript("PRAGMA query_only = 1") }
        harness.clock.advance(seconds: 60)
        #expect(
            try await harness.publishBridged(Stanzas.chat(id: "m2")) == StanzaError(.resourceConstraint, type: .wait))
        try await harness.store.run { database in try database.executeScript("PRAGMA query_only = 0") }
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m3")) == nil)
        #expect(harness.upstream.count == 2)
    }

    /// A store the disk would not let open at start: every publish is answered `wait`, the fault is
    /// logged once (not once a publish), and the store opens by itself once the disk is writable.
    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aStoreThatCannotBeOpenedAnswersEveryPublishWaitAndOpensWhenItCan() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        let harness = try Harness(store: SQLitePushStore.unavailable(on: mount))
        for id in ["m1", "m2", "m3"] {
            #expect(
                try await harness.publishBridged(Stanzas.chat(id: id)) == StanzaError(.resourceConstraint, type: .wait))
        }
        let logged = harness.logs.events.filter { $0.level == .error }.map(\.message)
        #expect(logged.count == 1 && logged.allSatisfy { $0.contains("readonly") }, "\(logged)")
        #expect(!harness.logs.text.contains("tok123"), "never a token")
        try mount.setReadOnly(false)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m4")) == nil)
        #expect(harness.upstream.count == 1)
    }

    /// A push is sealed while the store commits what decided it, but sent only once that commit is
    /// done: one that fails (the disk full when the log is written) sends nothing, and the server is
    /// answered `wait`.
    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aPushWhoseCommitFailsIsNotSent() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        let path = mount.directory.appendingPathComponent("apush.sqlite").path
        let harness = try Harness(store: SQLitePushStore(.file(path: path), reopenInterval: .zero))
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil)
        try mount.fill()
        #expect(
            try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/x"))
                == StanzaError(.resourceConstraint, type: .wait))
        #expect(harness.upstream.count == 1)
        mount.emptyFiller()
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m3", from: "carol@localhost/x")) == nil)
        #expect(harness.upstream.count == 2)
    }

    /// Accounts that share a token (docs/wire-contract.md, Publishes).
    @Suite struct SharedToken {
        static let alice = "alice@localhost"
        static let bob = "bob@localhost"

        /// Carol writes to Alice and to Bob, two accounts of one app on one device.
        private func carolWritesToBoth(_ harness: Harness, id: String) async throws -> [StanzaError?] {
            [
                try await harness.publishBridged(
                    Stanzas.chat(id: "a-\(id)", from: "carol@localhost/x", to: Self.alice)),
                try await harness.publishBridged(
                    Stanzas.chat(id: "b-\(id)", from: "carol@localhost/x", to: Self.bob),
                    account: Self.bob),
            ]
        }

        private func registration(_ harness: Harness, _ account: String) async throws -> Registration? {
            try await harness.store.registration(domain: "localhost", token: "tok123", account: account)
        }

        @Test func accountsSharingATokenKeepTheirOwnWindowsCountsAndCollapseKeys() async throws {
            let harness = try Harness()
            #expect(try await carolWritesToBoth(harness, id: "1") == [nil, nil])
            let summaries = try await harness.summaries()
            #expect(summaries.map { $0["account"] as? String } == [Self.alice, Self.bob])
            #expect(summaries.map { $0["count"] as? Int } == [1, 1])
            let alice = try #require(try await registration(harness, Self.alice))
            let bob = try #require(try await registration(harness, Self.bob))
            #expect(alice.id != bob.id)
            #expect(alice.collapseKey != bob.collapseKey)
        }

        @Test func oneAccountsRemovalLeavesTheOtherAccountsPushes() async throws {
            let harness = try Harness()
            _ = try await carolWritesToBoth(harness, id: "1")
            try await harness.service.store.retire(
                registrationID: try #require(try await registration(harness, Self.alice)).id, at: harness.clock.now)
            harness.clock.advance(seconds: 60)
            #expect(try await carolWritesToBoth(harness, id: "2") == [PushServiceTests.gone, nil])
            #expect(harness.upstream.count == 3)
            #expect(try await registration(harness, Self.bob) != nil)
        }

        @Test func aDeadTokenIsDeadForEveryAccount() async throws {
            let harness = try Harness()
            _ = try await carolWritesToBoth(harness, id: "1")
            harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
            harness.clock.advance(seconds: 60)
            #expect(try await carolWritesToBoth(harness, id: "2") == [PushServiceTests.gone, PushServiceTests.gone])
            #expect(harness.upstream.count == 3)
            #expect(try await harness.store.countRegistrations(matching: RegistrationFilter()) == 0)
        }
    }
}
