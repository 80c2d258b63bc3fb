import Sealing
import Store
import XMPP

/// The client's publish-options form, as the server echoes it: this is the registration.
struct RegistrationOptions: Sendable, Equatable {
    var pushModule: String
    var deviceKey: [UInt8]
    var calls: CallsMode
    var wantsReads: Bool

    /// Reads the form; a missing module or a key that is not 32 bytes of standard base64 is a
    /// `bad-request` naming the field. Unknown fields are ignored (servers echo forms verbatim).
    init(form: DataForm) throws(StanzaError) {
        guard let module = form.value("pushModule")?.trimmed, !module.isEmpty else {
            throw StanzaError(.badRequest, text: "publish-options: pushModule is missing")
        }
        guard module.utf8.count <= Self.maximumPushModuleLength else {
            throw StanzaError(
                .badRequest,
                text: "publish-options: pushModule is longer than \(Self.maximumPushModuleLength) bytes")
        }
        guard let encodedKey = form.value("apushEncryptionPublicKey")?.trimmed, !encodedKey.isEmpty else {
            throw StanzaError(.badRequest, text: "publish-options: apushEncryptionPublicKey is missing")
        }
        guard let key = Base64.decode(encodedKey), key.count == KeyPair.keyLength else {
            throw StanzaError(
                .badRequest,
                text: "publish-options: apushEncryptionPublicKey must be 32 bytes of standard base64")
        }
        pushModule = module
        deviceKey = key
        switch form.submittedBoolean("apushCalls") {
        case .absent, .other(""), .value(false): calls = .none
        case .value(true): calls = .also
        case .other("only"): calls = .only
        case .other(let other):
            throw StanzaError(
                .badRequest, text: "publish-options: apushCalls '\(other)' is not 0, 1, true, false or only")
        }
        switch form.submittedBoolean("apushRead") {
        case .absent, .other(""), .value(false): wantsReads = false
        case .value(true): wantsReads = true
        case .other(let other):
            throw StanzaError(.badRequest, text: "publish-options: apushRead '\(other)' is not 0, 1, true or false")
        }
    }

    /// The longest pushModule taken: the name of an App Server's module.
    static let maximumPushModuleLength = 256
    /// The longest device token (a publish's node) taken. APNs and FCM tokens are a few hundred bytes at
    /// most, a Web Push endpoint well under this; a longer one is no token, and stored it would travel
    /// with every push of the registration.
    static let maximumTokenLength = 2048

    /// `node` as a device token, or a `bad-request` saying why it is none.
    static func token(_ node: String) throws(StanzaError) -> String {
        guard node.utf8.count <= maximumTokenLength else {
            throw StanzaError(
                .badRequest, text: "the node (the device token) is longer than \(maximumTokenLength) bytes")
        }
        return node
    }

    func request(domain: String, token: String, account: String?) -> RegistrationRequest {
        RegistrationRequest(
            domain: domain, token: token, pushModule: pushModule, account: account,
            deviceKey: deviceKey, calls: calls, wantsReads: wantsReads)
    }
}
