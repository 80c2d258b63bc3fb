import Dispatch
import Foundation
import Synchronization
import BlockingWork

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP socket with a reader thread feeding an async stream of byte chunks.
///
/// The reader thread reads at most `chunksAhead` chunks ahead of the consumer: a consumer that stops
/// taking chunks leaves the bytes in the kernel, so TCP pushes back on the peer instead of memory
/// filling here.
///
/// One thread per connection does blocking `read(2)`: there is no NIO here, and a component has one
/// connection. `close()` shuts the socket down, which unblocks that thread and any blocked send.
/// Writes are serialised by their own mutex (never held by `close()`, so a send blocked on a peer
/// that stopped reading cannot stop the close that wakes it) and sent with MSG_NOSIGNAL so a dead
/// peer gives EPIPE rather than killing the process.
public final class TCPConnection: Sendable {
    private let descriptor: Int32
    private let state = Mutex(State())
    private let writing = Mutex(())
    private let received = Atomic<Int>(0)
    /// One permit per chunk the reader may read ahead. It starts at zero and gets its permits in
    /// `incoming()`: libdispatch refuses to free a semaphore below its starting value.
    private let room = DispatchSemaphore(value: 0)

    private struct State {
        var closed = false
        var readerStarted = false
        /// Bytes the reader thread may still drop before it ends the stream, once told to
        /// (`discardIncoming`); nil while it passes what it reads on.
        var discardAllowance: Int?
        /// The reader thread and the sends in progress: the descriptor is released when none is left.
        var users = 0
        var descriptorReleased = false
    }

