import Testing
import XMLStream
import XMPP
import TestSupport

@testable import APush

@Suite struct AccountsQueryTests {
    static let component = try! JID("apush.localhost")
    static let server = try! JID("localhost")

    @Test func theQueryNamesEachAccountInOrder() {
        let iq = AccountsQuery.iq(["alice@localhost", "gone@localhost"], from: Self.component, to: Self.server)
        #expect(
            iq.serialized(parentNamespace: Namespace.componentAccept)
                == "<iq type='get' from='apush.localhost' to='localhost'><accounts xmlns='urn:xmpp:apush:bridge:0'>"
                + "<account jid='alice@localhost'/><account jid='gone@localhost'/></accounts></iq>")
    }

    @Test func onlyTheAskedAccountsMarkedAsNotExistingAreGone() throws {
        let answer = try Element.parse(
            "<iq type='result' from='localhost' id='x'><accounts xmlns='urn:xmpp:apush:bridge:0'>"
                + "<account jid='alice@localhost' exists='true'/><account jid='gone@localhost' exists='false'/>"
                + "<account jid='maybe@localhost'/><account jid='stranger@localhost' exists='false'/>"
                + "<account jid='odd@localhost' exists='no'/></accounts></iq>")
        let asked = ["alice@localhost", "gone@localhost", "maybe@localhost", "odd@localhost", "silent@localhost"]
        #expect(AccountsQuery.gone(in: answer, asked: asked) == ["gone@localhost"])
    }

    @Test(arguments: [
        "<iq type='error' from='localhost' id='x'><error type='cancel'><service-unavailable xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>",
        "<iq type='result' from='localhost' id='x'/>",
        "<iq type='result' from='localhost' id='x'><accounts xmlns='urn:other'><account jid='gone@localhost' exists='false'/></accounts></iq>",
    ])
    func anAnswerThatIsNotAResultWithAccountsIsNoAnswer(_ xml: String) throws {
        #expect(AccountsQuery.gone(in: try Element.parse(xml), asked: ["gone@localhost"]) == nil)
    }

    @Test func aTimeoutOrNoLinkIsNoAnswer() async {
        let sender = RecordingSender()
        sender.script(.timeout, .disconnected)
        let query = AccountsQuery(sender: sender, componentJID: Self.component, timeout: .seconds(1))
        #expect(await query.gone(["gone@localhost"], on: Self.server) == nil)
        #expect(await query.gone(["gone@localhost"], on: Self.server) == nil)
        #expect(sender.requests.first?.toString == "localhost")
    }
}
