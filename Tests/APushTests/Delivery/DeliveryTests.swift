import Foundation
import Logging
import Sealing
import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush
@testable import Store

extension PushServiceTests {
    /// Seal, publish upstream, record the answer, retry (Delivery).
    @Suite struct Delivery {
        @Test func aMessageBecomesOneSealedPushWithoutItsText() async throws {
            let harness = try Harness()
            let options = harness.options(pushModule: "anotherimIOSprod")
            #expect(
                try await harness.publishBridged(Stanzas.chat(id: "m1", body: PushServiceTests.body), options: options)
                    == nil)

            let pushes = harness.upstream
            try #require(pushes.count == 1)
            let push = pushes[0]
            #expect(push.node == "tok123")
            #expect(push.pushModule == "anotherimIOSprod")
            #expect(push.kind == nil)
            #expect(push.iq[attribute: "to"] == Harness.appServer)
            let json = try await push.summary(with: harness.device)
            #expect(
                json
                    == #"{"v":2,"kind":"message","account":"alice@localhost","chat":"bob@localhost","from":"bob@localhost","count":1,"badge":1,"id":"s-m1","ts":1764430000}"#
            )
            let registration = try #require(try await harness.store.registration(domain: "localhost", token: "tok123"))
            #expect(registration.account == "alice@localhost")
            #expect(
                push.collapse
                    == (try CollapseKey(bytes: registration.collapseKey).tag(
                        account: "alice@localhost", chat: "bob@localhost")))
            #expect(!json.contains(PushServiceTests.body))
            #expect(!push.iq.serialized().contains(PushServiceTests.body))
            let stored = try await harness.store.chats(registrationID: registration.id)
            #expect(!"\(stored)".contains(PushServiceTests.body))
        }

        @Test func theEnvelopeIsPaddedToABucket() async throws {
            let harness = try Harness()
            try await harness.publishBridged(Stanzas.chat(id: "m1"))
            let envelope = try #require(harness.upstream.first?.envelope)
            let plaintext = try Envelope.open(envelope, privateKey: harness.device.privateKey)
            #expect(plaintext.count % 128 == 0)
            #expect(try await IndependentOpener.open(envelope, privateKey: harness.device.privateKey) == plaintext)
        }

        /// docs/wire-contract.md, answers: a `cancel` other than `item-not-found` or `gone` is the App Server refusing us (a sender it
        /// does not allow, a bug of its own), not a dead token. Every registration stays, the server's
        /// publish is answered `wait`, the push is retried, counted, and logged as an error once a minute.
        @Test(arguments: [
            RecordingSender.Answer.error(type: "cancel", condition: "forbidden"),
            .error(type: "cancel", condition: "not-allowed"),
            .error(type: "cancel", condition: "not-authorized"),
            .error(type: "cancel", condition: "service-unavailable"),
            .error(type: "cancel", condition: "internal-server-error"),
            .errorWithoutCondition,
        ])
        func anAppServerThatRefusesUsWipesNoRegistration(_ refusal: RecordingSender.Answer) async throws {
            let harness = try Harness()
            let condition = if case .error(_, let condition) = refusal { condition } else { "undefined-condition" }
            let wait = StanzaError(.remoteServerTimeout, type: .wait)
            harness.sender.answerAll(refusal)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m1")) == wait)
            #expect(try await harness.publishBridged(Stanzas.propose(sid: "s1")) == wait)

            let registration = try #require(
                try await harness.store.registration(
                    domain: "localhost", token: "tok123",
                    account: "alice@localhost"))
            #expect(registration.lastError == "cancel/\(condition)")
            #expect(
                !(try await harness.store.isBuried(
                    token: "tok123", pushModule: "apush", account: "alice@localhost", since: 0)))
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

        @Test func pastTheInFlightCapThePublishIsAnsweredWait() async throws {
            var settings = APushSettings()
            settings.maxInFlight = 1
            let harness = try Harness(settings: settings)
            harness.sender.script(.held)
            let first = Task { try await harness.publishBridged(Stanzas.chat(id: "m1")) }
            try await harness.sender.waitForRequests(1)
            #expect(harness.service.delivery.publishesInFlight == 1)
            // Another chat, so it would push now: past the cap it is stored for retry, not sent.
            let second = try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/pc"))
            #expect(second == StanzaError(.resourceConstraint, type: .wait))
            #expect(harness.sender.requests.count == 1)
            #expect(
                try await harness.store.nextRetry() != nil,
                "the push waits in the store, since the server never retries")
            harness.sender.release()
            #expect(try await first.value == nil)
            #expect(harness.service.delivery.publishesInFlight == 0)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m3", from: "dave@localhost/pc")) == nil)
        }

        @Test func aRetryPastTheStoresLimitIsDroppedAndCounted() async throws {
            var limits = StoreLimits()
            limits.retriesPerRegistration = 1
            let harness = try Harness(store: SQLitePushStore(.memory, limits: limits))
            harness.sender.answerAll(.error(type: "wait", condition: "resource-constraint"))
            let wait = StanzaError(.remoteServerTimeout, type: .wait)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m1", from: "bob@localhost/x")) == wait)
            #expect(try await harness.publishBridged(Stanzas.chat(id: "m2", from: "carol@localhost/x")) == wait)
            #expect(
                try await harness.store.claimDueRetries(
                    at: ManualClock.start + 60_000, limit: 10,
                    leaseUntil: ManualClock.start + 90_000
                ).count == 1)
            #expect(harness.service.statistics.sinceStart["pushes.message.retry-cap"] == 1)
        }
    }
}
