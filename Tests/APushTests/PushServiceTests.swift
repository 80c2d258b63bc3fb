import Foundation
import Logging
import Sealing
import SQLite
@testable import Store
import Testing
import XMPPTesting
import XMLStream
import XMPP
@testable import APush

@Suite struct PushServiceTests {
    static let body = "secret body text"
    static let gone = StanzaError(.itemNotFound, type: .cancel)

    @Test func aMessageBecomesOneSealedPushWithoutItsText() async throws {
        let harness = try Harness()
        let options = harness.options(pushModule: "anotherimIOSprod")
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1", body: Self.body), options: options) == nil)

        let pushes = harness.upstream
        try #require(pushes.count == 1)
        let push = pushes[0]
        #expect(push.node == "tok123")
        #expect(push.pushModule == "anotherimIOSprod")
        #expect(push.kind == nil)
        #expect(push.iq[attribute: "to"] == Harness.appServer)
        let json = try push.summary(with: harness.device)
        #expect(json == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost","count":1,"id":"s-m1","ts":1764430000}"#)
        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        #expect(registration.account == "alice@localhost")
        #expect(push.collapse
            == (try CollapseKey(bytes: registration.collapseKey).tag(account: "alice@localhost", chat: "bob@localhost")))
        #expect(!json.contains(Self.body))
        #expect(!push.iq.serialized().contains(Self.body))
        let stored = try await harness.store.chats(registrationID: registration.id)
        #expect(!"\(stored)".contains(Self.body))
    }

    @Test func theEnvelopeIsPaddedToABucket() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        let envelope = try #require(harness.upstream.first?.envelope)
        let plaintext = try Envelope.open(envelope, privateKey: harness.device.privateKey)
        #expect(plaintext.count % 128 == 0)
        #expect(try IndependentOpener.open(envelope, privateKey: harness.device.privateKey) == plaintext)
    }

    @Test func aStockPublishIsAMessageForAnUnknownAccount() async throws {
        let harness = try Harness()
        let xml = Fixture.stockMessage.replacingOccurrences(of: Stanzas.fixtureKey,
                                                            with: Base64.encode(harness.device.publicKey))
        #expect(try await harness.publish(xml) == nil)
        let summary = try #require(try harness.summaries().first)
        #expect(summary["account"] as? String == "")
        #expect(summary["chat"] as? String == "bob@localhost")
        #expect(summary["from"] as? String == "bob@localhost")
        #expect(summary["count"] as? Int == 1)
        #expect(!harness.upstream[0].iq.serialized().contains("New Message!"))
    }

    @Test func aCallsOnlyRegistrationGetsTheCallAndNothingElse() async throws {
        let harness = try Harness()
        let options = harness.options(calls: "only", read: "1")
        try await harness.publishBridged(Stanzas.chat(id: "m1"), options: options)
        try await harness.publishBridged(Stanzas.propose(sid: "s1", media: ["audio", "video"]), options: options)
        try await harness.publishBridged(Stanzas.displayedCarbon(), options: options)
        try await harness.publishBridged(Stanzas.presence(), options: options)
        try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
        harness.clock.advance(seconds: 30)
        try await harness.processDueWork()

        try #require(harness.upstream.count == 1)
        let push = harness.upstream[0]
        #expect(push.kind == "voip")
        #expect(push.collapse == nil)
        #expect(try push.summary(with: harness.device)
            == #"{"v":2,"kind":"call","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost/laptop","call":{"sid":"s1","media":["audio","video"]},"ts":1764430000}"#)
    }

    @Test func withoutApushCallsAPushedCallRetractedBecomesAMissedCallMessage() async throws {
        let harness = try Harness()
        let options = harness.options(calls: nil)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
        #expect(harness.upstream.isEmpty)
        harness.clock.advance(seconds: 20)
        try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)

        try #require(harness.upstream.count == 1)
        let push = harness.upstream[0]
        #expect(push.kind == nil)
        #expect(push.collapse != nil)
        #expect(try push.summary(with: harness.device)
            == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost","count":1,"missed":true,"call":{"sid":"s1","media":["audio"]},"ts":1764430020}"#)
    }

    @Test(arguments: ["accept", "proceed", "reject"])
    func aCallAnsweredElsewhereIsNoMissedCall(_ action: String) async throws {
        let harness = try Harness()
        let options = harness.options(calls: "1")
        try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
        try await harness.publishBridged(Stanzas.jingle(action, sid: "s1", from: "alice@localhost/desktop"),
                                         options: options)
        try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
        #expect(harness.upstream.map(\.kind) == ["voip"])
    }

    @Test func aStrangersRetractOrAnswerLeavesThePushedCallToItsCaller() async throws {
        let harness = try Harness()
        let options = harness.options(calls: nil)
        try await harness.publishBridged(Stanzas.propose(sid: "s1"), options: options)
        for forged in [Stanzas.jingle("retract", sid: "s1", from: "mallory@localhost/x"),
                       Stanzas.jingle("accept", sid: "s1", from: "mallory@localhost/x"),
                       Stanzas.jingle("reject", sid: "s1", from: "bob@localhost/laptop")] {
            try await harness.publishBridged(forged, options: options)
        }
        // At most a wake: no missed call.
        #expect(harness.upstream.allSatisfy { $0.kind == "wake" })
        // The caller's own retract still makes the missed call.
        try await harness.publishBridged(Stanzas.jingle("retract", sid: "s1"), options: options)
        let missed = try harness.summaries().filter { $0["missed"] as? Bool == true }
        try #require(missed.count == 1)
        #expect(missed[0]["chat"] as? String == "bob@localhost")
    }

    @Test(arguments: EventClassifierSenderTests.forgedReads)
    func aStrangerCannotReadForTheAccount(_ forged: String) async throws {
        let harness = try Harness()
        for id in ["m1", "m2", "m3"] {
            try await harness.publishBridged(Stanzas.chat(id: id))
        }
        harness.clock.advance(seconds: 1)
        try await harness.publishBridged(forged)
        harness.clock.advance(seconds: 20)
        try await harness.processDueWork()
        // No read push (a wake at most), the held push still went with the whole count, and the
        // count goes on.
        #expect(harness.upstream.allSatisfy { $0.kind == nil || $0.kind == "wake" })
        #expect(try harness.summaries().compactMap { $0["count"] as? Int } == [1, 3])
        try await harness.publishBridged(Stanzas.chat(id: "m4"))
        harness.clock.advance(seconds: 20)
        try await harness.processDueWork()
        #expect(try harness.summaries().compactMap { $0["count"] as? Int } == [1, 3, 4])
    }

    /// A room whose JID once made the classifier's query path invalid and stopped the process (the
    /// room itself speaking, or an occupant).
    @Test(arguments: ["\u{0301}crew@muc.localhost/Zoë", "crew@muc.localhost\u{0D4E}", "crew@muc.localhost\u{0D4E}/Zoë"])
    func aGroupchatFromAHostileRoomIsPushedUnderTheRoom(from: String) async throws {
        let harness = try Harness()
        let room = String(from.unicodeScalars.prefix { $0 != "/" })
        let message = "<message xmlns='jabber:client' type='groupchat' id='g1' from='\(from)' to='alice@localhost'>"
            + "<body>hi</body><stanza-id xmlns='urn:xmpp:sid:0' id='archived' by='\(room)'/></message>"
        #expect(try await harness.publishBridged(message) == nil)
        let summary = try #require(try harness.summaries().first)
        #expect(summary["chat"] as? String == room)
        #expect(summary["id"] as? String == "archived")
    }

    @Test func theSameMessageTwiceIsPushedOnce() async throws {
        let harness = try Harness()
        for _ in 0..<2 {
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            harness.clock.advance(seconds: 11)
            try await harness.processDueWork()
        }
        #expect(harness.upstream.count == 1)
        #expect(harness.service.statistics.sinceStart["deduplicated"] == 1)
    }

    @Test func theSameCallTwiceRingsOnce() async throws {
        let harness = try Harness()
        let key = Base64.encode(harness.device.publicKey)
        for xml in [Fixture.bridgeCall, Fixture.bridgeCallAgain] {
            #expect(try await harness.publish(xml.replacingOccurrences(of: Stanzas.fixtureKey, with: key)) == nil)
        }
        #expect(harness.upstream.map(\.kind) == ["voip"])
    }

    @Test func aReadCancelsTheHeldPushAndGoesOnlyToRegistrationsThatAskedForReads() async throws {
        let harness = try Harness()
        let wantsReads = harness.options(read: "1")
        let noReads = harness.options(read: nil)
        for id in ["m1", "m2", "m3"] {
            try await harness.publishBridged(Stanzas.chat(id: id), node: "tokA", options: wantsReads)
            try await harness.publishBridged(Stanzas.chat(id: id), node: "tokB", options: noReads)
        }
        #expect(harness.upstream.count == 2)
        harness.clock.advance(seconds: 1)
        try await harness.publishBridged(Stanzas.displayedCarbon(), node: "tokA", options: wantsReads)
        try await harness.publishBridged(Stanzas.displayedCarbon(), node: "tokB", options: noReads)
        harness.clock.advance(seconds: 20)
        try await harness.processDueWork()

        let pushes = harness.upstream
        #expect(pushes.map(\.node) == ["tokA", "tokB", "tokA"])
        let read = try #require(pushes.last)
        #expect(read.kind == "read")
        #expect(read.collapse == nil)
        #expect(try read.summary(with: harness.device)
            == #"{"v":2,"kind":"read","account":"alice@localhost","chat":"bob@localhost","ts":1764430001}"#)

        // The count restarted: the next message is count 1.
        try await harness.publishBridged(Stanzas.chat(id: "m4"), node: "tokA", options: wantsReads)
        #expect(try harness.summaries().last?["count"] as? Int == 1)
    }

    @Test func aDeadTokenIsRemovedBuriedAndAnsweredCancelUntilEnabledAgain() async throws {
        let harness = try Harness()
        harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == Self.gone)
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)
        #expect(try await harness.store.isBuried(token: "tok123", pushModule: "apush", account: nil, since: 0))

        harness.clock.advance(seconds: 60)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m2")) == Self.gone)
        #expect(harness.upstream.count == 1)
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)

        // The same token for another module is a different registration.
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m3"), options: harness.options(pushModule: "other")) == nil)
        #expect(harness.upstream.count == 2)

        // After a day the tombstone no longer answers.
        harness.clock.advance(seconds: 86_400)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m4")) == nil)
    }

    /// §3.1: a `cancel` other than `item-not-found` or `gone` is the App Server refusing us (a sender it
    /// does not allow, a bug of its own), not a dead token. Every registration stays, the server's
    /// publish is answered `wait`, the push is retried, counted, and logged as an error once a minute.
    @Test(arguments: [RecordingSender.Answer.error(type: "cancel", condition: "forbidden"),
                      .error(type: "cancel", condition: "not-allowed"),
                      .error(type: "cancel", condition: "not-authorized"),
                      .error(type: "cancel", condition: "service-unavailable"),
                      .error(type: "cancel", condition: "internal-server-error"),
                      .errorWithoutCondition])
    func anAppServerThatRefusesUsWipesNoRegistration(_ refusal: RecordingSender.Answer) async throws {
        let harness = try Harness()
        let condition = if case .error(_, let condition) = refusal { condition } else { "undefined-condition" }
        let wait = StanzaError(.remoteServerTimeout, type: .wait)
        harness.sender.answerAll(refusal)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == wait)
        #expect(try await harness.publishBridged(Stanzas.propose(sid: "s1")) == wait)

        let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123",
                                                                             account: "alice@localhost"))
        #expect(registration.lastError == "cancel/\(condition)")
        #expect(!(try await harness.store.isBuried(token: "tok123", pushModule: "apush", account: "alice@localhost", since: 0)))
        #expect(try await harness.store.nextRetry() == ManualClock.start + 2000)
        var counts = harness.service.statistics.sinceStart
        #expect(counts["pushes.message.refused"] == 1)
        #expect(counts["pushes.call.refused"] == 1)
        #expect(counts["upstream.refused.\(condition)"] == 2)
        #expect(counts["pushes.message.dead-token"] == nil)
        #expect(counts["answers.wait"] == 2)
        let errors = { harness.logs.events.filter { $0.level == .error }.count }
        #expect(errors() == 1, "one error a minute per condition, not one per push")

        // A minute on: the message is refused again (logged again); the call could no longer ring.
        harness.clock.advance(seconds: 60)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 3)
        #expect(errors() == 2)
        counts = harness.service.statistics.sinceStart
        #expect(counts["pushes.call.expired"] == 1)
        #expect(counts["upstream.refused.\(condition)"] == 3)

        // The App Server is put right: the message goes out, and the registration was never touched.
        harness.sender.answerAll(.result)
        harness.clock.advance(seconds: 4)
        try await harness.processDueWork()
        #expect(harness.upstream.count == 4)
        #expect(try await harness.store.nextRetry() == nil)
        #expect(try await harness.store.registration(domain: "localhost", token: "tok123")?.id == registration.id)
    }

    @Test func anUnknownNodeIsAnsweredCancelUpToTheHourlyCapThenWait() async throws {
        var settings = APushSettings()
        settings.unknownNodeCancelsPerHour = 2
        let harness = try Harness(settings: settings)
        let publish = Stanzas.publish(node: "lost", notification: "", options: nil)
        #expect(try await harness.publish(publish) == Self.gone)
        #expect(try await harness.publish(publish) == Self.gone)
        #expect(try await harness.publish(publish) == StanzaError(.resourceConstraint, type: .wait))
        harness.clock.advance(seconds: 3601)
        #expect(try await harness.publish(publish) == Self.gone)
        #expect(harness.upstream.isEmpty)
    }

    @Test func aKnownNodeWithoutOptionsUsesTheStoredRegistration() async throws {
        let harness = try Harness()
        try await harness.bridge(Stanzas.registered(options: harness.options()))
        let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: nil)
        #expect(try await harness.publish(publish) == nil)
        #expect(try harness.summaries().first?["kind"] as? String == "message")
    }

    @Test(arguments: [
        Stanzas.publish(notification: "", options: Stanzas.Options(key: "AAAA")),
        Stanzas.publish(notification: "", options: Stanzas.Options(pushModule: "", key: Stanzas.fixtureKey)),
        "<iq type='set' from='localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'><publish/></pubsub></iq>",
    ])
    func aMalformedPublishIsABadRequest(_ xml: String) async throws {
        let harness = try Harness()
        let error = try await harness.publish(xml)
        #expect(error?.condition == .badRequest)
        #expect(error?.type == .modify)
        #expect(harness.upstream.isEmpty)
    }

    @Test func aPublishFromAnotherDomainIsForbidden() async throws {
        let harness = try Harness()
        let error = try await harness.publish(Stanzas.publish(from: "evil.example", notification: "",
                                                              options: harness.options()))
        #expect(error?.condition == .forbidden)
        #expect(try await harness.store.registration(domain: "evil.example", token: "tok123") == nil)
    }

    @Test func pastTheInFlightCapThePublishIsAnsweredWait() async throws {
        var settings = APushSettings()
        settings.maxInFlight = 1
        let harness = try Harness(settings: settings)
        harness.sender.script(.held)
        let first = Task { try await harness.publishBridged(Stanzas.chat(id: "m1")) }
        try await harness.sender.waitForRequests(1)
        #expect(harness.service.publishesInFlight == 1)
        // Another chat, so it would push now: past the cap it is stored for retry, not sent.
        let second = try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/pc"))
        #expect(second == StanzaError(.resourceConstraint, type: .wait))
        #expect(harness.sender.requests.count == 1)
        #expect(try await harness.store.nextRetry() != nil, "the push waits in the store, since the server never retries")
        harness.sender.release()
        #expect(try await first.value == nil)
        #expect(harness.service.publishesInFlight == 0)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m3", from: "dave@localhost/pc")) == nil)
    }

    @Test func wakesAreRateLimited() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.presence())
        harness.clock.advance(seconds: 59)
        #expect(try await harness.publishBridged(Stanzas.presence()) == nil)
        #expect(harness.upstream.count == 1)
        harness.clock.advance(seconds: 1)
        try await harness.publishBridged(Stanzas.presence())
        #expect(harness.upstream.map(\.kind) == ["wake", "wake"])
        #expect(try harness.upstream[0].summary(with: harness.device)
            == #"{"v":2,"kind":"wake","account":"alice@localhost","ts":1764430000}"#)
    }

    @Test func twoConcurrentWakesForOneRegistrationSendOne() async throws {
        let harness = try Harness()
        try await harness.publishBridged(Stanzas.chat(id: "m1"))
        // Both publishes read the registration before either recorded its wake.
        let snapshot = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
        let wake = ClassifiedPublish(account: "alice@localhost", event: .wake)
        let first = try await harness.service.decide(wake, for: snapshot, at: harness.clock.now)
        let second = try await harness.service.decide(wake, for: snapshot, at: harness.clock.now)
        #expect(first.map(\.kind) == [.wake])
        #expect(second.isEmpty)
    }

    @Test func aPolicyReadBeforeAChangeIsNotCachedAfterIt() {
        var cache = PolicyCache()
        let generation = cache.generation
        // A publish began reading the old policy; the account saved a new one meanwhile.
        cache.invalidate()
        var stale = PushPolicy()
        stale.messages = false
        cache.store(stale, for: "alice@localhost", resolvedAt: generation)
        #expect(cache.policy(for: "alice@localhost") == nil)
        cache.store(PushPolicy(), for: "alice@localhost", resolvedAt: cache.generation)
        #expect(cache.policy(for: "alice@localhost") == PushPolicy())
    }

    @Test func noLogLineNamesATokenAKeyOrAMessage() async throws {
        let harness = try Harness()
        let token = "tokSECRET123"
        harness.sender.script(.error(type: "wait", condition: "resource-constraint"),
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
        try await harness.publish(Stanzas.publish(node: token, notification: "",
                                                  options: Stanzas.Options(key: "bad" + Self.body)))
        try await harness.bridge(Stanzas.unregistered(token: token))

        let text = harness.logs.text
        #expect(harness.logs.events.count >= 5)
        #expect(text.contains(Fingerprint.of(token)))
        for secret in [token, Base64.encode(harness.device.publicKey), Self.body] {
            #expect(!text.contains(secret), "\(secret) is logged")
        }
    }

    // MARK: Accounts that share a token (PROTOCOL.md §2.1)

    static let alice = "alice@localhost"
    static let bob = "bob@localhost"

    /// Carol writes to Alice and to Bob, two accounts of one app on one device.
    private func carolWritesToBoth(_ harness: Harness, id: String) async throws -> [StanzaError?] {
        [try await harness.publishBridged(Stanzas.chat(id: "a-\(id)", from: "carol@localhost/x", to: Self.alice)),
         try await harness.publishBridged(Stanzas.chat(id: "b-\(id)", from: "carol@localhost/x", to: Self.bob),
                                          account: Self.bob)]
    }

    private func registration(_ harness: Harness, _ account: String) async throws -> Registration? {
        try await harness.store.registration(domain: "localhost", token: "tok123", account: account)
    }

    @Test func accountsSharingATokenKeepTheirOwnWindowsCountsAndCollapseKeys() async throws {
        let harness = try Harness()
        #expect(try await carolWritesToBoth(harness, id: "1") == [nil, nil])
        let summaries = try harness.summaries()
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
        try await harness.service.retire(try #require(try await registration(harness, Self.alice)), at: harness.clock.now)
        harness.clock.advance(seconds: 60)
        #expect(try await carolWritesToBoth(harness, id: "2") == [Self.gone, nil])
        #expect(harness.upstream.count == 3)
        #expect(try await registration(harness, Self.bob) != nil)
    }

    @Test func aDeadTokenIsDeadForEveryAccount() async throws {
        let harness = try Harness()
        _ = try await carolWritesToBoth(harness, id: "1")
        harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
        harness.clock.advance(seconds: 60)
        #expect(try await carolWritesToBoth(harness, id: "2") == [Self.gone, Self.gone])
        #expect(harness.upstream.count == 3)
        #expect(try await harness.store.countRegistrations(matching: RegistrationFilter()) == 0)
    }

    @Test func aRetryPastTheStoresLimitIsDroppedAndCounted() async throws {
        var limits = StoreLimits()
        limits.retriesPerRegistration = 1
        let harness = try Harness(store: SQLitePushStore(.memory, limits: limits))
        harness.sender.answerAll(.error(type: "wait", condition: "resource-constraint"))
        let wait = StanzaError(.remoteServerTimeout, type: .wait)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1", from: "bob@localhost/x")) == wait)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/x")) == wait)
        #expect(try await harness.store.claimDueRetries(at: ManualClock.start + 60_000, limit: 10,
                                                        leaseUntil: ManualClock.start + 90_000).count == 1)
        #expect(harness.service.statistics.sinceStart["pushes.message.retry-cap"] == 1)
    }

    /// SQLITE_READONLY here; SQLITE_FULL takes the same path (SQLitePushStoreTests.Faults).
    @Test func aStoreThatCannotWriteIsAnsweredWaitAndRecovers() async throws {
        let harness = try Harness()
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil)
        try await harness.store.run { database in try database.executeScript("PRAGMA query_only = 1") }
        harness.clock.advance(seconds: 60)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m2")) == StanzaError(.resourceConstraint, type: .wait))
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
            #expect(try await harness.publishBridged(Stanzas.chat(id: id)) == StanzaError(.resourceConstraint, type: .wait))
        }
        let logged = harness.logs.events.filter { $0.level == .error }.map(\.message)
        #expect(logged.count == 1 && logged.allSatisfy { $0.contains("readonly") }, "\(logged)")
        #expect(!harness.logs.text.contains("tok123"), "never a token")
        try mount.setReadOnly(false)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m4")) == nil)
        #expect(harness.upstream.count == 1)
    }

    @Test func aNewRegistrationPastTheStoresLimitIsAnsweredWait() async throws {
        let harness = try Harness(store: SQLitePushStore(.memory, limits: StoreLimits(registrations: 1)))
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m2"), node: "tok456")
            == StanzaError(.resourceConstraint, type: .wait))
        #expect(harness.upstream.count == 1)
        #expect(try await harness.publishBridged(Stanzas.chat(id: "m3")) == nil)
    }

}
