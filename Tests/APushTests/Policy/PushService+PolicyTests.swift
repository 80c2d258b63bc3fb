import Store
import Synchronization
import Testing

@testable import APush

extension PushServiceTests {
    /// The account's policy, resolved and cached (PushService+Policy).
    @Suite struct Policy {
        @Test func theConfigDefaultsThenTheStoredDefaultsThenTheAccountsOwnApply() async throws {
            var settings = APushSettings()
            settings.defaults.reads = false
            settings.defaults.wakes = false
            let harness = try Harness(settings: settings)
            try await harness.service.store.setPolicy(account: nil, json: #"{"wakes":true,"calls":false}"#)
            try await harness.service.store.setPolicy(account: "alice@localhost", json: #"{"calls":true}"#)

            let alice = try await harness.service.policy(for: "alice@localhost")
            #expect(!alice.reads && alice.wakes && alice.calls)
            let bob = try await harness.service.policy(for: "bob@localhost")
            #expect(!bob.reads && bob.wakes && !bob.calls)
            #expect(try await harness.service.policy(for: nil) == bob)
        }

        @Test func aChangeAppliesToTheNextReadThoughTheOldOneWasCached() async throws {
            let harness = try Harness()
            #expect(try await harness.service.policy(for: "alice@localhost").messages)
            try await harness.service.store.setPolicy(account: "alice@localhost", json: #"{"messages":false}"#)
            #expect(try await !harness.service.policy(for: "alice@localhost").messages)
            try await harness.service.store.setPolicy(account: "alice@localhost", json: nil)
            #expect(try await harness.service.policy(for: "alice@localhost").messages)
        }

        /// Two instances on one store: the policy one of them cached is stale once the other changes it,
        /// and is resolved again before the next push (no instance is told but through the store).
        @Test func aChangeThroughAnotherInstanceAppliesToTheNextRead() async throws {
            let this = try Harness()
            let other = try Harness(store: this.store)
            #expect(try await this.service.policy(for: "alice@localhost").messages)
            #expect(try await this.service.policy(for: nil).messages)
            try await other.service.store.setPolicy(account: "alice@localhost", json: #"{"messages":false}"#)
            #expect(try await !this.service.policy(for: "alice@localhost").messages)
            try await other.service.store.setPolicy(account: nil, json: #"{"messages":false}"#)
            #expect(try await !this.service.policy(for: "bob@localhost").messages)
        }

        /// Issue 20, item 13: a change of one account's policy, by any instance, makes the others forget
        /// that account's entry only; every other account's resolved policy stays cached. A change of the
        /// defaults, which every account's policy starts from, forgets them all.
        @Test func aChangeOfOneAccountsPolicyForgetsOnlyThatAccountsEntryOnEveryInstance() async throws {
            let this = try Harness()
            let other = try Harness(store: this.store)
            for account in ["alice@localhost", "bob@localhost", "carol@localhost"] {
                _ = try await this.service.policy(for: account)
            }
            try await other.service.store.setPolicy(account: "alice@localhost", json: #"{"messages":false}"#)
            #expect(try await !this.service.policy(for: "alice@localhost").messages)
            let generation = try await this.store.transaction { try $0.policyGeneration() }
            let kept = this.service.policies.withLock { cache in
                ["bob@localhost", "carol@localhost"].filter { cache.policy(for: $0, at: generation) != nil }
            }
            #expect(kept == ["bob@localhost", "carol@localhost"], "another account's policy was forgotten")

            try await other.service.store.setPolicy(account: nil, json: #"{"wakes":false}"#)
            #expect(try await !this.service.policy(for: "alice@localhost").wakes)
            let now = try await this.store.transaction { try $0.policyGeneration() }
            #expect(this.service.policies.withLock { $0.policy(for: "bob@localhost", at: now) } == nil)
        }

        @Test(arguments: [(1, 5), (5, 5), (30, 30), (600, 60)])
        func theWindowIsKeptWithinTheOperatorsBounds(seconds: Int, kept: Timestamp) throws {
            var settings = APushSettings()
            settings.coalesceMinSeconds = 5
            settings.coalesceMaxSeconds = 60
            let harness = try Harness(settings: settings)
            var policy = PushPolicy()
            policy.coalesceSeconds = seconds
            #expect(harness.service.windowMilliseconds(policy) == kept * 1000)
        }
    }
}
