import Sealing
import Store
import Synchronization
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush
@testable import XMPP

@Suite struct PushServiceBridgeTests {
    @Test func theCapturedRegisteredCreatesARegistrationForTheAccount() async throws {
        let harness = try Harness()
        try await harness.bridge(Fixture.bridgeRegistered)
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(registration.account == "alice@localhost")
        #expect(registration.pushModule == "apush")
        #expect(registration.calls == .also)
        #expect(registration.wantsReads)
        #expect(registration.deviceKey == Base64.decode(Stanzas.fixtureKey))
        #expect(registration.collapseKey.count == 32)
    }

    @Test(.enabled(if: ScratchMount.isAvailable, "needs root to mount a small tmpfs"))
    func aReportWhileTheStoreCannotBeOpenedIsAnsweredWait() async throws {
        let mount = try ScratchMount(megabytes: 4)
        defer { mount.remove() }
        let harness = try Harness(store: SQLitePushStore.unavailable(on: mount))
        let error = await #expect(throws: StanzaError.self) { try await harness.bridge(Fixture.bridgeRegistered) }
        #expect(error == StanzaError(.resourceConstraint, type: .wait, text: error?.text))
        try mount.setReadOnly(false)
        try await harness.bridge(Fixture.bridgeRegistered)
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123") != nil)
    }

