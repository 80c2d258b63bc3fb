/// Resolved policies by account (the defaults under ""), valid for one policy generation of the store
/// (`PushTransaction.policyGeneration`, which every change of a stored policy counts, whichever
/// instance made it). `advance` moves the entries to a newer generation forgetting only the accounts it
/// changed (all of them when the defaults changed, or the changes are not known); a lookup at a newer
/// generation than the kept one forgets every entry; a resolution made at another generation than the
/// kept one is not kept, so a policy read before a change never outlives it.
///
/// At most `capacity` accounts are kept: one entry per account ever pushed to would grow with the
/// store. Past it a new entry takes the place of any other account's, never the defaults' (a miss only
/// costs a resolution again).
struct PolicyCache: Sendable {
    static let capacity = 4096

    private var entries: [String: PushPolicy] = [:]
    /// The generation the entries were resolved at; nil before the first lookup.
    private(set) var generation: Int64?

    /// The policy kept for `key` if it was resolved at `generation`. A newer generation forgets every
    /// entry; an older one (a transaction that began before another saw the change) finds none.
    mutating func policy(for key: String, at generation: Int64) -> PushPolicy? {
        if let kept = self.generation, generation < kept { return nil }
        if generation != self.generation {
            entries.removeAll()
            self.generation = generation
        }
        return entries[key]
    }

    /// Moves the entries resolved at `from` to `to`, forgetting those of the accounts `changed` names
    /// (every entry when it is nil or names the defaults); nothing when they are no longer at `from`
    /// (another lookup moved them first).
    mutating func advance(from: Int64, to: Int64, forgetting changed: Set<String>?) {
        guard generation == from, to > from else { return }
        if let changed, !changed.contains("") {
            for account in changed { entries[account] = nil }
        } else {
            entries.removeAll()
        }
        generation = to
    }

    mutating func store(_ policy: PushPolicy, for key: String, resolvedAt generation: Int64) {
        guard generation == self.generation else { return }
        if entries[key] == nil, entries.count >= Self.capacity, let any = entries.keys.first(where: { !$0.isEmpty }) {
            entries[any] = nil
        }
        entries[key] = policy
    }
}
