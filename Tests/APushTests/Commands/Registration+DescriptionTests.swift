import Sealing
import Store
import Testing
import TestSupport

@testable import APush

@Suite struct RegistrationDescriptionTests {
    static let token = "fcm-token-0123456789abcdef"

    static func registration(
        calls: CallsMode = .also, reads: Bool = true, lastPushAt: Timestamp? = nil,
        lastError: String? = nil, lastErrorAt: Timestamp? = nil
    ) -> Registration {
        Registration(
            id: 1, domain: "localhost", token: token, pushModule: "apush", account: "alice@localhost",
            deviceKey: Array(repeating: 7, count: 32), calls: calls, wantsReads: reads,
            collapseKey: Array(repeating: 1, count: 32), createdAt: ManualClock.start,
            lastPushAt: lastPushAt, lastError: lastError, lastErrorAt: lastErrorAt)
    }

    @Test(arguments: [
        (CallsMode.none, false, "messages"), (.none, true, "messages, reads"),
        (.also, false, "messages, calls"), (.also, true, "messages, calls, reads"),
        (.only, false, "calls"), (.only, true, "calls"),
    ])
    func kindsNameWhatTheRegistrationTakes(calls: CallsMode, reads: Bool, kinds: String) {
        #expect(Self.registration(calls: calls, reads: reads).kindsDescription == kinds)
    }

    @Test func theFingerprintNamesTheTokenWithoutRevealingIt() {
        let registration = Self.registration()
        #expect(registration.fingerprint == Fingerprint.of(Self.token))
        #expect(registration.fingerprint.hasPrefix("#"))
        #expect(registration.fingerprint.count == 9)
        #expect(!Self.token.contains(registration.fingerprint.dropFirst()))
    }

    @Test func theSummaryLineNamesFingerprintModuleKindsAndHistoryButNeverTheToken() {
        let fresh = Self.registration().summaryLine
        #expect(
            fresh == "\(Fingerprint.of(Self.token)) · apush · messages, calls, reads · created 2025-11-29 15:26:40 UTC"
                + " · last push never · last error none")
        let used = Self.registration(
            lastPushAt: ManualClock.start + 60_000, lastError: "wait/remote-server-timeout",
            lastErrorAt: ManualClock.start + 120_000
        ).summaryLine
        #expect(used.contains("last push 2025-11-29 15:27:40 UTC"))
        #expect(used.contains("last error wait/remote-server-timeout at 2025-11-29 15:28:40 UTC"))
        for line in [fresh, used] {
            #expect(!line.contains(Self.token))
        }
    }
}
