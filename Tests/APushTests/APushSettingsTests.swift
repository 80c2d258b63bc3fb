import Foundation
import Store
import Testing

@testable import APush

@Suite struct APushSettingsTests {
    static func decode(_ json: String) throws -> APushSettings {
        try JSONDecoder().decode(APushSettings.self, from: Data(json.utf8))
    }

    @Test func anEmptySectionGivesTheDefaults() throws {
        let settings = try Self.decode("{}")
        #expect(settings == APushSettings())
        #expect(settings.coalesceSeconds == 10)
        #expect(settings.wakeIntervalSeconds == 60)
        #expect(settings.upstreamTimeoutSeconds == 25)
        #expect(settings.maxInFlight == 512)
        #expect(settings.maxBackgroundDeliveries == 64)
        #expect(settings.unknownNodeCancelsPerHour == 5)
        #expect(settings.paddingBucket == 128)
        #expect(settings.registrationExpiryDays == 90)
        #expect(settings.maxStockRegistrations == 250_000)
        #expect(settings.storeLimits.registrationsWithoutAccount == 250_000)
    }

    /// The example configuration says its `push` section shows the defaults: it does.
    @Test func theExampleConfigurationShowsTheDefaults() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/apush-component.example.json")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: example)) as? [String: Any])
        let push = try JSONSerialization.data(withJSONObject: try #require(file["push"]))
        #expect(try JSONDecoder().decode(APushSettings.self, from: push) == APushSettings())
    }

    /// Issue 20, item 7.
    @Test func readsTheRegistrationsExpiryAndTheCapOfThoseWithNoAccount() throws {
        let settings = try Self.decode(#"{"registrationExpiryDays": 30, "maxStockRegistrations": 1000}"#)
        #expect(settings.registrationExpiryDays == 30)
        #expect(settings.storeLimits.registrationsWithoutAccount == 1000)
    }

    @Test func readsEveryKey() throws {
        let settings = try Self.decode(
            """
            {"coalesceSeconds": 3, "wakeIntervalSeconds": 5, "upstreamTimeoutSeconds": 7, "maxInFlight": 9,
             "maxBackgroundDeliveries": 10, "retryMessageSeconds": 11, "retryCallSeconds": 13, "unknownNodeCancelsPerHour": 15,
             "dedupeMinutes": 17, "paddingBucket": 0}
            """)
        #expect(settings.coalesceSeconds == 3)
        #expect(settings.wakeIntervalSeconds == 5)
        #expect(settings.upstreamTimeoutSeconds == 7)
        #expect(settings.maxInFlight == 9)
        #expect(settings.maxBackgroundDeliveries == 10)
        #expect(settings.retryMessageSeconds == 11)
        #expect(settings.retryCallSeconds == 13)
        #expect(settings.unknownNodeCancelsPerHour == 15)
        #expect(settings.dedupeMinutes == 17)
        #expect(settings.paddingBucket == 0)
        #expect(settings.appServer == "")
    }

    @Test(arguments: [
        #"{"coalesceSeconds": -1}"#, #"{"coalesceSeconds": 3601}"#, #"{"upstreamTimeoutSeconds": 0}"#,
        #"{"upstreamTimeoutSeconds": 31}"#, #"{"maxInFlight": 0}"#, #"{"maxBackgroundDeliveries": 0}"#,
        #"{"retryCallSeconds": 121}"#,
        #"{"dedupeMinutes": 0}"#, #"{"paddingBucket": 4096}"#,
        #"{"registrationExpiryDays": 0}"#, #"{"registrationExpiryDays": 3651}"#, #"{"maxStockRegistrations": -1}"#,
    ])
    func refusesAValueOutOfItsBounds(_ json: String) {
        let error = #expect(throws: DecodingError.self) { try Self.decode(json) }
        guard case .dataCorrupted(let context)? = error else {
            Issue.record("not dataCorrupted: \(String(describing: error))")
            return
        }
        #expect(context.debugDescription.contains("must be from"))
    }

    @Test func refusesAValueOfTheWrongType() {
        #expect(throws: DecodingError.self) { try Self.decode(#"{"coalesceSeconds": "ten"}"#) }
    }
}
