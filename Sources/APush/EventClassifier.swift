public import XMLStream
import Foundation
import XMPP

/// Classifies a notification (PROTOCOL.md §2.3): from the forwarded stanza when the bridge sent one,
/// else from the stock summary form. Pure: no clock, no store.
///
/// Bodies and encrypted payloads are looked at only to tell a message from a wake and to find a
/// mention of the account; nothing of them leaves this function.
enum EventClassifier {
    static func classify(_ notification: Element?) -> ClassifiedPublish {
        guard let notification else { return ClassifiedPublish(account: nil, event: .wake) }
        let account = notification.findString("{urn:xmpp:apush:bridge:0}account@jid").flatMap(bareJID)
        if let stanza = notification.findElement("{urn:xmpp:forward:0}forwarded/{*}*") {
            // The bridge strips the body, so it finds a mention by name itself (PROTOCOL.md §2.2).
            let bridgeSaysMention = notification.findString("{urn:xmpp:apush:bridge:0}account@mention") == "true"
            return ClassifiedPublish(account: account, event: classify(forwarded: stanza, account: account,
                                                                        bridgeSaysMention: bridgeSaysMention))
        }
        return ClassifiedPublish(account: account, event: classify(summary: notification))
    }

    private static func classify(forwarded message: Element, account: String?, bridgeSaysMention: Bool = false)
        -> PushEvent {
        guard message.name == "message" else { return .wake }
        let from = message.fromString.flatMap { try? JID($0) }
        let fromBare = from?.bare.description

        if let sid = message.findString("{urn:xmpp:jingle-message:0}propose@id"), let from {
            let media = message.findStrings("{urn:xmpp:jingle-message:0}propose/{urn:xmpp:jingle:apps:rtp:1}description@media")
            return .call(CallNotice(chat: from.bare.description, from: from.description, sid: sid, media: media))
        }
        if let sid = message.findString("{urn:xmpp:jingle-message:0}retract@id") {
            return .callEnded(sid: sid, answeredElsewhere: false)
        }
        if let sid = answeredCallSID(message) {
            return .callEnded(sid: sid, answeredElsewhere: true)
        }
        if let account, fromBare == account, let received = message.findElement(
            "{urn:xmpp:carbons:2}received/{urn:xmpp:forward:0}forwarded/{jabber:client}message") {
            // A message to another device of the account, copied to this one (XEP-0280): the copy is
            // what the server pushed for (mod_cloud_notify unwraps it too).
            return classify(forwarded: received, account: account)
        }
        if let sent = message.findElement("{urn:xmpp:carbons:2}sent/{urn:xmpp:forward:0}forwarded/{jabber:client}message") {
            // A call accepted or declined on another device reaches this one as a copy of what it sent.
            if let sid = answeredCallSID(sent) {
                return .callEnded(sid: sid, answeredElsewhere: true)
            }
            if isReadSignal(sent), let chat = sent.toString.flatMap(bareJID) {
                return .read(chat: chat)
            }
            return .wake
        }
        if let chat = message.findString(
            "{http://jabber.org/protocol/pubsub#event}event/items<node=urn:xmpp:mds:displayed:0>/item@id"
        ).flatMap(bareJID) {
            return .read(chat: chat)
        }
        if let account, fromBare == account {
            // The account's own outgoing message, from another of its devices: it has read the chat.
            if isReadSignal(message), let chat = message.toString.flatMap(bareJID), chat != account {
                return .read(chat: chat)
            }
            return .wake
        }
        guard hasContent(message), let from else { return .wake }
        let groupchat = message.stanzaType == "groupchat"
        let originID = message.findString("{urn:xmpp:sid:0}origin-id@id") ?? message.stanzaID
        // The id the app can fetch: the archive's stanza-id, stamped by the room for a group chat and
        // by the account otherwise.
        let archive = groupchat ? from.bare.description : account
        let stanzaID = archive.flatMap { message.findString("{urn:xmpp:sid:0}stanza-id<by=\($0)>@id") }
        return .message(MessageNotice(
            chat: from.bare.description,
            from: bounded(groupchat ? (from.resourcepart ?? "") : from.bare.description),
            groupchat: groupchat,
            mention: groupchat && (bridgeSaysMention || mentions(account, in: message)),
            id: (stanzaID ?? message.stanzaID).flatMap { $0.utf8.count <= maximumIDLength ? $0 : nil },
            // In a room the sender is the occupant (room/nick), not the room: two occupants may reuse an id.
            dedupeKey: originID.map { "\(groupchat ? from.description : from.bare.description)/\($0)" }))
    }

