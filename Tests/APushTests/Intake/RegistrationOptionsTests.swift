import Sealing
import Store
import Testing
import XMLStream
import XMPP

@testable import APush

@Suite struct RegistrationOptionsTests {
    static let key = Array(0..<32).map(UInt8.init)

    static func form(_ values: [(String, String)]) throws -> DataForm {
        let fields = values.map { "<field var='\($0.0)'><value>\($0.1)</value></field>" }.joined()
        return try DataForm(
            element: try Element.parse(
                """
                <x xmlns='jabber:x:data' type='submit'><field var='FORM_TYPE'>\
                <value>http://jabber.org/protocol/pubsub#publish-options</value></field>\(fields)</x>
                """))
    }

    static func options(_ extra: [(String, String)] = []) throws -> RegistrationOptions {
        try RegistrationOptions(
            form: form(
                [("pushModule", "apush"), ("apushEncryptionPublicKey", Base64.encode(key))]
                    + extra))
    }

    @Test func readsTheModuleAndTheKey() throws {
        let options = try Self.options()
        #expect(options.pushModule == "apush")
        #expect(options.deviceKey == Self.key)
        #expect(options.calls == .none)
        #expect(options.wantsReads == false)
    }

    @Test(arguments: [
        ([("apushEncryptionPublicKey", Base64.encode(key))], "pushModule"),
        ([("pushModule", ""), ("apushEncryptionPublicKey", Base64.encode(key))], "pushModule"),
        ([("pushModule", "apush")], "apushEncryptionPublicKey"),
        (
            [
                ("pushModule", "apush"),
                ("apushEncryptionPublicKey", Base64.encodeURLNoPad([UInt8](repeating: 0xfb, count: 32))),
            ],
            "apushEncryptionPublicKey"
        ),
        (
            [("pushModule", "apush"), ("apushEncryptionPublicKey", Base64.encode([UInt8](repeating: 1, count: 31)))],
            "apushEncryptionPublicKey"
        ),
        (
            [("pushModule", "apush"), ("apushEncryptionPublicKey", Base64.encode([UInt8](repeating: 1, count: 33)))],
            "apushEncryptionPublicKey"
        ),
        ([("pushModule", "apush"), ("apushEncryptionPublicKey", "not base64!")], "apushEncryptionPublicKey"),
        (
            [("pushModule", "apush"), ("apushEncryptionPublicKey", Base64.encode(key)), ("apushCalls", "maybe")],
            "apushCalls"
        ),
        (
            [("pushModule", "apush"), ("apushEncryptionPublicKey", Base64.encode(key)), ("apushRead", "only")],
            "apushRead"
        ),
    ])
    func refusesABadFormNamingTheField(_ values: [(String, String)], field: String) throws {
        let error = #expect(throws: StanzaError.self) { try RegistrationOptions(form: Self.form(values)) }
        #expect(error?.condition == .badRequest)
        #expect(error?.type == .modify)
        #expect(error?.text?.contains(field) == true)
    }

    @Test func base64urlKeysAreRefusedEvenWhenTheyDecodeElsewhere() throws {
        // 0xfb bytes give '-' and '_' in base64url: a key in the wrong alphabet, not 32 bytes of standard base64.
        let urlKey = Base64.encodeURLNoPad([UInt8](repeating: 0xfb, count: 32)) + "="
        #expect(urlKey.contains("-") || urlKey.contains("_"))
        #expect(throws: StanzaError.self) {
            try RegistrationOptions(form: Self.form([("pushModule", "apush"), ("apushEncryptionPublicKey", urlKey)]))
        }
    }

    @Test(
        arguments: [
            (nil, CallsMode.none), ("0", .none), ("false", .none), ("", .none), ("1", .also), ("true", .also),
            ("TRUE", .also), (" only ", .only),
        ] as [(String?, CallsMode)])
    func readsApushCalls(_ value: String?, expected: CallsMode) throws {
        let options = try Self.options(value.map { [("apushCalls", $0)] } ?? [])
        #expect(options.calls == expected)
    }

    @Test(arguments: [(nil, false), ("0", false), ("false", false), ("1", true), ("true", true)] as [(String?, Bool)])
    func readsApushRead(_ value: String?, expected: Bool) throws {
        let options = try Self.options(value.map { [("apushRead", $0)] } ?? [])
        #expect(options.wantsReads == expected)
    }

    @Test func ignoresUnknownFields() throws {
        let options = try Self.options([("apushSomethingNew", "x"), ("secret", "y")])
        #expect(options == (try Self.options()))
    }

    @Test func becomesARegistrationRequest() throws {
        let options = try Self.options([("apushCalls", "only"), ("apushRead", "1")])
        let request = options.request(domain: "localhost", token: "tok", account: "alice@localhost")
        #expect(
            request
                == RegistrationRequest(
                    domain: "localhost", token: "tok", pushModule: "apush",
                    account: "alice@localhost", deviceKey: Self.key, calls: .only,
                    wantsReads: true))
    }

    /// A client writes the form the server stores and echoes on every push: a module name or a token
    /// of any length would be stored and travel upstream with each push.
    @Test func aPushModuleOrATokenPastItsBoundIsABadRequest() throws {
        let longest = String(repeating: "m", count: RegistrationOptions.maximumPushModuleLength)
        func options(module: String) throws -> RegistrationOptions {
            try RegistrationOptions(
                form: Self.form([("pushModule", module), ("apushEncryptionPublicKey", Base64.encode(Self.key))]))
        }
        #expect(try options(module: longest).pushModule == longest)
        let error = #expect(throws: StanzaError.self) { try options(module: longest + "m") }
        #expect(error?.condition == .badRequest)
        #expect(error?.text?.contains("pushModule") == true)

        let token = String(repeating: "t", count: RegistrationOptions.maximumTokenLength)
        #expect(try RegistrationOptions.token(token) == token)
        #expect(throws: StanzaError.self) { try RegistrationOptions.token(token + "t") }
    }
}
