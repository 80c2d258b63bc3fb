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

    @Test func uptimeCountsFromTheStart() {
        let status = HostStatus(started: .now - .seconds(90))
        #expect(status.uptimeSeconds >= 90)
    }
}
