import Foundation
import Synchronization
import Testing
import Sockets

@testable import LocalServers

#if canImport(Glibc)
    import Glibc
#endif

@Suite(.timeLimit(.minutes(1)))
struct TCPConnectionTests {
    /// A connected pair on loopback: `client` dialled `server`, which the listener accepted.
    private func connectedPair() async throws -> (client: TCPConnection, server: TCPConnection, listener: TCPListener) {
        let accepted = Mailbox<TCPConnection>(name: "an accepted connection")
        let listener = try TCPListener { accepted.put($0) }
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port)
        let server = try await accepted.take(timeout: .seconds(5))
        return (client, server, listener)
    }

    /// `body` with a connected pair, all of it closed after.
    private func withConnectedPair(_ body: (TCPConnection, TCPConnection) async throws -> Void) async throws {
        let (client, server, listener) = try await connectedPair()
        defer {
            listener.close()
            client.close()
            server.close()
        }
        try await body(client, server)
    }

    @Test func closeReturnsWhileASendIsBlockedOnAPeerThatStoppedReading() async throws {
        let (client, server, listener) = try await connectedPair()
        defer { listener.close() }
        let sendEnded = Mailbox<Bool>(name: "the blocked send to end")
        Thread {
            // The server never reads: the socket buffers fill and send(2) blocks.
            let chunk = [UInt8](repeating: 0x20, count: 1 << 20)
            while (try? client.send(chunk)) != nil {}
            sendEnded.put(true)
        }.start()
        try await Task.sleep(for: .milliseconds(300))

        let closed = Mailbox<Bool>(name: "close() to return")
        Thread {
            client.close()
            closed.put(true)
        }.start()
        let closeReturned = (try? await closed.take(timeout: .seconds(2))) != nil
        // Were close() stuck behind the send, only the peer going away would unblock both.
        server.close()
        #expect(closeReturned)
        _ = try await sendEnded.take(timeout: .seconds(5))
        if !closeReturned { _ = try await closed.take(timeout: .seconds(5)) }
    }

    @Test func incomingOnAClosedConnectionEndsWithoutReadingAnotherSocket() async throws {
        let (client, server, listener) = try await connectedPair()
        defer { listener.close() }
        client.close()
        // The next socket is likely to reuse the released descriptor number.
        let (other, otherServer, otherListener) = try await connectedPair()
        defer { otherListener.close() }
        try otherServer.send("meant for the other connection")

        var chunks: [[UInt8]] = []
        for try await chunk in client.incoming() { chunks.append(chunk) }
        #expect(chunks.isEmpty)

        otherServer.close()
        var received: [UInt8] = []
        for try await chunk in other.incoming() { received += chunk }
        #expect(String(decoding: received, as: UTF8.self) == "meant for the other connection")
        for listener in [server, other] { listener.close() }
    }
}

extension TCPConnectionTests {
    /// A consumer that stops taking chunks must stop the reader thread too: the bytes then stay in the
    /// kernel, and TCP pushes back on the peer, instead of filling memory.
    @Test func theReaderTakesOnlyAFewChunksAheadOfItsConsumer() async throws {
        try await withConnectedPair { client, server in
            let total = 4 << 20
            let chunks = client.incoming()
            var iterator = chunks.makeAsyncIterator()
            Thread {
                // Fits in loopback's socket buffers: the writer is never the one held back.
                try? server.send([UInt8](repeating: 0x20, count: total))
            }.start()
            var received = try #require(try await iterator.next()).count
            try await Task.sleep(for: .milliseconds(500))
            #expect(client.bytesReceived <= received + (TCPConnection.chunksAhead + 1) * 16_384)

            while received < total, let chunk = try await iterator.next() { received += chunk.count }
            #expect(received == total)
        }
    }

    /// Told to discard, the reader thread drains the socket by itself, the consumer taking nothing,
    /// and the stream ends at the peer's end of stream.
    @Test func aConnectionDiscardingDrainsThePeerWithoutAConsumerUntilItsEnd() async throws {
        try await withConnectedPair { client, server in
            let total = 16 << 20
            var iterator = client.incoming().makeAsyncIterator()
            let sent = Mailbox<Bool>(name: "the whole send")
            Thread {
                // More than loopback's socket buffers hold: it ends only if the reader drains it.
                sent.put((try? server.send([UInt8](repeating: 0x20, count: total))) != nil)
                server.close()
            }.start()
            _ = try await iterator.next()
            client.discardIncoming(upTo: 1 << 30)
            #expect(try await sent.take(timeout: .seconds(20)))
            var passedOn = 0
            while let chunk = try await iterator.next() { passedOn += chunk.count }
            #expect(passedOn <= TCPConnection.chunksAhead * 16_384, "only what was read before passes on")
            #expect(client.bytesReceived == total)
        }
    }

    @Test func discardingEndsTheStreamOnceItsAllowanceIsSpent() async throws {
        try await withConnectedPair { client, server in
            var iterator = client.incoming().makeAsyncIterator()
            client.discardIncoming(upTo: 64 << 10)
            Thread { try? server.send([UInt8](repeating: 0x20, count: 16 << 20)) }.start()
            while try await iterator.next() != nil {}
            #expect(client.bytesReceived >= 64 << 10)
            #expect(client.bytesReceived < 16 << 20)
        }
    }
}
