import ComponentHost
import Foundation
import Logging
import SQLite
import Sealing
import Synchronization
import Testing
import XMLStream
import XMPP
import LocalServers
import TestSupport

@testable import APush
@testable import Store

@Suite struct APushModuleTests {
    static func configuration(
        _ json: String, appServer: String? = "push.example.org", environment extra: [String: String] = [:]
    ) throws -> Configuration {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "apush-\(UInt64.random(in: 0...UInt64.max)).json"
        ).path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(json.utf8)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var environment = [
            "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "s",
            "APUSH_DOMAINS": "localhost",
        ]
        environment["APUSH_APP_SERVER"] = appServer
        environment.merge(extra) { $1 }
        return try Configuration.load(file: path, environment: environment, schema: .apushComponent)
    }

    static func module(store: any PushStore, clock: ManualClock) throws -> APushModule {
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        return try APushModule(store: store, settings: settings, logger: .disabled, clock: clock.pushClock)
    }

    static func context(_ sender: RecordingSender, linkIsUp: @escaping @Sendable () -> Bool = { true }) throws
        -> ModuleContext
    {
        ModuleContext(
            componentJID: try JID("apush.localhost"), servedDomains: ["localhost"], admins: [],
            sender: sender, logger: .disabled, linkIsUp: linkIsUp)
    }

    /// Registers a device and publishes two messages of one chat: the first is pushed, the second held.
    static func publishTwoMessages(to module: APushModule, context: ModuleContext) async throws -> KeyPair {
        let device = KeyPair.generate()
        let options = Stanzas.Options(key: Base64.encode(device.publicKey))
        for id in ["m1", "m2"] {
            let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: id)), options: options)
            _ = try await module.iqRoutes[0].handler(try Element.parse(publish), context)
        }
        return device
    }

    @Test func readsThePushSectionAndTheAppServer() throws {
        let settings = try APushModule.settings(from: Self.configuration(#"{"push": {"coalesceSeconds": 4}}"#))
        #expect(settings.coalesceSeconds == 4)
        #expect(settings.appServer == "push.example.org")
    }

    /// Issue 22 item 5: the operator's defaults say whether muted chats count in the badge.
    @Test func theDefaultPolicySaysWhetherMutedChatsCountInTheBadge() throws {
        let settings = try APushModule.settings(
            from: Self.configuration(#"{"push": {"defaults": {"badgeMuted": true}}}"#))
        #expect(settings.defaults.badgeMuted)
        #expect(try !APushModule.settings(from: Self.configuration("{}")).defaults.badgeMuted)
    }

    @Test func withoutAPushSectionTheDefaultsApply() throws {
        let settings = try APushModule.settings(from: Self.configuration("{}"))
        var expected = APushSettings()
        expected.appServer = "push.example.org"
        #expect(settings == expected)
    }

    @Test func aBadValueNamesItsKeyPath() throws {
        let configuration = try Self.configuration(#"{"push": {"coalesceSeconds": 99999}}"#)
        let error = #expect(throws: ConfigurationError.self) { try APushModule.settings(from: configuration) }
        #expect(error?.key == "push.coalesceSeconds")
    }

    @Test(arguments: [
        (
            #"{"push": {"defaults": {"graceSeconds": 601}}}"#, "push.defaults.graceSeconds",
            "must be from 0 (off) to 600"
        ),
        (#"{"push": {"defaults": {"graceSeconds": -5}}}"#, "push.defaults.graceSeconds", "must be from 0 (off) to 600"),
    ])
    func aBadGraceDefaultNamesItsKeyAndReason(json: String, key: String, reason: String) throws {
        let configuration = try Self.configuration(json)
        let error = #expect(throws: ConfigurationError.self) { try APushModule.settings(from: configuration) }
        #expect(error?.key == key)
        #expect(error?.reason.contains(reason) == true)
    }

    @Test func theGraceDefaultsAreRead() throws {
        let configuration = try Self.configuration(
            #"{"push": {"defaults": {"graceSeconds": 30, "graceWhen": "connected", "graceMentions": false}}}"#)
        let defaults = try APushModule.settings(from: configuration).defaults
        #expect(defaults.graceSeconds == 30)
        #expect(defaults.graceWhen == .connected)
        #expect(!defaults.graceMentions)
    }

    @Test(arguments: [
        (#"{"push": []}"#, "push", "must be an object"),
        (#"{"appServer": 5}"#, "appServer", "must be a string"),
        (#"{"appServer": ""}"#, "appServer", "must not be empty"),
        (#"{"appServer": "bad@@jid"}"#, "appServer", "'bad@@jid' is not a valid JID"),
    ])
    func aBadSectionOrAppServerNamesItsKey(json: String, key: String, reason: String) throws {
        let configuration = try Self.configuration(json, appServer: nil)
        #expect(throws: ConfigurationError(key: key, reason: reason)) { try APushModule.settings(from: configuration) }
    }

    @Test func theAppServerComesFromTheFileOrTheEnvironment() throws {
        let fromFile = try Self.configuration(#"{"appServer": "file.example.org"}"#, appServer: nil)
        #expect(try APushModule.settings(from: fromFile).appServer == "file.example.org")
        let overridden = try Self.configuration(#"{"appServer": "file.example.org"}"#, appServer: "env.example.org")
        #expect(try APushModule.settings(from: overridden).appServer == "env.example.org")
    }

    @Test func theAppServerIsRequired() throws {
        let configuration = try Self.configuration("{}", appServer: nil)
        let error = #expect(throws: ConfigurationError.self) { try APushModule.settings(from: configuration) }
        #expect(error?.key == "appServer")
        #expect(throws: ConfigurationError.self) {
            try APushModule(store: SQLitePushStore(.memory), settings: APushSettings(), logger: .disabled)
        }
    }

    @Test func declaresAPushServiceAndItsRoutes() throws {
        let module = try Self.module(store: SQLitePushStore(.memory), clock: ManualClock())
        #expect(module.discoIdentities.map(\.category) == ["pubsub"])
        #expect(module.discoIdentities.map(\.type) == ["push"])
        #expect(module.discoFeatures == ["urn:xmpp:push:0", "urn:xmpp:apush:bridge:0"])
        #expect(module.iqRoutes.map(\.name) == ["pubsub"])
        #expect(module.iqRoutes.map(\.kind) == [.set])
        #expect(module.iqRoutes.map(\.namespace) == ["http://jabber.org/protocol/pubsub"])
        #expect(module.messageRoutes.map(\.namespace) == ["urn:xmpp:apush:bridge:0"])
    }

    @Test func theRoutesRegisterAndPublishThroughTheHostsSender() async throws {
        let store = try SQLitePushStore(.memory)
        let module = try Self.module(store: store, clock: ManualClock())
        let sender = RecordingSender()
        let context = try Self.context(sender)
        let device = KeyPair.generate()
        let options = Stanzas.Options(key: Base64.encode(device.publicKey))
        try await module.messageRoutes[0].handler(try Element.parse(Stanzas.registered(options: options)), context)
        #expect(try await store.registration(domain: "localhost", token: "tok123")?.account == "alice@localhost")

        let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: nil)
        let payload = try await module.iqRoutes[0].handler(try Element.parse(publish), context)
        #expect(payload == nil)
        let upstream = try #require(sender.requests.first.map(UpstreamPublish.init))
        #expect(upstream.iq[attribute: "to"] == "push.example.org")
        #expect(upstream.iq[attribute: "from"] == "apush.localhost")
        #expect(try await upstream.summaryObject(with: device)["kind"] as? String == "message")
    }

    /// A module on `store` with one chat's window ended on its clock: the first message was pushed, the
    /// second is held for the background work to send.
    static func windowCameDue(on store: any PushStore) async throws -> (
        module: APushModule, clock: ManualClock, sender: RecordingSender, context: ModuleContext, device: KeyPair
    ) {
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let sender = RecordingSender()
        let context = try Self.context(sender)
        let device = try await Self.publishTwoMessages(to: module, context: context)
        #expect(sender.requests.count == 1)
        clock.advance(seconds: 10)
        return (module, clock, sender, context, device)
    }

    @Test func itsBackgroundWorkSendsAWindowThatCameDue() async throws {
        let (module, _, sender, context, device) = try await Self.windowCameDue(on: try SQLitePushStore(.memory))
        let background = Task { try await module.run(context: context) }
        try await sender.waitForRequests(2)
        background.cancel()
        _ = await background.result
        let counts = try await sender.requests.map(UpstreamPublish.init).summaries(with: device).map {
            $0["count"] as? Int
        }
        #expect(counts == [1, 2])
    }
}

extension APushModuleTests {
    /// Two instances on one PostgreSQL database. One takes a burst and dies before its window ends
    /// (its loop never runs); the other, asleep until its next chore, hears of the window through the
    /// store and sends the held push when the window ends on its clock.
    @Test func aWindowAnotherInstanceOpenedWakesTheLoopAtItsEnd() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        let clock = ManualClock()
        // Each instance's clock is the database's as measured when it is made, and this hand-moved
        // clock stands still between their measurements while the database's runs on: the instances
        // are made one right after the other, so that they agree to the millisecond.
        let stores = [
            try await PushStoreSetting.open(database.url, limits: StoreLimits(), componentSecret: testComponentSecret)
                .store,
            try await PushStoreSetting.open(database.url, limits: StoreLimits(), componentSecret: testComponentSecret)
                .store,
        ]
        let (survivor, other) = (
            try Self.module(store: stores[0], clock: clock), try Self.module(store: stores[1], clock: clock)
        )
        let survivorSender = RecordingSender()
        let background = Task { try await survivor.run(context: try Self.context(survivorSender)) }
        try await clock.waitForSleepers()

        let otherSender = RecordingSender()
        let device = try await Self.publishTwoMessages(to: other, context: try Self.context(otherSender))
        #expect(otherSender.requests.count == 1)
        // Word of the window reaches the survivor, which plans to wake at its end, not at its next chore.
        try await waitUntil("the survivor sleeps until the window's end", timeout: .seconds(60)) {
            (survivor.service.dueWork.plannedWakeTime ?? .max) <= survivor.service.now() + 11_000
        }
        // Past the window's end (by a second: the instances' measurements were not at the same
        // millisecond), well before the survivor's next chore.
        clock.advance(seconds: 11)
        try await survivorSender.waitForRequests(1)
        background.cancel()
        _ = await background.result
        await database.stop()
        let counts = try await survivorSender.requests.map(UpstreamPublish.init).summaries(with: device).map {
            $0["count"] as? Int
        }
        #expect(counts == [2])
    }

    /// A standby (another instance holds the link, on a store they share) must neither send a due window
    /// nor claim it and fail it as a retry: it leaves it to the active instance, and sends it itself
    /// once its own link is up.
    @Test func whileTheLinkIsDownTheBackgroundWorkLeavesADueWindowAloneAndSendsItOnceUp() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let sender = RecordingSender()
        let linkUp = Mutex(true)
        let context = try Self.context(sender) { linkUp.withLock { $0 } }
        let device = try await Self.publishTwoMessages(to: module, context: context)
        #expect(sender.requests.count == 1)
        linkUp.withLock { $0 = false }
        clock.advance(seconds: 10)
        let background = Task { try await module.run(context: context) }
        try await waitUntil("the loop sleeps, its link down", timeout: .seconds(60)) {
            module.service.dueWork.plannedWakeTime != nil
        }
        #expect(sender.requests.count == 1)
        #expect(try await store.dueWindows(at: clock.now, limit: 10).count == 1, "the window is still held")
        #expect(try await store.nextRetry() == nil, "nothing was claimed or queued")
        linkUp.withLock { $0 = true }
        clock.advance(seconds: 1)
        try await sender.waitForRequests(2)
        background.cancel()
        _ = await background.result
        let counts = try await sender.requests.map(UpstreamPublish.init).summaries(with: device).map {
            $0["count"] as? Int
        }
        #expect(counts == [1, 2])
    }
}

extension APushModuleTests {
    /// A store that fails every turn (a full disk under a due window, which therefore never sleeps) is
    /// logged once a minute on the module's clock, not once a turn: a long fault writes a bounded log.
    @Test func aStoreThatKeepsFailingIsLoggedOnceAMinuteNotOnceATurn() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let sender = RecordingSender()
        let sink = InMemoryLogSink()
        let context = ModuleContext(
            componentJID: try JID("apush.localhost"), servedDomains: ["localhost"],
            admins: [], sender: sender, logger: Logger(label: "test", level: .debug, sink: sink))
        _ = try await Self.publishTwoMessages(to: module, context: context)
        clock.advance(seconds: 10)  // the window is due, and the outbox it goes to cannot be written
        try await store.run { try $0.executeScript("DROP TABLE retries") }
        let failures = { sink.events.filter { $0.message.contains("stored push work failed") }.count }
        let background = Task { try await module.run(context: context) }
        // Liveness bounds (a loaded machine may be slow to run a turn), not speed.
        func waitFor(_ count: Int) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while failures() < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        }
        try await waitFor(1)
        try await Task.sleep(for: .seconds(3))  // several more turns, one after each 1 s pause
        #expect(failures() == 1)
        clock.advance(seconds: 61)
        try await waitFor(2)
        #expect(failures() == 2, "logged again a minute later")
        background.cancel()
        _ = await background.result
    }
}

extension APushModuleTests {
    /// A store that cannot answer at all (its database stopped) under a due window shows no due time:
    /// the loop tries again after its pause all the same, so the held push goes out on the first turn
    /// after the store is back, not at the next chore a minute later.
    @Test func aHeldPushGoesOutOnceTheStoreIsBackNotAtTheNextChore() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        let store = try await PushStoreSetting.open(
            database.url, limits: StoreLimits(), componentSecret: testComponentSecret
        ).store
        let (module, clock, sender, context, device) = try await Self.windowCameDue(on: store)
        await database.stop()
        let background = Task { try await module.run(context: context) }
        try await clock.waitForSleepers()  // a turn failed: the loop pauses
        clock.advance(seconds: 1)
        try await clock.waitForSleepers()
        try await database.start()
        // 20 s on the module's clock at most, well before its next chore; a liveness bound in real time.
        for _ in 0..<20 where sender.requests.count < 2 {
            clock.advance(seconds: 1)
            try await Task.sleep(for: .milliseconds(500))
        }
        background.cancel()
        _ = await background.result
        await database.stop()
        let counts = try await sender.requests.map(UpstreamPublish.init).summaries(with: device).map {
            $0["count"] as? Int
        }
        #expect(counts == [1, 2])
    }
}

extension APushModuleTests {
    /// The host sizes the link's handlers from this (ComponentService.maxStanzasInHandling).
    @Test func itsRequestsInFlightAreItsUpstreamCap() throws {
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        settings.maxInFlight = 3000
        let module = try APushModule(store: try SQLitePushStore(.memory), settings: settings, logger: .disabled)
        #expect(module.maxRequestsInFlight == 3000)
    }
}

extension APushModuleTests {
    /// The housekeeping follows the module's clock: counters reach the store once a flush interval has
    /// passed on it, and at stop.
    @Test func itsBackgroundWorkFlushesTheCountersOnItsClockAndAtStop() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let context = try Self.context(RecordingSender())
        let background = Task { try await module.run(context: context) }
        module.service.statistics.count(.testPush(.wake))
        // The loop has started, at the clock's start, once it sleeps until its next chore.
        try await waitUntil("the loop sleeps", timeout: .seconds(60)) {
            module.service.dueWork.plannedWakeTime != nil
        }
        clock.advance(seconds: 30)
        module.service.dueWork.ring()
        try await Task.sleep(for: .milliseconds(200))
        #expect(try await store.counters()["tests.wake"] == nil)

        clock.advance(seconds: 31)
        module.service.dueWork.ring()
        try? await waitUntil("the counters are flushed", timeout: .seconds(60)) {
            try await store.counters()["tests.wake"] != nil
        }
        #expect(try await store.counters()["tests.wake"] == 1)

        module.service.statistics.count(.testPush(.wake))
        background.cancel()
        _ = await background.result
        #expect(try await store.counters()["tests.wake"] == 2)
    }
}

extension APushModuleTests {
    /// A registration's publishes are ordered by their server and node, an account's bridge reports by
    /// their server and account; nothing else is.
    @Test func publishesAreOrderedByTheirServerAndNode() throws {
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        let module = try APushModule(store: try SQLitePushStore(.memory), settings: settings, logger: .disabled)
        let publish = try Element.parse(
            Stanzas.publish(node: "tok123", notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: nil))
        #expect(module.orderingKey(of: publish) == "localhost tok123")
        var get = publish
        get[attribute: "type"] = "get"
        #expect(module.orderingKey(of: get) == nil)
        #expect(
            module.orderingKey(of: try Element.parse(Stanzas.unregistered(token: "tok123")))
                == "bridge localhost alice@localhost")
        #expect(module.orderingKey(of: try Element.parse("<message from='localhost'><body>x</body></message>")) == nil)
    }
}

extension APushModuleTests {
    /// The longest registration the component takes, a 2,048-byte token for an account whose localpart
    /// has the 1,023 bytes a JID allows, registers and is pushed on PostgreSQL, whose btree entry holds
    /// 2,704 bytes: the publish is answered `result`, not `wait` with an error line.
    @Test func theLongestTokenForTheLongestAccountIsPushedOnPostgreSQL() async throws {
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let token = String((0..<RegistrationOptions.maximumTokenLength).map { _ in characters.randomElement()! })
        let account =
            String((0..<JID.maximumPartLength).map { _ in characters.randomElement()! }).lowercased() + "@localhost"
        let database = try PostgreSQLServer()
        try await database.start()
        let store = try await PushStoreSetting.open(
            database.url, limits: StoreLimits(), componentSecret: testComponentSecret
        )
        .store
        let module = try Self.module(store: store, clock: ManualClock())
        let sender = RecordingSender()
        let device = KeyPair.generate()
        let publish = Stanzas.publish(
            node: token, notification: Stanzas.bridged(Stanzas.chat(id: "m1", to: account), account: account),
            options: Stanzas.Options(key: Base64.encode(device.publicKey)))
        do {
            _ = try await module.iqRoutes[0].handler(try Element.parse(publish), try Self.context(sender))
        } catch {
            Issue.record("the publish was answered \(error)")
        }
        await database.stop()
        let summaries = try await sender.requests.map(UpstreamPublish.init).summaries(with: device)
        #expect(summaries.map { $0["chat"] as? String } == ["bob@localhost"])
    }
}

extension APushModuleTests {
    /// Two instances on one PostgreSQL whose own clocks differ by five minutes keep the times they share
    /// on the database's clock. The one ahead, whose loop runs, neither takes the other's push while its
    /// answer is awaited (its lease has not run out), nor drops it from the outbox as expired, nor ends
    /// the other's window early (which pushed the next message at once); it sends the held push once,
    /// when the window ends.
    @Test func twoInstancesWhoseClocksDifferByMinutesKeepTheDatabasesTime() async throws {
        let database = try PostgreSQLServer()
        try await database.start()
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        settings.coalesceSeconds = 3
        let skew: Timestamp = 5 * 60_000
        let ahead = PushClock(
            now: { PushClock.system.now() + skew }, sleep: { try await PushClock.system.sleep($0 - skew) })
        let aheadModule = try APushModule(
            store: try await PushStoreSetting.open(
                database.url, limits: StoreLimits(), componentSecret: testComponentSecret
            ).store, settings: settings, logger: .disabled, clock: ahead)
        let behindStore = try await PushStoreSetting.open(
            database.url, limits: StoreLimits(), componentSecret: testComponentSecret
        ).store
        let behindModule = try APushModule(store: behindStore, settings: settings, logger: .disabled)
        let aheadSender = RecordingSender()
        let background = Task { try await aheadModule.run(context: try Self.context(aheadSender)) }

        // The instance behind pushes the first message and awaits the App Server's answer; the second
        // message is held for the window the first opened.
        let behindSender = RecordingSender()
        behindSender.script(.held)
        let behindContext = try Self.context(behindSender)
        let device = KeyPair.generate()
        let options = Stanzas.Options(key: Base64.encode(device.publicKey))
        let publish: @Sendable (String) throws -> Element = { id in
            try Element.parse(Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: id)), options: options))
        }
        let burstStart = ContinuousClock.now
        let first = Task { try await behindModule.iqRoutes[0].handler(try publish("m1"), behindContext) }
        try await waitUntil("the first push is in flight", timeout: .seconds(30)) { behindSender.requests.count == 1 }
        _ = try await behindModule.iqRoutes[0].handler(try publish("m2"), behindContext)
        // Word of the push and the window reaches the loop ahead, which plans to wake at the window's end
        // (within the window's 3 s: past them, the checks below say what happened).
        try? await waitUntil("the instance ahead sleeps until the window's end", timeout: .seconds(2)) {
            (aheadModule.service.dueWork.plannedWakeTime ?? .max) <= aheadModule.service.now() + 3_000
        }
        #expect(aheadSender.requests.isEmpty, "the instance ahead sent a push in flight again, or the held one early")
        #expect(behindSender.requests.count == 1, "the window ended early: the second message was pushed at once")
        #expect(try await behindStore.nextRetry() != nil, "the push in flight left the outbox before its answer")

        behindSender.release()
        _ = try await first.value
        // Past the bound, the checks below say what happened instead.
        try? await waitUntil("the held push is sent", timeout: .seconds(20)) { !aheadSender.requests.isEmpty }
        #expect(ContinuousClock.now - burstStart >= .milliseconds(2_800), "sent at the window's end, not before")
        // Nothing is left to send: the outbox is empty and the loop ahead asleep.
        try? await waitUntil("the outbox is empty and the loop ahead asleep") {
            try await behindStore.nextRetry() == nil && aheadModule.service.dueWork.plannedWakeTime != nil
        }
        background.cancel()
        _ = await background.result
        await database.stop()
        let counts = try await aheadSender.requests.map(UpstreamPublish.init).summaries(with: device).map {
            $0["count"] as? Int
        }
        #expect(counts == [2], "the held push, once")
        #expect(behindSender.requests.count == 1)
    }
}

