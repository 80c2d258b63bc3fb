import ComponentHost
import Foundation
import HTTPServer
import Logging
import Store
import Testing
import LocalServers
import TestSupport

@testable import APush

/// The operations endpoint (docs/wire-contract.md, Operations) of a component linked to a real Prosody:
/// /health follows the link, /metrics counts a real push, and what is not a plain GET is refused.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct OperationsEndToEndTests {
    /// The bound on a request head shortened, so the slow peer's test waits a second, not five.
    static let quickBounds: HTTPServer.Settings = {
        var settings = HTTPServer.Settings()
        settings.requestTimeout = .seconds(1)
        return settings
    }()

    @Test func healthFollowsTheLinkAndMetricsCountARealPushNamingNoTokenOrAccount() async throws {
        try await PushTestbed.with(.prosodyBridged, coalesceSeconds: 0, http: Self.quickBounds) { bed in
            let port = try #require(bed.httpPort)
            let health = try await HTTPTestClient.request("/health", port: port)
            #expect(health.status == 200)
            let json = try Self.json(health.body)
            #expect(json["status"] as? String == "ok")
            #expect(json["link"] as? String == "up")
            #expect(json["store"] as? String == "ok")
            #expect(json["version"] as? String == ComponentService.softwareVersion)
            #expect(json["uptimeSeconds"] is Int)
            #expect(json["registrations"] as? Int == 0)

            let before = try await HTTPTestClient.request("/metrics", port: port)
            #expect(before.status == 200)
            let result = #"apush_publishes_total{answer="result"}"#
            let sent = #"apush_pushes_total{kind="message",outcome="sent"}"#
            #expect(Self.value(result, in: before.body) == 0)
            #expect(Self.value(sent, in: before.body) == 0)
            #expect(Self.value("apush_link_up", in: before.body) == 1)

            let token = "token-operations-\(UInt32.random(in: .min ... .max))"
            let key = try await bed.enableDevice(token: token)
            let bob = try await bed.client("bob")
            try bed.message(from: bob, to: "alice@localhost", body: "counted, never shown")
            _ = try await bed.nextPush(key: key)
            // The server's publish is answered just after the App Server answers the push.
            var after = try await HTTPTestClient.request("/metrics", port: port)
            let deadline = ContinuousClock.now + .seconds(5)
            while Self.value(result, in: after.body) == 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                after = try await HTTPTestClient.request("/metrics", port: port)
            }
            #expect(Self.value(result, in: after.body) == 1)
            #expect(Self.value(sent, in: after.body) == 1)
            #expect(Self.value(#"apush_registrations{domain="localhost"}"#, in: after.body) == 1)
            #expect(Self.value("apush_upstream_seconds_count", in: after.body) == 1)
            #expect(Self.value("apush_publish_seconds_count", in: after.body) ?? 0 >= 1)
            #expect(Self.value("process_resident_memory_bytes", in: after.body) ?? 0 > 0)
            // admin-stats reads the same counters.
            #expect(bed.statistic("answers.result") == 1 && bed.statistic("pushes.message.accepted") == 1)
            // /health reads the store's total at most once every 5 s: the new registration shows by then.
            var healthAfter = try await HTTPTestClient.request("/health", port: port)
            let readingDeadline = ContinuousClock.now + .seconds(10)
            while try Self.json(healthAfter.body)["registrations"] as? Int == 0, ContinuousClock.now < readingDeadline {
                try await Task.sleep(for: .milliseconds(200))
                healthAfter = try await HTTPTestClient.request("/health", port: port)
            }
            #expect(try Self.json(healthAfter.body)["registrations"] as? Int == 1)
            for page in [health.body, after.body, healthAfter.body] {
                #expect(!page.contains(token), "a token was served")
                #expect(!page.contains("alice@localhost") && !page.contains("bob@localhost"), "an account was served")
            }
            await bob.close()

            // The server gone, the link is down: 503 with the same fields.
            await bed.server.stop()
            var down = try await HTTPTestClient.request("/health", port: port)
            let downDeadline = ContinuousClock.now + .seconds(10)
            while down.status == 200, ContinuousClock.now < downDeadline {
                try await Task.sleep(for: .milliseconds(50))
                down = try await HTTPTestClient.request("/health", port: port)
            }
            #expect(down.status == 503)
            let downJSON = try Self.json(down.body)
            #expect(downJSON["status"] as? String == "degraded")
            #expect(downJSON["link"] as? String == "down")
            #expect(downJSON["store"] as? String == "ok")
            #expect(downJSON["registrations"] as? Int == 1)
            let downMetrics = try await HTTPTestClient.request("/metrics", port: port)
            #expect(Self.value("apush_link_up", in: downMetrics.body) == 0)
        }
    }

    @Test func whatIsNotAPlainGetOfAPageIsRefusedOrCutOff() async throws {
        try await PushTestbed.with(.prosodyBridged, http: Self.quickBounds) { bed in
            let port = try #require(bed.httpPort)
            #expect(try await HTTPTestClient.request("/nothing-here", port: port).status == 404)
            #expect(try await HTTPTestClient.request("/health/", port: port).status == 404)
            let head = try #require(
                try await HTTPTestClient.exchange(
                    Array("HEAD /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8), port: port))
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"))
            for method in ["POST", "PUT", "DELETE"] {
                let answer = try #require(
                    try await HTTPTestClient.exchange(
                        Array("\(method) /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n".utf8), port: port))
                #expect(answer.hasPrefix("HTTP/1.1 405 Method Not Allowed\r\n"))
                #expect(answer.contains("\r\nAllow: GET, HEAD\r\n"))
            }
            for malformed in [
                "GET /health HTTP/1.1\r\n\r\n", "GET /health\r\n\r\n",
                "GET http://a/health HTTP/1.1\r\nHost: a\r\n\r\n",
                "GET /health HTTP/1.1\nHost: a\n\n",
                "\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\u{0}\u{1}\u{fc}\u{3}\u{3}\r\n\r\n",
            ] {
                let answer = try await HTTPTestClient.exchange(Array(malformed.utf8), port: port)
                #expect(answer?.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true, "\(malformed.debugDescription)")
            }
            // Over 8 KiB: closed, unanswered, whether the head ends or not.
            let padding = String(repeating: "x", count: 9000)
            for oversize in ["GET /health HTTP/1.1\r\nHost: a\r\nX: \(padding)\r\n\r\n", "GET /\(padding)"] {
                #expect(try await HTTPTestClient.exchange(Array(oversize.utf8), port: port) == "")
            }
            // A head not complete within the bound: closed, unanswered, long before the client gives up.
            let slow = try await HTTPTestClient.exchange(
                Array("GET /health HTTP/1.1\r\nHost: a\r\n".utf8), port: port, timeout: .seconds(30))
            #expect(slow == "")
            // And the endpoint still serves.
            #expect(try await HTTPTestClient.request("/health", port: port).status == 200)
        }
    }

    /// Before the link is made (here: no server listens), /health says so with a 503.
    @Test func healthIs503BeforeTheLinkIsUp() async throws {
        let (httpPort, serverPort) = try (TestPorts.next(), TestPorts.next())
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": "secret",
                "APUSH_SERVER": "127.0.0.1:\(serverPort)", "APUSH_DOMAINS": "localhost",
                "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": ":memory:", "APUSH_HTTP": "127.0.0.1:\(httpPort)",
            ], schema: .apushComponent)
        let logger = Logger(label: "apush", level: .critical, sink: InMemoryLogSink())
        let module = try APushModule(
            store: try SQLitePushStore(.memory), settings: try APushModule.settings(from: configuration),
            logger: logger)
        let service = try ComponentService(configuration: configuration, modules: [module], logger: logger)
        let running = Task { await service.run() }
        defer { running.cancel() }
        let health = try await HTTPTestClient.request("/health", port: UInt16(httpPort))
        #expect(health.status == 503)
        let json = try Self.json(health.body)
        #expect(json["status"] as? String == "degraded")
        #expect(json["link"] as? String == "down")
        #expect(json["store"] as? String == "ok")
        running.cancel()
        await running.value
        // Stopped: the endpoint no longer listens.
        await #expect(throws: (any Error).self) {
            try await HTTPTestClient.request("/health", port: UInt16(httpPort))
        }
    }

    static func json(_ body: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }

    /// The value of one series (name and labels as written) on a /metrics page.
    static func value(_ series: String, in page: String) -> Double? {
        for line in page.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }
}
