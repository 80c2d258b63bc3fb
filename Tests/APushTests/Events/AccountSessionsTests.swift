import Store
import Testing

@testable import APush

@Suite struct AccountSessionsTests {
    @Test func anAccountItKnowsNothingOfIsNeitherActiveNorConnected() {
        let sessions = AccountSessions()
        #expect(sessions.lastActivity(of: "alice@example.org") == nil)
        #expect(!sessions.isConnectedElsewhere("alice@example.org"))
    }

    @Test func activityKeepsTheLatestTimeEvenWhenAReportComesLate() {
        var sessions = AccountSessions()
        sessions.activity(of: "alice@example.org", at: 5_000)
        sessions.activity(of: "alice@example.org", at: 3_000)
        #expect(sessions.lastActivity(of: "alice@example.org") == 5_000)
        sessions.activity(of: "alice@example.org", at: 9_000)
        #expect(sessions.lastActivity(of: "alice@example.org") == 9_000)
        #expect(sessions.lastActivity(of: "bob@example.org") == nil)
    }

    @Test func anAccountIsConnectedWhileAnyOfItsSessionsIsAvailable() {
        var sessions = AccountSessions()
        sessions.presence(of: "alice@example.org", resource: "laptop", available: true)
        sessions.presence(of: "alice@example.org", resource: "desktop", available: true)
        #expect(sessions.isConnectedElsewhere("alice@example.org"))
        sessions.presence(of: "alice@example.org", resource: "laptop", available: false)
        #expect(sessions.isConnectedElsewhere("alice@example.org"))
        sessions.presence(of: "alice@example.org", resource: "desktop", available: false)
        #expect(!sessions.isConnectedElsewhere("alice@example.org"))
        #expect(sessions.accounts.isEmpty, "an account with nothing to tell is not kept")
    }

    @Test func theSessionThatEnablesPushIsNotAnotherDevice() {
        var sessions = AccountSessions()
        sessions.presence(of: "alice@example.org", resource: "phone", available: true)
        sessions.sessionEnabledPush(account: "alice@example.org", resource: "phone")
        #expect(!sessions.isConnectedElsewhere("alice@example.org"))
    }

    @Test func goneOrAwayOfAnUnknownAccountKeepsNothing() {
        var sessions = AccountSessions()
        sessions.presence(of: "alice@example.org", resource: "laptop", available: false)
        #expect(sessions.accounts.isEmpty)
    }

    @Test func sessionsPastTheBoundAreNotCounted() {
        var sessions = AccountSessions(sessionsPerAccount: 2)
        for resource in ["a", "b", "c"] {
            sessions.presence(of: "alice@example.org", resource: resource, available: true)
        }
        #expect(sessions.accounts["alice@example.org"]?.available == ["a", "b"])
        sessions.presence(of: "alice@example.org", resource: "a", available: false)
        sessions.presence(of: "alice@example.org", resource: "b", available: false)
        #expect(!sessions.isConnectedElsewhere("alice@example.org"), "the uncounted session holds nothing back")
    }

    @Test func accountsPastTheBoundPushOneOutAndTheRestStay() {
        var sessions = AccountSessions(capacity: 3)
        for index in 0..<10 {
            sessions.activity(of: "user\(index)@example.org", at: Timestamp(index))
        }
        #expect(sessions.accounts.count == 3)
        #expect(sessions.lastActivity(of: "user9@example.org") == 9)
        sessions.activity(of: "user9@example.org", at: 20)
        #expect(sessions.accounts.count == 3, "a known account takes no new room")
    }

    @Test func forgettingAllFailsOpen() {
        var sessions = AccountSessions()
        sessions.activity(of: "alice@example.org", at: 1_000)
        sessions.presence(of: "alice@example.org", resource: "laptop", available: true)
        sessions.forgetAll()
        #expect(sessions.lastActivity(of: "alice@example.org") == nil)
        #expect(!sessions.isConnectedElsewhere("alice@example.org"))
    }
}