extension APushModuleTests {
    /// Issue 25: an answer the store could not record is tried once more when the module stops, so a
    /// store that is back by then spares the device a second push at the lease's end.
    @Test func aStopRecordsTheAnswersKeptInMemory() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let context = try Self.context(RecordingSender())
        let failRemovals = "CREATE TRIGGER full BEFORE DELETE ON retries BEGIN SELECT RAISE(ABORT, 'full'); END;"
        try await store.run { try $0.executeScript(failRemovals) }
        _ = try await Self.publishTwoMessages(to: module, context: context)
        try await waitUntil("the answer is kept unrecorded") {
            module.service.statistics.sinceStart["upstream.answers.unrecorded"] != nil
        }
        try await store.run { try $0.executeScript("DROP TRIGGER full;") }
        #expect(try await store.nextRetry() != nil, "the pushed message's item still waits for its answer")

        // Stopped before its first turn: only the stop records it.
        let background = Task { try await module.run(context: context) }
        background.cancel()
        _ = await background.result
        #expect(module.service.statistics.sinceStart["upstream.answers.recorded-late"] == 1)
        #expect(try await store.nextRetry() == nil, "recorded: not sent again when its lease ends")
    }
}

extension APushModuleTests {
    /// Issue 25: an answer the store could not record wakes the sleeping loop, which tries again after
    /// each pause until the store takes it: recorded within a second of the store's return, not at the
    /// next chore (by then its lease has ended, and another instance may have sent the push again).
    @Test func anUnrecordedAnswerIsRecordedSoonAfterTheStoreIsBackNotAtTheNextChore() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        let module = try Self.module(store: store, clock: clock)
        let context = try Self.context(RecordingSender())
        let background = Task { try await module.run(context: context) }
        try await waitUntil("the loop sleeps") { module.service.dueWork.plannedWakeTime != nil }
        let failRemovals = "CREATE TRIGGER full BEFORE DELETE ON retries BEGIN SELECT RAISE(ABORT, 'full'); END;"
        try await store.run { try $0.executeScript(failRemovals) }
        // One message: no window whose end would wake the loop anyway.
        let options = Stanzas.Options(key: Base64.encode(KeyPair.generate().publicKey))
        let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: options)
        _ = try await module.iqRoutes[0].handler(try Element.parse(publish), context)
        try await waitUntil("the answer is kept unrecorded") {
            module.service.statistics.sinceStart["upstream.answers.unrecorded"] != nil
        }
        // The loop took its turn for the push: it pauses after a failed turn, or sleeps until the push's
        // lease ends (no longer until its next chore, a minute from the start).
        let nextChore = clock.pushClock.now() + 60_000
        try await waitUntil("the loop took a turn since the publish and sleeps") {
            clock.sleepers >= 1 && (module.service.dueWork.plannedWakeTime.map { $0 < nextChore } ?? true)
        }
        try await store.run { try $0.executeScript("DROP TRIGGER full;") }
        // 5 s on the module's clock at most (before anything else would wake it: the outbox's next look,
        // 10 s on, and its next chore, a minute); a liveness bound in real time.
        for _ in 0..<5 where module.service.statistics.sinceStart["upstream.answers.recorded-late"] == nil {
            try await clock.waitForSleepers()
            clock.advance(seconds: 1)
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(module.service.statistics.sinceStart["upstream.answers.recorded-late"] == 1)
        background.cancel()
        _ = await background.result
    }
}

