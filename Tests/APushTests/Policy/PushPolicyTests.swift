import Foundation
import Testing

@testable import APush

@Suite struct PushPolicyTests {
    /// Every field away from its default.
    static var changed: PushPolicy {
        var policy = PushPolicy()
        policy.messages = false
        policy.calls = false
        policy.reads = false
        policy.wakes = false
        policy.coalesceSeconds = 42
        policy.groupchat = .onMention
        policy.muted = ["bob@localhost", "room@conference.localhost"]
        policy.badgeMuted = true
        policy.quietHours = QuietHours("22:00-07:00")
        policy.quietMessages = .none
        policy.timezone = "Europe/Prague"
        policy.sender = .hidden
        policy.graceSeconds = 30
        policy.graceWhen = .connected
        policy.graceMentions = false
        return policy
    }

    @Test func anEmptyDocumentIsTheDefaultPolicy() throws {
        #expect(try PushPolicy.decode(json: "{}") == PushPolicy())
    }

    @Test func aPartialDocumentFillsTheRestFromTheDefaults() throws {
        let policy = try PushPolicy.decode(json: #"{"messages":false,"quietHours":"23:30-06:15"}"#)
        var expected = PushPolicy()
        expected.messages = false
        expected.quietHours = QuietHours("23:30-06:15")
        #expect(policy == expected)
        #expect(policy.quietHours?.start == 23 * 60 + 30)
        #expect(policy.quietHours?.end == 6 * 60 + 15)
    }

    @Test func mutedChatsAreNormalisedBareSortedAndUnique() throws {
        let policy = try PushPolicy.decode(
            json: #"{"muted":["Room@Conference.LocalHost/nick","bob@localhost"," BOB@localhost/phone ",""]}"#)
        #expect(policy.muted == ["bob@localhost", "room@conference.localhost"])
        #expect(policy.isMuted("bob@localhost"))
        #expect(!policy.isMuted("carol@localhost"))
    }

    @Test func graceIsOffByDefaultAndReadsItsThreeKeys() throws {
        #expect(PushPolicy().graceSeconds == 0)
        let policy = try PushPolicy.decode(json: #"{"graceSeconds":600,"graceWhen":"connected","graceMentions":false}"#)
        #expect(policy.graceSeconds == 600)
        #expect(policy.graceWhen == .connected)
        #expect(!policy.graceMentions)
    }

    @Test func anEmptyQuietHoursValueMeansNone() throws {
        #expect(try PushPolicy.decode(json: #"{"quietHours":""}"#).quietHours == nil)
    }

    @Test(arguments: [
        ("quietHours", #"{"quietHours":"22:00"}"#),
        ("quietHours", #"{"quietHours":"25:00-07:00"}"#),
        ("quietHours", #"{"quietHours":"22:00-22:00"}"#),
        ("quietHours", #"{"quietHours":"7:00-08:00"}"#),
        ("timezone", #"{"timezone":"Mars/Olympus_Mons"}"#),
        ("muted", #"{"muted":["bob@localhost","@localhost"]}"#),
        ("groupchat", #"{"groupchat":"sometimes"}"#),
        ("sender", #"{"sender":"anonymous"}"#),
        ("quietMessages", #"{"quietMessages":"loud"}"#),
        ("messages", #"{"messages":"yes"}"#),
        ("badgeMuted", #"{"badgeMuted":"yes"}"#),
        ("coalesceSeconds", #"{"coalesceSeconds":"ten"}"#),
        ("graceSeconds", #"{"graceSeconds":-1}"#),
        ("graceSeconds", #"{"graceSeconds":601}"#),
        ("graceSeconds", #"{"graceSeconds":"5"}"#),
        ("graceWhen", #"{"graceWhen":"idle"}"#),
        ("graceMentions", #"{"graceMentions":"no"}"#),
    ])
    func aBadValueFailsNamingItsKey(key: String, json: String) throws {
        let error = try #require(throws: DecodingError.self) { try PushPolicy.decode(json: json) }
        let path: [any CodingKey]
        switch error {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context),
            .keyNotFound(_, let context):
            path = context.codingPath
        @unknown default:
            path = []
        }
        #expect(path.last?.stringValue == key)
    }

    @Test func encodingAndDecodingGiveTheSamePolicy() throws {
        for policy in [PushPolicy(), Self.changed] {
            let data = try JSONEncoder().encode(policy)
            #expect(try JSONDecoder().decode(PushPolicy.self, from: data) == policy)
            #expect(try PushPolicy.decode(json: policy.json) == policy)
        }
    }

    @Test func theStoredTextHasSortedKeys() throws {
        #expect(
            PushPolicy().json
                == #"{"badgeMuted":false,"calls":true,"coalesceSeconds":10,"graceMentions":true,"graceSeconds":0,"#
                + #""graceWhen":"active","groupchat":"always","messages":true,"#
                + #""muted":[],"quietHours":"","quietMessages":"wake","reads":true,"sender":"named","timezone":"UTC","#
                + #""wakes":true}"#)
    }

    @Test func equalPoliciesStoreEqualText() throws {
        let reordered = try PushPolicy.decode(
            json: #"{"sender":"hidden","muted":["room@conference.localhost","bob@localhost"],"#
                + #""timezone":"Europe/Prague","quietMessages":"none","quietHours":"22:00-07:00","groupchat":"on-mention","#
                + #""coalesceSeconds":42,"wakes":false,"reads":false,"calls":false,"messages":false,"badgeMuted":true,"#
                + #""graceWhen":"connected","graceMentions":false,"graceSeconds":30}"#)
        #expect(reordered == Self.changed)
        #expect(reordered.json == Self.changed.json)
    }

    @Test(arguments: [
        ("22:00-07:00", "22:00-07:00"), (" 9:00-10:00", nil), ("09:05-10:30", "09:05-10:30"),
        ("00:00-23:59", "00:00-23:59"), ("12:60-13:00", nil), ("-", nil), ("10:00-11:00-12:00", nil),
    ])
    func quietHoursParseOnlyHHMMRanges(text: String, description: String?) {
        #expect(QuietHours(text)?.description == description)
    }

    @Test func aRangeWrappingMidnightContainsBothEnds() throws {
        let night = try #require(QuietHours("22:00-07:00"))
        #expect(night.contains(minuteOfDay: 22 * 60))
        #expect(night.contains(minuteOfDay: 0))
        #expect(night.contains(minuteOfDay: 7 * 60 - 1))
        #expect(!night.contains(minuteOfDay: 7 * 60))
        #expect(!night.contains(minuteOfDay: 22 * 60 - 1))
        let day = try #require(QuietHours("09:00-17:00"))
        #expect(day.contains(minuteOfDay: 9 * 60))
        #expect(!day.contains(minuteOfDay: 17 * 60))
        #expect(!day.contains(minuteOfDay: 0))
    }
}
