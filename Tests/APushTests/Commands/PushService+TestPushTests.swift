import TestSupport
import Foundation
import Sealing
import Store
import Testing
import XMPP

@testable import APush

@Suite struct PushServiceTestPushTests {
    static let account = try! JID("alice@localhost/phone")
    static let component = try! JID("apush.localhost")

    /// A registration of alice with the harness's device key.
    @discardableResult
    static func register(
        _ harness: Harness, token: String = "tok123", calls: CallsMode = .also,
        reads: Bool = true, account: String = "alice@localhost"
    ) async throws -> Registration {
        try await harness.store.register(
            RegistrationRequest(
                domain: "localhost", token: token, pushModule: "apush", account: account,
                deviceKey: harness.device.publicKey, calls: calls, wantsReads: reads),
            freshCollapseKey: Array(repeating: 3, count: 32), now: harness.clock.now)
    }

    func send(_ kind: PushService.TestKind, _ harness: Harness) async throws -> [(Registration, UpstreamOutcome)] {
        try await harness.service.sendTest(
            kind, account: Self.account, componentJID: Self.component,
            via: harness.upstreamLink)
    }

    @Test func aTestMessageNamesTheComponentAsChatAndSaysTest() async throws {
        let harness = try Harness()
        try await Self.register(harness)
        let results = try await send(.message, harness)
        #expect(results.map(\.1) == [.accepted])
        let summary = try #require(try await harness.summaries().first)
        #expect(summary["kind"] as? String == "message")
        #expect(summary["account"] as? String == "alice@localhost")
        #expect(summary["chat"] as? String == "apush.localhost")
        #expect(summary["from"] as? String == "apush.localhost")
        #expect(summary["count"] as? Int == 1)
        #expect(summary["test"] as? Bool == true)
        #expect(harness.upstream[0].kind == nil)
        #expect(harness.upstream[0].collapse != nil)
    }

    @Test(arguments: [(PushService.TestKind.call, "voip", "call"), (.read, "read", "read"), (.wake, "wake", "wake")])
    func eachKindGoesAsItsOwnPush(kind: PushService.TestKind, apushKind: String, summaryKind: String) async throws {
        let harness = try Harness()
        try await Self.register(harness)
        _ = try await send(kind, harness)
        try #require(harness.upstream.count == 1)
        #expect(harness.upstream[0].kind == apushKind)
        #expect(harness.upstream[0].collapse == nil)
        let summary = try #require(try await harness.summaries().first)
        #expect(summary["kind"] as? String == summaryKind)
        #expect(summary["test"] as? Bool == true)
        #expect(summary["chat"] as? String == (kind == .wake ? nil : "apush.localhost"))
    }

    @Test func aTestBypassesThePolicy() async throws {
        let harness = try Harness()
        try await Self.register(harness)
        try await harness.service.store.setPolicy(
            account: "alice@localhost",
            json: #"{"messages":false,"calls":false,"wakes":false,"quietHours":"00:00-23:59"}"#)
        for kind in PushService.TestKind.allCases {
            _ = try await send(kind, harness)
        }
        #expect(harness.upstream.map(\.kind) == [nil, "voip", "read", "wake"])
    }

    @Test func testWakesAreNotRateLimited() async throws {
        let harness = try Harness()
        try await Self.register(harness)
        _ = try await send(.wake, harness)
        _ = try await send(.wake, harness)
        #expect(harness.upstream.map(\.kind) == ["wake", "wake"])
    }

    @Test func testMessagesAreNotCoalesced() async throws {
        let harness = try Harness()
        try await Self.register(harness)
        _ = try await send(.message, harness)
        _ = try await send(.message, harness)
        #expect(harness.upstream.count == 2)
    }

    @Test func onlyTheAccountsRegistrationsThatTakeTheKindGetIt() async throws {
        let harness = try Harness()
        try await Self.register(harness, token: "messages", calls: .none, reads: false)
        try await Self.register(harness, token: "voip", calls: .only)
        try await Self.register(harness, token: "both", calls: .also, reads: true)
        try await Self.register(harness, token: "bob", account: "bob@localhost")

        func nodes(_ kind: PushService.TestKind) async throws -> Set<String> {
            let before = harness.upstream.count
            let results = try await send(kind, harness)
            let sent = Set(harness.upstream.dropFirst(before).compactMap(\.node))
            #expect(Set(results.map(\.0.token)) == sent)
            return sent
        }
        #expect(try await nodes(.message) == ["messages", "both"])
        #expect(try await nodes(.call) == ["voip", "both"])
        #expect(try await nodes(.read) == ["both"])
        #expect(try await nodes(.wake) == ["messages", "both"])
    }

    @Test func withNoRegistrationTakingTheKindNothingIsSent() async throws {
        let harness = try Harness()
        try await Self.register(harness, calls: .none)
        #expect(try await send(.call, harness).isEmpty)
        #expect(harness.upstream.isEmpty)
    }

    @Test func aDeadTokenFoundByATestIsRemoved() async throws {
        let harness = try Harness()
        let registration = try await Self.register(harness)
        harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
        #expect(try await send(.message, harness).map(\.1) == [.deadToken])
        #expect(try await harness.store.registration(id: registration.id) == nil)
    }
}
