import Testing
import XMLStream

@Suite struct ElementTests {
    @Test func pairInitializerKeepsOrderAndDropsNilValues() {
        let element = Element("iq", namespace: "jabber:client", ["type": "get", "to": nil, "id": "1"], text: "hi")
        #expect(element.attributes == [Attribute("type", "get"), Attribute("id", "1")])
        #expect(element.children == [.text("hi")])
    }

    @Test func attributeSubscriptReadsSetsReplacesAndRemoves() {
        var element = Element("iq", ["type": "get"])
        #expect(element[attribute: "type"] == "get")
        #expect(element[attribute: "id"] == nil)
        element[attribute: "id"] = "1"
        element[attribute: "type"] = "set"
        #expect(element.attributes == [Attribute("type", "set"), Attribute("id", "1")])
        element[attribute: "type"] = nil
        element[attribute: "missing"] = nil
        #expect(element.attributes == [Attribute("id", "1")])
    }

    @Test func elementsAndTextSeparateTheChildren() {
        let element = Element(
            "body", children: [.text("a"), .element(Element("x")), .text("b"), .element(Element("y"))])
        #expect(element.elements.map(\.name) == ["x", "y"])
        #expect(element.text == "ab")
    }

    @Test func childLooksUpByNameInTheParentsNamespaceUnlessGivenOne() {
        let parent = Element(
            "iq", namespace: "jabber:client",
            children: [
                .element(Element("query", namespace: "urn:other")),
                .element(Element("query", namespace: "jabber:client")),
                .element(Element("error", namespace: "jabber:client")),
            ])
        #expect(parent.child("query")?.namespace == "jabber:client")
        #expect(parent.child("query", namespace: "urn:other")?.namespace == "urn:other")
        #expect(parent.child("error", namespace: "urn:other") == nil)
        #expect(parent.child("missing") == nil)
    }

    @Test func appendAddsElementsAndTextInOrder() {
        var element = Element("message")
        element.append(Element("body"))
        element.append(text: "tail")
        #expect(element.children == [.element(Element("body")), .text("tail")])
    }
}