    /// Takes ownership of a connected socket, e.g. one a test listener accepted.
    package init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Connects to `host:port`, trying each resolved address in turn, on a thread of its own (an
    /// unreachable host holds it for the kernel's connect timeout).
    public static func connect(host: String, port: UInt16) async throws -> TCPConnection {
        try await BlockingWork.run { try connectBlocking(host: host, port: port) }
    }

    private static func connectBlocking(host: String, port: UInt16) throws -> TCPConnection {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw SystemError(call: "getaddrinfo(\(host))", errno: EHOSTUNREACH)
        }
        defer { freeaddrinfo(list) }
        var lastError: any Error = SystemError(call: "connect", errno: ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            do {
                let fd = try syscall("socket") {
                    socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                }
                do {
                    try syscall("connect") { Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) }
                } catch {
                    Glibc.close(fd)
                    throw error
                }
                let connection = TCPConnection(descriptor: fd)
                connection.enableKeepalive()
                return connection
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Kernel keepalive notices a peer that vanished without a FIN: 30 s idle, then 3 probes 10 s apart.
    private func enableKeepalive() {
        setOption(SOL_SOCKET, SO_KEEPALIVE, 1)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPIDLE, 30)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10)
        setOption(Int32(IPPROTO_TCP), TCP_KEEPCNT, 3)
        setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        // A peer that stops reading must not hold a writer (and a thread of the pool) forever.
        var timeout = timeval(tv_sec: Int(Self.sendTimeoutSeconds), tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// How long one send may wait for the peer to read before the connection is given up.
    static let sendTimeoutSeconds = 10

    private func setOption(_ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(descriptor, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    public func send(_ text: String) throws {
        var text = text
        try text.withUTF8 { (buffer) in try send(UnsafeRawBufferPointer(buffer)) }
    }

    public func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (buffer) in try send(buffer) }
    }

    private func send(_ buffer: UnsafeRawBufferPointer) throws {
        try state.withLock { (state) in
            if state.closed { throw SystemError(call: "send", errno: EPIPE) }
            state.users += 1
        }
        defer { finishedUsing() }
        do {
            try writing.withLock { _ in
                var offset = 0
                while offset < buffer.count {
                    let sent = try syscall("send") {
                        Glibc.send(descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                    }
                    offset += sent
                }
            }
        } catch {
            // A failed or timed-out send may have written part of a stanza: the stream is broken.
            close()
            throw error
        }
    }

    /// The bytes the peer sends, as they arrive; finishes at end of stream, throws on a read error.
    /// May be called once per connection.
    public func incoming(chunkSize: Int = 16_384) -> Incoming {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let (alreadyStarted, isOpen) = state.withLock { state in
            defer { state.readerStarted = true }
            if !state.readerStarted && !state.closed { state.users += 1 }
            return (state.readerStarted, !state.closed)
        }
        precondition(!alreadyStarted, "incoming() may be called once per connection")
        // The descriptor of a closed connection may already be released, and its number reused.
        guard isOpen else {
            continuation.finish()
            return Incoming(chunks: stream, room: room)
        }
        for _ in 0..<Self.chunksAhead { room.signal() }
        let fd = descriptor
        let thread = Thread { [self, room] in
            var buffer = [UInt8](repeating: 0, count: chunkSize)
            defer { finishedUsing() }
            while true {
                room.wait()
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, chunkSize) }
                if count > 0 {
                    received.add(count, ordering: .relaxed)
                    switch dropping(count) {
                    case nil:
                        if case .terminated = continuation.yield(Array(buffer[0..<count])) { return }
                    case true?:
                        room.signal()
                    case false?:
                        continuation.finish()
                        return
                    }
                } else if count == 0 {
                    continuation.finish()
                    return
                } else if errno != EINTR {
                    continuation.finish(throwing: SystemError(call: "read", errno: errno))
                    return
                } else {
                    room.signal()
                }
            }
        }
        thread.start()
        return Incoming(chunks: stream, room: room)
    }

    /// The chunks read from the socket; taking one lets the reader thread read another.
    public struct Incoming: AsyncSequence, Sendable {
        public typealias Element = [UInt8]
        fileprivate let chunks: AsyncThrowingStream<[UInt8], any Error>
        fileprivate let room: DispatchSemaphore

        public func makeAsyncIterator() -> Iterator {
            Iterator(chunks: chunks.makeAsyncIterator(), room: room)
        }

        public struct Iterator: AsyncIteratorProtocol {
            fileprivate var chunks: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
            fileprivate let room: DispatchSemaphore

            public mutating func next() async throws -> [UInt8]? {
                let chunk = try await chunks.next()
                if chunk != nil { room.signal() }
                return chunk
            }
        }
    }

    /// How many chunks the reader thread may read ahead of the consumer.
    package static let chunksAhead = 4

    /// How many bytes the reader thread has taken from the socket so far.
    package var bytesReceived: Int { received.load(ordering: .relaxed) }

    /// The descriptor is released by whichever comes last, the reader's exit, a send's end or
    /// `close()`, so its number is never reused while read(2) or send(2) still holds it.
    private func finishedUsing() {
        let release = state.withLock { state in
            state.users -= 1
            return releaseIfIdle(&state)
        }
        if release { Glibc.close(descriptor) }
    }

    private func releaseIfIdle(_ state: inout State) -> Bool {
        guard state.closed, state.users == 0, !state.descriptorReleased else { return false }
        state.descriptorReleased = true
        return true
    }

    /// From now on the reader thread drops what it reads instead of passing it on, without waiting
    /// for the consumer, and ends the stream at the peer's end of stream or once `limit` bytes are
    /// dropped: what the peer still sends is drained off the socket by the thread alone.
    public func discardIncoming(upTo limit: Int) {
        state.withLock { $0.discardAllowance = limit }
        // A reader waiting for room would otherwise wait for a consumer that takes nothing more.
        room.signal()
    }

    /// For the reader thread, after reading `count` bytes: nil to pass them on; true to drop them and
    /// read on; false to drop them and end the stream, the allowance being spent.
    private func dropping(_ count: Int) -> Bool? {
        state.withLock { state in
            guard let allowance = state.discardAllowance else { return nil }
            state.discardAllowance = allowance - count
            return allowance - count > 0
        }
    }

    /// Ends what this side sends (the peer reads its end of stream) and goes on receiving.
    public func finishSending() {
        state.withLock { state in
            if !state.closed { shutdown(descriptor, Int32(SHUT_WR)) }
        }
    }

    /// Shuts the socket down (waking the reader thread, even one waiting for room) and releases it.
    /// Safe to call more than once.
    public func close() {
        let (wasOpen, release) = state.withLock { state in
            let wasOpen = !state.closed
            if wasOpen { shutdown(descriptor, Int32(SHUT_RDWR)) }
            state.closed = true
            return (wasOpen, releaseIfIdle(&state))
        }
        if wasOpen { room.signal() }
        if release { Glibc.close(descriptor) }
    }

    deinit {
        close()
    }
}
