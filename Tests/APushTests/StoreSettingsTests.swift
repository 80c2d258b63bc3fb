import ComponentHost
import Foundation
import Testing

@testable import APush

/// The store's keys are the push module's: read from the file or the environment, checked by the module.
@Suite struct StoreSettingsTests {
    @Test func withoutTheKeysTheDefaultsApply() throws {
        let settings = try StoreSettings(from: APushModuleTests.configuration("{}"))
        #expect(settings.location == "/var/lib/apush-component/apush.sqlite")
        #expect(settings.synchronous == .full)
    }

    @Test func theFileSetsThemAndTheEnvironmentOverridesIt() throws {
        let file = #"{"store": "/tmp/apush.sqlite", "storeSynchronous": "normal"}"#
        let fromFile = try StoreSettings(from: APushModuleTests.configuration(file))
        #expect(fromFile.location == "/tmp/apush.sqlite")
        #expect(fromFile.synchronous == .normal)
        let overridden = try StoreSettings(
            from: APushModuleTests.configuration(
                file, environment: ["APUSH_STORE": ":memory:", "APUSH_STORE_SYNCHRONOUS": "full"]))
        #expect(overridden == StoreSettings(location: ":memory:", synchronous: .full))
    }

    @Test(arguments: [
        (#"{"store": ""}"#, "store"),
        (#"{"store": 5}"#, "store"),
        (#"{"storeSynchronous": "off"}"#, "storeSynchronous"),
        (#"{"store": "postgresql://apush@localhost/apush", "storeSynchronous": "normal"}"#, "storeSynchronous"),
    ])
    func aBadValueNamesItsKey(json: String, key: String) throws {
        let configuration = try APushModuleTests.configuration(json)
        let error = #expect(throws: ConfigurationError.self) { try StoreSettings(from: configuration) }
        #expect(error?.key == key)
    }

    @Test func anEmptyStoreFromTheEnvironmentNamesItsKey() throws {
        let configuration = try APushModuleTests.configuration("{}", environment: ["APUSH_STORE": ""])
        #expect(throws: ConfigurationError(key: "store", reason: "must not be empty")) {
            try StoreSettings(from: configuration)
        }
    }

    /// The example configuration shows `storeSynchronous` at its default.
    @Test func theExampleConfigurationShowsTheDefaultSynchronous() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("config/apush-component.example.json")
        let file = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: example)) as? [String: Any])
        #expect(file["storeSynchronous"] as? String == StoreSettings().synchronous.rawValue)
    }
}
