import TestSupport
import Foundation
import Logging
import Sealing
import Synchronization
import Testing
import XMLStream
import XMPP

@testable import APush
@testable import XMPP
@testable import Store

extension PushServiceTests {
    /// The server's publish, answered (PushService+Intake).
    @Suite struct Intake {
        /// The server sent a message's publish, then a read's, for one registration, and the read's
        /// handling came to its decision first: its turn makes it wait for the message's, so the
        /// message is pushed and then read, instead of the read finding nothing and the message
        /// pushed after it.
        @Test func aPublishIsDecidedAfterTheOnesOfItsNodeReadBeforeIt() async throws {
            let harness = try Harness()
            let options = harness.options(read: "1")
            var turns = StanzaTurns(limit: 8)
            let (messageTurn, readTurn) = (turns.turn(for: "tok123"), turns.turn(for: "tok123"))
            let read = Task {
                try await StanzaTurn.$current.withValue(readTurn) {
                    try await harness.publishBridged(Stanzas.displayedCarbon(), options: options)
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            #expect(harness.upstream.isEmpty)
            try await StanzaTurn.$current.withValue(messageTurn) {
                try await harness.publishBridged(Stanzas.chat(id: "m1"), options: options)
            }
            #expect(try await read.value == nil)
            #expect(harness.upstream.map { $0.kind ?? "message" } == ["message", "read"])
        }

        /// A read from another device is the account's activity there, known before its policy decides
        /// (grace); a message from someone else is not.
        @Test func aReadElsewhereRecordsTheAccountsActivity() async throws {
            let harness = try Harness()
            let options = harness.options(read: "1")
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m1"), options: options) == nil)
            #expect(harness.service.accountSessions.withLock { $0.lastActivity(of: "alice@localhost") } == nil)
            harness.clock.advance(seconds: 2)
            #expect(try await harness.publishBridged(Stanzas.displayedCarbon(), options: options) == nil)
            #expect(
                harness.service.accountSessions.withLock { $0.lastActivity(of: "alice@localhost") } == harness.clock.now
            )
        }

        @Test func aStockPublishIsAMessageForAnUnknownAccount() async throws {
            let harness = try Harness()
            let xml = Fixture.stockMessage.replacingOccurrences(
                of: Stanzas.fixtureKey,
                with: Base64.encode(harness.device.publicKey))
            #expect(try await harness.publish(xml) == nil)
            let summary = try #require(try await harness.summaries().first)
            #expect(summary["account"] as? String == "")
            #expect(summary["chat"] as? String == "bob@localhost")
            #expect(summary["from"] as? String == "bob@localhost")
            #expect(summary["count"] as? Int == 1)
            #expect(!harness.upstream[0].iq.serialized().contains("New Message!"))
        }

        @Test func aDeadTokenIsRemovedBuriedAndAnsweredCancelUntilEnabledAgain() async throws {
            let harness = try Harness()
            harness.sender.script(.error(type: "cancel", condition: "item-not-found"))
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == PushServiceTests.gone)
            #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)
            #expect(try await harness.store.isBuried(token: "tok123", pushModule: "apush", account: nil, since: 0))

            harness.clock.advance(seconds: 60)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m2")) == PushServiceTests.gone)
            #expect(harness.upstream.count == 1)
            #expect(try await harness.store.registration(domain: "localhost", token: "tok123") == nil)

            // The same token for another module is a different registration.
            #expect(
                try await harness.publishBridged(Stanzas.chat(id: "m3"), options: harness.options(pushModule: "other"))
                    == nil)
            #expect(harness.upstream.count == 2)

            // After a day the tombstone no longer answers.
            harness.clock.advance(seconds: 86_400)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m4")) == nil)
        }

        @Test func anUnknownNodeIsAnsweredCancelUpToTheHourlyCapThenWait() async throws {
            var settings = APushSettings()
            settings.unknownNodeCancelsPerHour = 2
            settings.unknownNodeCancelsPerAccountPerHour = 10
            let harness = try Harness(settings: settings)
            let publish = Stanzas.publish(node: "lost", notification: "", options: nil)
            #expect(try await harness.publish(publish) == PushServiceTests.gone)
            #expect(try await harness.publish(publish) == PushServiceTests.gone)
            #expect(try await harness.publish(publish) == StanzaError(.resourceConstraint, type: .wait))
            harness.clock.advance(seconds: 3601)
            #expect(try await harness.publish(publish) == PushServiceTests.gone)
            #expect(harness.upstream.isEmpty)
        }

        /// A user who enabled push without an options form makes every publish an unknown node: that
        /// account spends its own share of the `cancel` answers, never another's, and the line saying the
        /// budget is spent is written once a minute, not once a publish.
        @Test func oneAccountsUnknownNodesLeaveTheServersCancelAnswersToOthers() async throws {
            let harness = try Harness()
            func publish(_ account: String) async throws -> StanzaError? {
                try await harness.publish(
                    Stanzas.publish(
                        node: "lost-\(account)", notification: Stanzas.bridged(Stanzas.chat(id: "m"), account: account),
                        options: nil))
            }
            var answers: [StanzaError?] = []
            for _ in 0..<60 { answers.append(try await publish("mallory@localhost")) }
            #expect(answers.filter { $0 == PushServiceTests.gone }.count == 1)
            #expect(answers.filter { $0?.type == .wait }.count == 59)
            #expect(try await publish("alice@localhost") == PushServiceTests.gone)
            let warnings = harness.logs.events.filter { $0.level == .warning && $0.message.contains("unknown node") }
            #expect(warnings.count == 1)
            harness.clock.advance(seconds: 61)
            _ = try await publish("mallory@localhost")
            #expect(
                harness.logs.events.filter { $0.level == .warning && $0.message.contains("unknown node") }.count == 2)
        }

        @Test func aKnownNodeWithoutOptionsUsesTheStoredRegistration() async throws {
            let harness = try Harness()
            try await harness.bridge(Stanzas.registered(options: harness.options()))
            let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: nil)
            #expect(try await harness.publish(publish) == nil)
            #expect(try await harness.summaries().first?["kind"] as? String == "message")
        }

        @Test(arguments: [
            Stanzas.publish(notification: "", options: Stanzas.Options(key: "AAAA")),
            Stanzas.publish(notification: "", options: Stanzas.Options(pushModule: "", key: Stanzas.fixtureKey)),
            "<iq type='set' from='localhost' to='apush.localhost' id='1'><pubsub xmlns='http://jabber.org/protocol/pubsub'><publish/></pubsub></iq>",
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
            let error = try await harness.publish(
                Stanzas.publish(
                    from: "evil.example", notification: "",
                    options: harness.options()))
            #expect(error?.condition == .forbidden)
            #expect(try await harness.store.registration(domain: "evil.example", token: "tok123") == nil)
        }

        @Test func aNewRegistrationPastTheStoresLimitIsAnsweredWait() async throws {
            let harness = try Harness(store: SQLitePushStore(.memory, limits: StoreLimits(registrations: 1)))
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == nil)
            #expect(
                try await harness.publishBridged(Stanzas.chat(id: "m2"), node: "tok456")
                    == StanzaError(.resourceConstraint, type: .wait))
            #expect(harness.upstream.count == 1)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m3")) == nil)
        }
    }
}
