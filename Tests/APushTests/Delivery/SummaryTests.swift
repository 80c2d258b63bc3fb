import Foundation
import Sealing
import Testing

@testable import APush

@Suite struct SummaryTests {
    /// The examples of docs/wire-contract.md (Output), byte for byte.
    static let examples: [(Summary, String)] = [
        (
            Summary(
                kind: .message, account: "alice@example.org", chat: "bob@example.org", from: "bob@example.org",
                count: 3, badge: 4, id: "2f1c…", ts: 1_764_430_000),
            #"{"v":2,"kind":"message","account":"alice@example.org","chat":"bob@example.org","from":"bob@example.org","count":3,"badge":4,"id":"2f1c…","ts":1764430000}"#
        ),
        (
            Summary(
                kind: .message, account: "alice@example.org", chat: "crew@muc.example.org", groupchat: true,
                from: "Zoë", count: 17, badge: 21, mention: true, ts: 1_764_430_060),
            #"{"v":2,"kind":"message","account":"alice@example.org","chat":"crew@muc.example.org","groupchat":true,"from":"Zoë","count":17,"badge":21,"mention":true,"ts":1764430060}"#
        ),
        (
            Summary(
                kind: .call, account: "alice@example.org", chat: "bob@example.org", from: "bob@example.org/phone",
                call: .init(sid: "8f0c…", media: ["audio", "video"]), ts: 1_764_430_120),
            #"{"v":2,"kind":"call","account":"alice@example.org","chat":"bob@example.org","from":"bob@example.org/phone","call":{"sid":"8f0c…","media":["audio","video"]},"ts":1764430120}"#
        ),
        (
            Summary(kind: .read, account: "alice@example.org", chat: "bob@example.org", badge: 18, ts: 1_764_430_180),
            #"{"v":2,"kind":"read","account":"alice@example.org","chat":"bob@example.org","badge":18,"ts":1764430180}"#
        ),
        (
            Summary(kind: .wake, account: "alice@example.org", ts: 1_764_430_240),
            #"{"v":2,"kind":"wake","account":"alice@example.org","ts":1764430240}"#
        ),
    ]

    @Test(arguments: examples)
    func writesTheProtocolExamplesByteForByte(_ summary: Summary, expected: String) {
        #expect(Array(summary.json.utf8) == Array(expected.utf8))
    }

    @Test func aMissedCallIsAMessageWithMissedAndTheCall() {
        var summary = Summary(kind: .message, account: "a@x", chat: "b@x", from: "b@x", count: 1, ts: 5)
        summary.missed = true
        summary.call = .init(sid: "s", media: ["audio"])
        #expect(
            summary.json
                == #"{"v":2,"kind":"message","account":"a@x","chat":"b@x","from":"b@x","count":1,"missed":true,"call":{"sid":"s","media":["audio"]},"ts":5}"#
        )
    }

    @Test(arguments: [(0, 0), (1, 1), (9_999, 9_999), (10_000, 9_999), (Int.max, 9_999)])
    func theBadgeIsCappedAt9999(_ total: Int, written: Int) {
        let summary = Summary(kind: .read, account: "a@x", chat: "b@x", badge: total, ts: 5)
        #expect(
            summary.json == #"{"v":2,"kind":"read","account":"a@x","chat":"b@x","badge":"# + "\(written)" + #","ts":5}"#
        )
    }

    @Test func aTestPushSaysSo() {
        var summary = Summary(kind: .wake, account: "a@x", ts: 5)
        summary.test = true
        #expect(summary.json == #"{"v":2,"kind":"wake","account":"a@x","test":true,"ts":5}"#)
    }

    @Test func hostileValuesStayInsideTheirStrings() throws {
        let summary = Summary(
            kind: .message, account: "a@x", chat: #"b"},"kind":"call"#, from: "\n\u{2}\"", count: 1,
            ts: 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(summary.json.utf8)) as? [String: Any])
        #expect(object["kind"] as? String == "message")
        #expect(object["chat"] as? String == #"b"},"kind":"call"#)
        #expect(object["from"] as? String == "\n\u{2}\"")
    }

    @Test(arguments: [0, 1, 60, 127, 128, 129, 300, 2000, 2256])
    func paddingReachesTheBucketStaysValidJSONAndNeverPassesTheLimit(_ length: Int) throws {
        let json = #"{"v":2,"kind":"wake","account":""# + String(repeating: "a", count: length) + #"","ts":1}"#
        let limit = Envelope.maxPlaintextLength
        let padded = Summary.padded(json, bucket: 128, limit: limit)
        #expect(padded.starts(with: Array(json.utf8)))
        #expect(padded.dropFirst(json.utf8.count).allSatisfy { $0 == UInt8(ascii: " ") })
        if json.utf8.count <= limit {
            #expect(padded.count <= limit)
            #expect(padded.count % 128 == 0 || padded.count == limit)
        } else {
            #expect(padded.count == json.utf8.count)
        }
        #expect(try JSONSerialization.jsonObject(with: Data(padded)) is [String: Any])
    }

    @Test func noBucketMeansNoPadding() {
        #expect(Summary.padded("{}", bucket: 0, limit: 100) == Array("{}".utf8))
    }

    @Test func aSummaryThatFillsItsBucketGetsNoExtraBucket() {
        let json = String(repeating: " ", count: 126)
        #expect(Summary.padded("{" + json + "}", bucket: 128, limit: 2256).count == 128)
    }
}
