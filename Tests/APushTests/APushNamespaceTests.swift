import Testing

@testable import APush

@Suite struct APushNamespaceTests {
    /// The namespaces the wire contract fixes: servers' bridge modules and apps depend on them.
    @Test(arguments: [
        (APushNamespace.bridge, "urn:xmpp:apush:bridge:0"),
        (APushNamespace.policyForm, "urn:xmpp:apush:policy:0"),
        (APushNamespace.commands, "urn:xmpp:apush:0"),
    ])
    func keepsTheProtocolsNamespaces(constant: String, wire: String) {
        #expect(constant == wire)
    }
}
