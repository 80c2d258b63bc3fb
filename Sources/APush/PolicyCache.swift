/// Resolved policies by account (the defaults under ""). A resolution that read the store before a
/// change must not be kept after it, or the change would never apply: the generation tells.
///
/// At most `capacity` accounts are kept: one entry per account ever pushed to would grow with the
/// store. Past it a new entry takes the place of any other account's, never the defaults' (a miss only
/// costs a resolution again).
struct PolicyCache: Sendable {
    static let capacity = 4096

    private var entries: [String: PushPolicy] = [:]
    private(set) var generation = 0

    func policy(for key: String) -> PushPolicy? { entries[key] }

    mutating func store(_ policy: PushPolicy, for key: String, resolvedAt generation: Int) {
        guard generation == self.generation else { return }
        if entries[key] == nil, entries.count >= Self.capacity, let any = entries.keys.first(where: { !$0.isEmpty }) {
            entries[any] = nil
        }
        entries[key] = policy
    }

    mutating func invalidate() {
        entries.removeAll()
        generation += 1
    }
}