    @Test func aRegistrationWithoutAFormIsRefusedEchoedAndNotStored() async throws {
        let harness = try Harness()
        let xml =
            "<message from='localhost' to='apush.localhost' id='r'><registered xmlns='urn:xmpp:apush:bridge:0' "
            + "account='alice@localhost'><enable xmlns='urn:xmpp:push:0' jid='apush.localhost' node='tok123'/>"
            + "</registered></message>"
        let error = await #expect(throws: StanzaError.self) { try await harness.bridge(xml) }
        #expect(error?.condition == .notAcceptable && error?.type == .modify)
        #expect(error?.payload?.name == "registered")
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)
    }

    @Test func registeredLiftsATombstone() async throws {
        let harness = try Harness()
        try await harness.store.buryDeadToken("tok123", pushModule: "apush", at: ManualClock.start)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == StanzaError(.itemNotFound, type: .cancel))
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        #expect(!(try await harness.store.isBuried(token: "tok123", pushModule: "apush", account: nil, since: 0)))
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m2")) == nil)
        #expect(harness.upstream.count == 1)
    }

    @Test func registeredAgainWithANewKeyRenewsTheCollapseKey() async throws {
        let harness = try Harness()
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        let first = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        let same = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(same.collapseKey == first.collapseKey)
        let other = Stanzas.Options(key: Base64.encode(KeyPair.generate().publicKey))
        try await harness.bridge(Stanzas.registered(options: other))
        let renewed = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(renewed.collapseKey != first.collapseKey)
        #expect(renewed.id == first.id)
    }

    @Test func theCapturedUnregisteredRemovesThatNode() async throws {
        let harness = try Harness()
        try await harness.bridge(Stanzas.registered(token: "tokR", options: harness.options()))
        try await harness.bridge(Stanzas.registered(token: "tokKeep", options: harness.options()))
        try await harness.bridge(Fixture.bridgeUnregistered)
        #expect(try await harness.store.registration(domain: "localhost", token: "tokR") == nil)
        #expect(try await harness.store.registration(domain: "localhost", token: "tokKeep") != nil)
    }

    @Test func unregisteredWithoutANodeRemovesEveryRegistrationOfTheAccount() async throws {
        let harness = try Harness()
        for token in ["t1", "t2"] {
            try await harness.bridge(Stanzas.registered(token: token, options: harness.options()))
        }
        try await harness.bridge(Stanzas.registered(token: "t3", account: "bob@localhost", options: harness.options()))
        try await harness.bridge(Stanzas.unregistered(token: nil))
        #expect(try await harness.store.registration(domain: "localhost", token: "t1") == nil)
        #expect(try await harness.store.registration(domain: "localhost", token: "t2") == nil)
        #expect(try await harness.store.registration(domain: "localhost", token: "t3") != nil)
    }

    @Test func unregisteredOfAnotherAccountLeavesTheNodeAlone() async throws {
        let harness = try Harness()
        try await harness.bridge(Stanzas.registered(token: "t1", options: harness.options()))
        try await harness.bridge(Stanzas.unregistered(token: "t1", account: "mallory@localhost"))
        #expect(try await harness.store.registration(domain: "localhost", token: "t1") != nil)
    }

    @Test(arguments: ["evil.example", "alice@localhost", "localhost/bridge"])
    func aBridgeStanzaFromAnythingButAServedDomainIsForbidden(_ from: String) async throws {
        let harness = try Harness()
        let error = await #expect(throws: StanzaError.self) {
            try await harness.bridge(Stanzas.registered(from: from, options: harness.options()))
        }
        #expect(error?.condition == .forbidden)
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)
    }

    @Test(arguments: [
        "<message from='localhost' type='normal'><registered xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'/></message>",
        "<message from='localhost' type='normal'><registered xmlns='urn:xmpp:apush:bridge:0'><enable xmlns='urn:xmpp:push:0' node='t'><x xmlns='jabber:x:data' type='submit'/></enable></registered></message>",
        "<message from='localhost' type='normal'><unregistered xmlns='urn:xmpp:apush:bridge:0'/></message>",
    ])
    func anIncompleteBridgeStanzaIsABadRequest(_ xml: String) async throws {
        let harness = try Harness()
        let error = await #expect(throws: StanzaError.self) { try await harness.bridge(xml) }
        #expect(error?.condition == .badRequest)
    }

    @Test func registeredWithBadOptionsIsNotAcceptableNamingTheField() async throws {
        let harness = try Harness()
        let error = await #expect(throws: StanzaError.self) {
            try await harness.bridge(Stanzas.registered(options: Stanzas.Options(key: "short")))
        }
        #expect(error?.condition == .notAcceptable)
        #expect(error?.text?.contains("apushEncryptionPublicKey") == true)
    }

    @Test func registeredLiftsOnlyTheAccountsOwnRemoval() async throws {
        let harness = try Harness()
        for account in ["alice@localhost", "bob@localhost"] {
            try await harness.bridge(Stanzas.registered(account: account, options: harness.options()))
            let registration = try #require(
                try await harness.store.registration(
                    domain: "localhost", token: "tok123",
                    account: account))
            try await harness.service.store.retire(registrationID: registration.id, at: harness.clock.now)
        }
        try await harness.bridge(Stanzas.registered(account: "bob@localhost", options: harness.options()))
        #expect(
            try await harness.publishBridged(Stanzas.chat(id: "b1", to: "bob@localhost"), account: "bob@localhost")
                == nil)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "a1")) == StanzaError(.itemNotFound, type: .cancel))
    }

    @Test func registeredPastTheStoresLimitIsRefusedWithResourceConstraint() async throws {
        let harness = try Harness(store: SQLitePushStore(.memory, limits: StoreLimits(registrations: 1)))
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        await #expect(
            throws: StanzaError(.resourceConstraint, text: "registered: the store holds its limit of 1 registrations")
        ) {
            try await harness.bridge(Stanzas.registered(token: "tok456", options: harness.options()))
        }
    }

    // MARK: The account's other sessions (AccountSessions)

    private static func presence(_ resource: String, available: Bool, account: String = "alice@localhost") -> String {
        "<message from='localhost' to='apush.localhost'><presence xmlns='urn:xmpp:apush:bridge:0' "
            + "account='\(account)' resource='\(resource)' available='\(available)'/></message>"
    }

    @Test func aSessionReportedAvailableHoldsUntilItIsReportedNot() async throws {
        let harness = try Harness()
        try await harness.bridge(Self.presence("laptop", available: true))
        #expect(harness.service.accountSessions.withLock { $0.isConnectedElsewhere("alice@localhost") })
        #expect(!harness.service.accountSessions.withLock { $0.isConnectedElsewhere("bob@localhost") })
        try await harness.bridge(Self.presence("laptop", available: false))
        #expect(!harness.service.accountSessions.withLock { $0.isConnectedElsewhere("alice@localhost") })
    }

    @Test func activeRecordsTheTimeItArrived() async throws {
        let harness = try Harness()
        harness.clock.advance(seconds: 3)
        try await harness.bridge(
            "<message from='localhost'><active xmlns='urn:xmpp:apush:bridge:0' account='alice@localhost'/></message>")
        #expect(
            harness.service.accountSessions.withLock { $0.lastActivity(of: "alice@localhost") } == harness.clock.now)
    }

    /// A session that enables push is the device being pushed to: its earlier `available` no longer counts.
    @Test func aSessionThatRegistersIsNoLongerCountedAvailable() async throws {
        let harness = try Harness()
        try await harness.bridge(Self.presence("phone", available: true))
        try await harness.bridge(Self.presence("laptop", available: true))
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        #expect(harness.service.accountSessions.withLock { $0.accounts["alice@localhost"]?.available } == ["laptop"])
    }

    @Test func aMalformedSessionReportIsABadRequestAndRecordsNothing() async throws {
        let harness = try Harness()
        let error = await #expect(throws: StanzaError.self) {
            try await harness.bridge(Self.presence("laptop", available: true, account: "alice@elsewhere"))
        }
        #expect(error?.condition == .badRequest)
        #expect(harness.service.accountSessions.withLock { $0.accounts.isEmpty })
    }

    /// The server reported the laptop available, then gone, and the second report's handling came
    /// first: its turn makes it wait, so the laptop ends gone, not held available.
    @Test func anAccountsSessionReportsAreRecordedInTheOrderTheyWereRead() async throws {
        let harness = try Harness()
        var turns = StanzaTurns(limit: 8)
        let key = "bridge localhost alice@localhost"
        let (availableTurn, goneTurn) = (turns.turn(for: key), turns.turn(for: key))
        let gone = Task {
            try await StanzaTurn.$current.withValue(goneTurn) {
                try await harness.bridge(Self.presence("laptop", available: false))
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        try await StanzaTurn.$current.withValue(availableTurn) {
            try await harness.bridge(Self.presence("laptop", available: true))
        }
        try await gone.value
        #expect(!harness.service.accountSessions.withLock { $0.isConnectedElsewhere("alice@localhost") })
    }
}
