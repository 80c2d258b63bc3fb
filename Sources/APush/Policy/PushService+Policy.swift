import Foundation
import Store
import Synchronization

extension PushService {
    /// The operator's defaults (config, then those stored through admin-policy), then the account's own.
    func policy(for account: String?) async throws -> PushPolicy {
        try await transaction { try self.policy(for: account, in: $0) }
    }

    /// `policy(for:)` within a transaction, as a publish resolves it. Kept in memory once resolved
    /// (decoding it cost more than a store round trip, on every event) for as long as the store's policy
    /// generation says no policy changed, here or in another instance sharing the store; when it has
    /// moved on, only the entries of the accounts it changed are forgotten.
    func policy(for account: String?, in transaction: any PushTransaction) throws -> PushPolicy {
        let key = account ?? ""
        let generation = try transaction.policyGeneration()
        if let kept = policies.withLock({ $0.generation }), kept < generation {
            let changed = try transaction.accountsWithPolicyChanged(after: kept, through: generation)
            policies.withLock { $0.advance(from: kept, to: generation, forgetting: changed) }
        }
        if let known = policies.withLock({ $0.policy(for: key, at: generation) }) { return known }
        let resolved = try resolvePolicy(for: account, in: transaction)
        policies.withLock { $0.store(resolved, for: key, resolvedAt: generation) }
        return resolved
    }

    private func resolvePolicy(for account: String?, in transaction: any PushTransaction) throws -> PushPolicy {
        var document = try Self.dictionary(settings.defaults.json)
        if let stored = try transaction.policy(account: nil) {
            document.merge(try Self.dictionary(stored)) { $1 }
        }
        if let account, let own = try transaction.policy(account: account) {
            document.merge(try Self.dictionary(own)) { $1 }
        }
        let data = try JSONSerialization.data(withJSONObject: document)
        return try JSONDecoder().decode(PushPolicy.self, from: data)
    }

    private static func dictionary(_ json: String) throws -> [String: Any] {
        (try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]) ?? [:]
    }

    /// The policy's window, kept within the operator's bounds.
    func windowMilliseconds(_ policy: PushPolicy) -> Timestamp {
        Timestamp(min(max(policy.coalesceSeconds, settings.coalesceMinSeconds), settings.coalesceMaxSeconds)) * 1000
    }
}
