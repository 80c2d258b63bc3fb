import Foundation
import Testing
import XMPP

@Suite struct JIDTests {
    @Test(
        arguments: [
            ("alice@example.com", "alice", "example.com", nil),
            ("alice@example.com/phone", "alice", "example.com", "phone"),
            ("example.com", nil, "example.com", nil),
            ("apush.localhost", nil, "apush.localhost", nil),
            ("example.com/res", nil, "example.com", "res"),
            // The resourcepart starts at the first "/", and may hold "/" and "@".
            ("alice@example.com/a/b@c", "alice", "example.com", "a/b@c"),
            ("example.com/alice@x", nil, "example.com", "alice@x"),
            // Case folding of local and domain, not of the resource.
            ("Alice@Example.COM/Phone", "alice", "example.com", "Phone"),
            // A trailing dot of the domain goes.
            ("alice@example.com./r", "alice", "example.com", "r"),
            // IP literals.
            ("alice@127.0.0.1", "alice", "127.0.0.1", nil),
            ("alice@[::1]/r", "alice", "[::1]", "r"),
            ("[2001:DB8::1]", nil, "[2001:db8::1]", nil),
            // Non-ASCII parts, folded and in NFC ("e" + combining acute becomes "é").
            ("J\u{0065}\u{0301}r\u{00F4}me@Exämple.org", "j\u{00E9}r\u{00F4}me", "exämple.org", nil),
            ("juliet@example.com/ Balcony ", "juliet", "example.com", " Balcony "),
            ("under_score.example", nil, "under_score.example", nil),
            // "@" and "/" split on scalars, even where they would fuse into one Character with a prepend
            // character before them (U+0D4E, U+111C2) or a combining mark after them.
            ("crew@muc.localhost\u{0D4E}/Zoë", "crew", "muc.localhost\u{0D4E}", "Zoë"),
            ("crew\u{111C2}@muc.localhost", "crew\u{111C2}", "muc.localhost", nil),
            ("crew@muc.localhost/\u{0301}nick", "crew", "muc.localhost", "\u{0301}nick"),
            ("\u{0301}crew@muc.localhost", "\u{0301}crew", "muc.localhost", nil),
        ] as [(String, String?, String, String?)])
    func parsesAndNormalisesParts(input: String, local: String?, domain: String, resource: String?) throws {
        let jid = try JID(input)
        #expect(jid.localpart == local)
        #expect(jid.domainpart == domain)
        #expect(jid.resourcepart == resource)
    }

    @Test(
        arguments: [
            ("@example.com", JIDError.emptyLocalpart),
            ("", .emptyDomainpart),
            ("alice@", .emptyDomainpart),
            ("alice@/r", .emptyDomainpart),
            ("/r", .emptyDomainpart),
            ("alice@example.com/", .emptyResourcepart),
            ("a@b@example.com", .forbiddenCharacter(part: .domainpart, "@")),
            ("al ice@example.com", .forbiddenCharacter(part: .localpart, " ")),
            ("al\"ice@example.com", .forbiddenCharacter(part: .localpart, "\"")),
            ("al&ice@example.com", .forbiddenCharacter(part: .localpart, "&")),
            ("al'ice@example.com", .forbiddenCharacter(part: .localpart, "'")),
            ("al:ice@example.com", .forbiddenCharacter(part: .localpart, ":")),
            ("al<ice@example.com", .forbiddenCharacter(part: .localpart, "<")),
            ("al>ice@example.com", .forbiddenCharacter(part: .localpart, ">")),
            ("al\u{0007}ice@example.com", .forbiddenCharacter(part: .localpart, "\u{0007}")),
            ("al\u{00A0}ice@example.com", .forbiddenCharacter(part: .localpart, " ")),  // NFKC makes it a space
            ("al\u{1680}ice@example.com", .forbiddenCharacter(part: .localpart, "\u{1680}")),
            ("alice@example.com/r\u{1680}", .forbiddenCharacter(part: .resourcepart, "\u{1680}")),
            ("alice@example.com/\u{E000}", .forbiddenCharacter(part: .resourcepart, "\u{E000}")),
            ("\u{05D0}a@example.com", .mixedDirection(part: .localpart)),
            ("alice@example.com/r\u{0000}", .forbiddenCharacter(part: .resourcepart, "\u{0000}")),
            ("alice@exa mple.com", .forbiddenCharacter(part: .domainpart, " ")),
            ("alice@example..com", .invalidDomainpart("example..com")),
            ("alice@.example.com", .invalidDomainpart(".example.com")),
            ("alice@-example.com", .invalidDomainpart("-example.com")),
            ("alice@[::1", .invalidDomainpart("[::1")),
            ("alice@[zz::1]", .invalidDomainpart("[zz::1]")),
            ("alice@[]", .invalidDomainpart("[]")),
        ] as [(String, JIDError)])
    func rejectsMalformedAddresses(input: String, expected: JIDError) {
        #expect(throws: expected) { try JID(input) }
    }

