import Synchronization

/// Bounds the stanzas the link holds: at most `maxHandling` are being handled at once, at most
/// `maxWaiting` more wait their turn, and the reader is held while that line is full, so TCP pushes
/// back on the server instead of memory growing.
///
/// A handler takes the next waiting stanza itself when it is done (`next()`), so the line drains
/// without the reader.
final class StanzaGate<Stanza: Sendable>: Sendable {
    private let maxHandling: Int
    private let maxWaiting: Int
    private let state = Mutex(State())

    private struct State {
        var handling = 0
        var waiting: [Stanza] = []
        var reader: CheckedContinuation<Void, Never>?
        var readerCancelled = false
    }

    init(maxHandling: Int, maxWaiting: Int) {
        self.maxHandling = max(1, maxHandling)
        self.maxWaiting = max(1, maxWaiting)
    }

    /// Takes a stanza from the reader: true when a new handler is to start with it, false when it joined
    /// the line (a running handler takes it later).
    func admit(_ stanza: Stanza) -> Bool {
        state.withLock { state in
            guard state.handling < maxHandling else {
                state.waiting.append(stanza)
                return false
            }
            state.handling += 1
            return true
        }
    }

    /// A handler is done with its stanza: the next waiting one for it to handle, or nil when the line is
    /// empty (and the handler ends).
    func next() -> Stanza? {
        let (stanza, reader) = state.withLock { state -> (Stanza?, CheckedContinuation<Void, Never>?) in
            guard !state.waiting.isEmpty else {
                state.handling -= 1
                return (nil, nil)
            }
            let stanza = state.waiting.removeFirst()
            guard state.waiting.count < maxWaiting, let reader = state.reader else { return (stanza, nil) }
            state.reader = nil
            return (stanza, reader)
        }
        reader?.resume()
        return stanza
    }

    /// Holds the reader while the line is full (or until its task is cancelled).
    func waitForRoom() async {
        guard state.withLock({ $0.waiting.count >= maxWaiting }) else { return }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let roomNow = state.withLock { state -> Bool in
                    guard state.waiting.count >= maxWaiting, !state.readerCancelled else { return true }
                    state.reader = continuation
                    return false
                }
                if roomNow { continuation.resume() }
            }
        } onCancel: {
            let reader = state.withLock { state in
                state.readerCancelled = true
                defer { state.reader = nil }
                return state.reader
            }
            reader?.resume()
        }
    }

    /// Whether the reader is held because the line is full.
    var isHoldingReader: Bool { state.withLock { $0.reader != nil } }

    /// Stanzas being handled and waiting.
    var held: (handling: Int, waiting: Int) {
        state.withLock { ($0.handling, $0.waiting.count) }
    }
}