    private static func classify(summary notification: Element) -> PushEvent {
        let summary = #"\{urn:xmpp:push:summary}"#
        guard let body = notification.findString(summary + #"@last-message-body\"#), !body.trimmed.isEmpty else {
            return .wake
        }
        let chat = notification.findString(summary + #"@last-message-sender\"#).flatMap(bareJID) ?? ""
        return .message(MessageNotice(chat: chat, from: chat, groupchat: false, mention: false, id: nil,
                                      dedupeKey: nil))
    }

    /// The SID of a Jingle Message Initiation answer (XEP-0353): the call was taken care of.
    private static func answeredCallSID(_ message: Element) -> String? {
        ["accept", "proceed", "reject"].lazy
            .compactMap { message.findString("{urn:xmpp:jingle-message:0}\($0)@id") }.first
    }

    /// A body or an encrypted payload: something a person would be notified of. The bridge forwards a
    /// body as an empty marker (PROTOCOL.md §2.2) and leaves out one of white space only, so an empty
    /// body counts; a body of white space only (from a server that forwards the text) does not.
    private static func hasContent(_ message: Element) -> Bool {
        if let body = message.findString("body#"), body.isEmpty || !body.trimmed.isEmpty { return true }
        return message.findElement("{eu.siacs.conversations.axolotl}encrypted") != nil
            || message.findElement("{urn:xmpp:omemo:2}encrypted") != nil
            || message.findElement("{urn:xmpp:openpgp:0}openpgp") != nil
            || message.findElement("{jabber:x:encrypted}x") != nil
    }

    /// A displayed marker or a message of its own: the account has seen the chat.
    private static func isReadSignal(_ message: Element) -> Bool {
        message.findElement("{urn:xmpp:chat-markers:0}displayed") != nil || hasContent(message)
    }

    /// XEP-0372 references to the account, or the account's name in the body (read, never kept).
    private static func mentions(_ account: String?, in message: Element) -> Bool {
        guard let account, let jid = try? JID(account) else { return false }
        let uris = message.findStrings("{urn:xmpp:reference:0}reference<type=mention>@uri")
        if uris.contains(where: { $0.hasPrefix("xmpp:") && bareJID(String($0.dropFirst(5))) == account }) {
            return true
        }
        guard let name = jid.localpart, let body = message.findString("body#") else { return false }
        return containsWord(name.lowercased(), in: body.lowercased())
    }

    /// `word` standing on its own: "alice" in "hi alice!" but not in "malice".
    static func containsWord(_ word: String, in text: String) -> Bool {
        var searchStart = text.startIndex
        while let range = text.range(of: word, range: searchStart..<text.endIndex) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            if !(before?.isLetter ?? false) && !(before?.isNumber ?? false)
                && !(after?.isLetter ?? false) && !(after?.isNumber ?? false) {
                return true
            }
            searchStart = range.upperBound
        }
        return false
    }

    /// Ids longer than this are left out, so a sender cannot push the summary past the envelope's limit.
    static let maximumIDLength = 256
    /// Nicks and JIDs are cut to this many characters for the same reason.
    static let maximumNameLength = 256

    private static func bounded(_ name: String) -> String {
        name.count <= maximumNameLength ? name : String(name.prefix(maximumNameLength))
    }

    static func bareJID(_ text: String) -> String? {
        (try? JID(text))?.bare.description
    }
}