    @Test func rejectsPartsOver1023Bytes() throws {
        let longest = String(repeating: "a", count: 1023)
        _ = try JID(localpart: longest, domainpart: "example.com", resourcepart: longest)
        #expect(throws: JIDError.tooLong(part: .localpart, bytes: 1024)) {
            try JID(localpart: longest + "a", domainpart: "example.com")
        }
        #expect(throws: JIDError.tooLong(part: .resourcepart, bytes: 1025)) {
            try JID("a@example.com/" + longest + "é")
        }
        let longDomain = String(repeating: "a.", count: 512) + "com"
        #expect(throws: JIDError.tooLong(part: .domainpart, bytes: longDomain.utf8.count)) { try JID(longDomain) }
    }

    @Test func comparesOnTheNormalisedForm() throws {
        #expect(try JID("Alice@EXAMPLE.com./phone") == JID("alice@example.com/phone"))
        #expect(try JID("alice@example.com/Phone") != JID("alice@example.com/phone"))
        #expect(try Set([JID("A@x.org"), JID("a@X.org.")]).count == 1)
    }

    /// A JID typed in a form (a muted chat, an admin's account) matches what the server sends.
    @Test(
        arguments: [
            ("STRASSE@example.org", "strasse@example.org"),
            ("straße@example.org", "strasse@example.org"),
            ("\u{FF33}\u{FF34}\u{FF32}\u{FF21}\u{FF33}\u{FF33}\u{FF25}@\u{FF25}xample.org", "strasse@example.org"),
            ("stra\u{00AD}sse@example.org", "strasse@example.org"),
            ("\u{03A3}\u{03C2}@example.org", "\u{03C3}\u{03C3}@example.org"),
            ("\u{FB00}@example.org/\u{FB00}", "ff@example.org/ff"),
        ] as [(String, String)])
    func typedAddressesMatchWhatTheServerSends(typed: String, sent: String) throws {
        #expect(try JID(typed) == JID(sent))
        #expect(try JID(typed).description == sent)
    }

    @Test func describesTheCanonicalString() throws {
        #expect(try JID("Alice@Example.com./Phone").description == "alice@example.com/Phone")
        #expect(try JID("example.com").description == "example.com")
        #expect(try JID(localpart: "bob", domainpart: "example.com").description == "bob@example.com")
    }

    @Test func bareDropsOnlyTheResource() throws {
        let full = try JID("alice@example.com/phone")
        #expect(full.bare == (try JID("alice@example.com")))
        #expect(full.bare.isBare)
        #expect(!full.isBare)
        #expect(!full.isDomainOnly)
        #expect(try JID("example.com").isDomainOnly)
        #expect(try !JID("example.com/r").isDomainOnly)
        #expect(try !JID("a@example.com").isDomainOnly)
    }

    @Test func codableAsItsString() throws {
        let jid = try JID("alice@example.com/phone")
        let data = try JSONEncoder().encode([jid])
        #expect(try JSONDecoder().decode([String].self, from: data) == ["alice@example.com/phone"])
        #expect(try JSONDecoder().decode([JID].self, from: data) == [jid])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([JID].self, from: Data(#"["@x"]"#.utf8)) }
    }

    @Test func errorsSayWhatIsWrong() {
        #expect(JIDError.emptyResourcepart.description.contains("resourcepart"))
        #expect(JIDError.forbiddenCharacter(part: .localpart, "@").description.contains("U+40"))
    }
}
