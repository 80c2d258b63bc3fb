import Foundation
import XMPP

@testable import APush

/// The input is a JID as text. What `JID` accepts must read back to itself from its own text, from
/// its parts and from its JSON coding, and its bare form must be bare; the classifier's and the
/// policy's readers of JIDs must answer without a trap.
func fuzzJID(_ input: [UInt8]) {
    let text = String(decoding: input, as: UTF8.self)
    _ = EventClassifier.bareJID(text)
    _ = PushPolicy.normalisedChats([text])
    guard let jid = try? JID(text) else { return }
    require((try? JID(jid.description)) == jid, "a JID did not read back from its own text")
    require(
        (try? JID(localpart: jid.localpart, domainpart: jid.domainpart, resourcepart: jid.resourcepart)) == jid,
        "a JID did not read back from its parts")
    require(jid.bare.isBare && jid.bare.domainpart == jid.domainpart, "the bare JID is not bare")
    let decoded = (try? JSONEncoder().encode(jid)).flatMap { try? JSONDecoder().decode(JID.self, from: $0) }
    require(decoded == jid, "a JID did not survive its JSON coding")
}