extension APushModuleTests {
    /// A message held for grace opens a window no push announced: the sleeping loop plans to wake at its
    /// end, not at its next chore a minute on.
    @Test func aMessageHeldForGraceWakesTheLoopAtTheGracesEnd() async throws {
        let store = try SQLitePushStore(.memory)
        let clock = ManualClock()
        var settings = APushSettings()
        settings.appServer = "push.example.org"
        settings.defaults.graceSeconds = 5
        let module = try APushModule(store: store, settings: settings, logger: .disabled, clock: clock.pushClock)
        let context = try Self.context(RecordingSender())
        let background = Task { try await module.run(context: context) }
        defer { background.cancel() }
        let start = clock.pushClock.now()
        try await waitUntil("the loop sleeps until its next chore") {
            module.service.dueWork.plannedWakeTime == start + 60_000
        }
        module.service.accountSessions.withLock { $0.activity(of: "alice@localhost", at: start) }
        let options = Stanzas.Options(key: Base64.encode(KeyPair.generate().publicKey))
        let publish = Stanzas.publish(notification: Stanzas.bridged(Stanzas.chat(id: "m1")), options: options)
        _ = try await module.iqRoutes[0].handler(try Element.parse(publish), context)
        #expect(module.service.statistics.sinceStart["coalesced.held"] == 1, "held for grace")
        try await waitUntil("the loop plans to wake at the grace's end") {
            module.service.dueWork.plannedWakeTime == start + 5_000
        }
    }

    /// What the bridge reported of the accounts' other sessions held only while the link was up: a link
    /// that drops or comes back forgets it, and pushes go as without grace (fail open).
    @Test(arguments: [false, true])
    func aLinkChangeForgetsTheAccountsOtherSessions(up: Bool) throws {
        let module = try Self.module(store: try SQLitePushStore(.memory), clock: ManualClock())
        module.service.accountSessions.withLock { sessions in
            sessions.presence(of: "alice@localhost", resource: "laptop", available: true)
            sessions.activity(of: "bob@localhost", at: ManualClock.start)
        }
        module.linkChanged(up: up)
        #expect(module.service.accountSessions.withLock { $0.accounts.isEmpty })
    }
}
