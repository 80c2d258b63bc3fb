import Dispatch
import Synchronization

/// Ephemeral X25519 keys made ahead of need, so that a seal on the push path does one scalar
/// multiplication (the shared secret) instead of two: the other (the ephemeral public key) was done
/// while the component had time to spare.
///
/// A take that leaves the pool below half full schedules one refill on a background queue; nothing
/// polls, so a full pool costs nothing. When a burst outruns the refill, a take makes its key on the
/// spot, as an unpooled seal does. Each key is handed out once and forgotten: an ephemeral key used
/// twice would reuse the AEAD key and nonce.
///
/// What it buys is latency, and throughput only while a core is idle: the multiplication still runs,
/// on another thread. A process whose every core is busy does the same work either way.
public final class EphemeralKeyPool: Sendable {
    public let capacity: Int
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "apush.ephemeral-keys", qos: .utility)

    private struct State {
        var keys: [EphemeralKey] = []
        var filling = false
    }

    public init(capacity: Int = 256) {
        self.capacity = max(1, capacity)
        state.withLock { $0.filling = true }
        queue.async { self.fill() }
    }

    /// A key no seal has used; the caller zeroizes its private half after use.
    func take() -> EphemeralKey {
        let (key, refill) = state.withLock { state in
            let key = state.keys.popLast()
            let refill = !state.filling && state.keys.count < capacity / 2
            if refill { state.filling = true }
            return (key, refill)
        }
        if refill { queue.async { self.fill() } }
        return key ?? EphemeralKey()
    }

    /// How many keys are ready now.
    public var ready: Int { state.withLock { $0.keys.count } }

    /// Returns once a refill in progress (or scheduled) is done: for tests and benchmarks.
    public func settle() { queue.sync {} }

    private func fill() {
        while true {
            let key = EphemeralKey()
            let full = state.withLock { state in
                state.keys.append(key)
                guard state.keys.count >= capacity else { return false }
                state.filling = false
                return true
            }
            if full { return }
        }
    }
}

/// One ephemeral key pair, its public half already computed.
struct EphemeralKey: Sendable {
    var privateKey: [UInt8]
    let publicKey: [UInt8]

    init() {
        privateKey = Sodium.randomBytes(KeyPair.keyLength)
        publicKey = X25519.publicKey(privateKey: privateKey)
    }
}
