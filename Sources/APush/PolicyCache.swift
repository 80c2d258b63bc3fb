/// Resolved policies by account (the defaults under ""). A resolution that read the store before a
/// change must not be kept after it, or the change would never apply: the generation tells.
struct PolicyCache: Sendable {
    private var entries: [String: PushPolicy] = [:]
    private(set) var generation = 0

    func policy(for key: String) -> PushPolicy? { entries[key] }

    mutating func store(_ policy: PushPolicy, for key: String, resolvedAt generation: Int) {
        guard generation == self.generation else { return }
        entries[key] = policy
    }

    mutating func invalidate() {
        entries.removeAll()
        generation += 1
    }
}
