import Testing
import XMPP

@testable import ComponentHost

@Suite struct HostStatusTests {
    @Test func theLinkIsDownUntilConnectedAndReconnectsCountAfterTheFirst() {
        let status = HostStatus()
        #expect(!status.linkIsUp && status.linkReconnects == 0)
        status.record(.connected)
        #expect(status.linkIsUp && status.linkReconnects == 0)
        status.record(.disconnected(.connectionLost("reset")))
        #expect(!status.linkIsUp)
        status.record(.connected)
        #expect(status.linkIsUp && status.linkReconnects == 1)
        status.linkStopped()
        #expect(!status.linkIsUp)
    }

    @Test func theRoleIsStandbyWhileAnotherInstanceHoldsTheJIDAndActiveOnceConnected() {
        let status = HostStatus()
        #expect(status.linkRole == .connecting)
        status.record(.disconnected(.streamError(StreamError(.conflict))))
        #expect(status.linkRole == .standby)
        status.record(.connected)
        #expect(status.linkRole == .active)
        status.record(.disconnected(.connectionLost("reset")))
        #expect(status.linkRole == .connecting)
        status.record(.disconnected(.streamError(StreamError(.conflict))))
        status.linkStopped()
        #expect(status.linkRole == .connecting)
    }

    @Test func uptimeCountsFromTheStart() {
        let status = HostStatus(started: .now - .seconds(90))
        #expect(status.uptimeSeconds >= 90)
    }
}
