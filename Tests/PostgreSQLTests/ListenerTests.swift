import Foundation
import SQLCore
import Synchronization
import Testing
import TestSupport

@testable import PostgreSQL

/// The listening thread against a real PostgreSQL 15.
@Suite struct ListenerTests {
    /// What is sent on the channel is heard, the other channels' not; a session the server ends is
    /// connected again (and `connected` called again, since what was sent meanwhile was lost); after
    /// `stop` nothing more is heard.
    @Test func notificationsAreHeardAcrossALostSessionUntilStopped() async throws {
        let url = try await TestServer.url
        let channel = "test_\(UUID().uuidString.prefix(8).lowercased())"
        let connections = Mutex(0)
        let heard = Mutex<[String]>([])
        let listener = try Listener(
            conninfo: url, channel: channel, reconnectInterval: .milliseconds(100),
            connected: { connections.withLock { $0 += 1 } },
            heard: { payloads in heard.withLock { $0 += payloads } })
        defer { listener.stop() }
        try await waitUntil("the listener connected", timeout: .seconds(20)) { connections.withLock { $0 } == 1 }
        let sender = try Connection(url)
        try sender.execute("SELECT pg_notify($1, 'one'), pg_notify('elsewhere', 'not this')", [.text(channel)])
        try await waitUntil("one heard", timeout: .seconds(20)) { heard.withLock { $0 } == ["one"] }

        try sender.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1", [.text("LISTEN \(channel)")])
        try await waitUntil("the listener connected again", timeout: .seconds(20)) { connections.withLock { $0 } == 2 }
        try sender.execute("SELECT pg_notify($1, 'two')", [.text(channel)])
        try await waitUntil("two heard", timeout: .seconds(20)) { heard.withLock { $0 } == ["one", "two"] }

        listener.stop()
        try await Task.sleep(for: .milliseconds(300))
        try sender.execute("SELECT pg_notify($1, 'three')", [.text(channel)])
        try await Task.sleep(for: .milliseconds(300))
        #expect(heard.withLock { $0 } == ["one", "two"])
    }

    /// A flood on the channel is handed on in batches, at most one per `spacing`, and none of it is lost.
    @Test func aFloodIsHandedOnInBatchesAtMostOneASpacing() async throws {
        let url = try await TestServer.url
        let channel = "test_\(UUID().uuidString.prefix(8).lowercased())"
        let listening = Mutex(false)
        let batches = Mutex<[[String]]>([])
        let listener = try Listener(
            conninfo: url, channel: channel, reconnectInterval: .milliseconds(100), spacing: .milliseconds(500),
            connected: { listening.withLock { $0 = true } },
            heard: { payloads in batches.withLock { $0.append(payloads) } })
        defer { listener.stop() }
        try await waitUntil("the listener connected", timeout: .seconds(20)) { listening.withLock { $0 } }
        let sender = try Connection(url)
        let started = ContinuousClock.now
        for index in 0..<200 {
            try sender.execute("SELECT pg_notify($1, $2)", [.text(channel), .text("\(index)")])
        }
        let sent = ContinuousClock.now - started
        try await waitUntil("all heard", timeout: .seconds(20)) { batches.withLock { $0.joined().count } == 200 }
        let counts = batches.withLock { $0.map(\.count) }
        #expect(batches.withLock { Array($0.joined()) } == (0..<200).map(String.init))
        // One batch at once, then at most one per spacing while the flood lasts, and one after it.
        #expect(counts.count <= 2 + Int(sent / .milliseconds(500)), "batches of \(counts) in \(sent)")
    }
}
