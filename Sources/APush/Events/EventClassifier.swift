import Foundation
import Logging
import XMLStream
import XMPP

/// Classifies a notification (docs/wire-contract.md, Classifying a publish): from the forwarded stanza when the bridge
/// sent one,
/// else from the stock summary form. Pure: no clock, no store.
///
/// Bodies and encrypted payloads are looked at only to tell a message from a wake and to find a
/// mention of the account; nothing of them leaves this function.
enum EventClassifier {
    static func classify(_ notification: Element?) -> ClassifiedPublish {
        guard let notification else { return ClassifiedPublish(account: nil, event: .wake) }
        let account = notification.findString(Path.account).flatMap(bareJID)
        if let stanza = notification.findElement(Path.forwarded) {
            // The bridge strips the body, so it finds a mention by name itself (docs/wire-contract.md, Bridge stanzas).
            let bridgeSaysMention = notification.findString(Path.bridgeMention) == "true"
            return ClassifiedPublish(
                account: account,
                event: classify(
                    forwarded: stanza, account: account,
                    bridgeSaysMention: bridgeSaysMention))
        }
        return ClassifiedPublish(account: account, event: classify(summary: notification))
    }

    private static func classify(forwarded message: Element, account: String?, bridgeSaysMention: Bool = false)
        -> PushEvent
    {
        guard message.name == "message" else { return .wake }
        let from = message.fromString.flatMap { try? JID($0) }
        let fromBare = from?.bare.description

        // A call from the account's own other device is its outgoing call, not one to ring for.
        if let sid = bounded(message.findString(Path.proposeID), Bound.id),
            let from, fromBare != account, let chat = bounded(from.bare.description, Bound.jid)
        {
            return .call(
                CallNotice(
                    chat: chat, from: bounded(from.description, Bound.jid) ?? chat, sid: sid,
                    media: media(of: message)))
        }
        if let sid = bounded(message.findString(Path.retractID), Bound.id), let fromBare {
            // Anyone may send a retract; the service ends the call only if this is its caller.
            return .callEnded(sid: sid, by: fromBare, answeredElsewhere: false)
        }
        // docs/wire-contract.md (Classifying a publish): only the account itself answers elsewhere or reads. The same
        // shapes from
        // anyone else are classified below as what they are from a stranger: a message, or a wake.
        if let account, fromBare == account {
            return classify(own: message, account: account)
        }
        guard hasContent(message), let from, let chat = bounded(from.bare.description, Bound.jid) else {
            return .wake
        }
        let groupchat = message.stanzaType == "groupchat"
        // The id the app can fetch: the archive's stanza-id, stamped by the room for a group chat and
        // by the account otherwise.
        let archive = groupchat ? chat : account
        let stanzaID = archive.flatMap { archiveID(of: message, by: $0) }
        let originID =
            bounded(message.findString(Path.originID), Bound.id)
            ?? bounded(message.stanzaID, Bound.id)
        // In a room the sender is the occupant (room/nick), not the room: two occupants may reuse an id.
        let sender = groupchat ? from.description : chat
        return .message(
            MessageNotice(
                chat: chat,
                from: groupchat ? truncated(from.resourcepart ?? "", Bound.name) : chat,
                groupchat: groupchat,
                mention: groupchat && (bridgeSaysMention || mentions(account, in: message)),
                id: bounded(stanzaID, Bound.id) ?? bounded(message.stanzaID, Bound.id),
                dedupeKey: originID.flatMap { bounded("\(sender)/\($0)", Bound.dedupeKey) }))
    }

    /// A stanza from the account's own bare JID: a copy of what it received or sent, its answer to a
    /// call, a read marker, or an outgoing message from another of its devices.
    private static func classify(own message: Element, account: String) -> PushEvent {
        if let sid = answeredCallSID(message) {
            return .callEnded(sid: sid, by: account, answeredElsewhere: true)
        }
        if let received = message.findElement(Path.receivedCarbon) {
            // A message to another device of the account, copied to this one (XEP-0280): the copy is
            // what the server pushed for (mod_cloud_notify unwraps it too).
            return classify(forwarded: received, account: account)
        }
        if let sent = message.findElement(Path.sentCarbon) {
            // What another device of the account sent, copied to this one; the copy must be of the
            // account's own stanza too.
            guard sent.fromString.flatMap(bareJID) == account else { return .wake }
            return classify(own: sent, account: account)
        }
        if let chat = message.findElements(Path.displayedSynchronization)
            .compactMap({ $0[attribute: "id"].flatMap(bareJID) }).first
        {
            return bounded(chat, Bound.jid).map { .read(chat: $0) } ?? .wake
        }
        // The account's own outgoing message, from another of its devices: it has read the chat.
        if isReadSignal(message), let chat = bounded(message.toString.flatMap(bareJID), Bound.jid), chat != account {
            return .read(chat: chat)
        }
        return .wake
    }

    private static func classify(summary notification: Element) -> PushEvent {
        guard let body = notification.findString(Path.summaryBody), !body.trimmed.isEmpty else {
            return .wake
        }
        let chat = bounded(notification.findString(Path.summarySender).flatMap(bareJID), Bound.jid) ?? ""
        return .message(
            MessageNotice(
                chat: chat, from: chat, groupchat: false, mention: false, id: nil,
                dedupeKey: nil))
    }

    /// The SID of a Jingle Message Initiation answer (XEP-0353): the call was taken care of.
    private static func answeredCallSID(_ message: Element) -> String? {
        let answer = message.findElements(Path.callMessages)
            .first { ["accept", "proceed", "reject"].contains($0.name) }
        return bounded(answer?[attribute: "id"], Bound.id)
    }

    /// A body or an encrypted payload: something a person would be notified of. The bridge forwards a
    /// body as an empty marker (docs/wire-contract.md, Bridge stanzas) and leaves out one of white space only, so an
    /// empty
    /// body counts; a body of white space only (from a server that forwards the text) does not.
    private static func hasContent(_ message: Element) -> Bool {
        if let body = message.findString("body#"), body.isEmpty || !body.trimmed.isEmpty { return true }
        return Path.encryptedPayloads.contains { message.findElement($0) != nil }
    }

    /// A displayed marker or a message of its own: the account has seen the chat.
    private static func isReadSignal(_ message: Element) -> Bool {
        message.findElement(Path.displayedMarker) != nil || hasContent(message)
    }

    /// XEP-0372 references to the account, or the account's name in the body (read, never kept).
    private static func mentions(_ account: String?, in message: Element) -> Bool {
        guard let account, let jid = try? JID(account) else { return false }
        let uris = message.findStrings(Path.mentionURIs)
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
                && !(after?.isLetter ?? false) && !(after?.isNumber ?? false)
            {
                return true
            }
            searchStart = range.upperBound
        }
        return false
    }

    /// The archive id its server `by` stamped on the message. The `by` attribute is compared here as
    /// a JID, never written into a query path: data must not become query syntax.
    private static func archiveID(of message: Element, by archive: String) -> String? {
        message.findElements(Path.stanzaIDs)
            .first { $0[attribute: "by"].flatMap(bareJID) == archive }?[attribute: "id"]
    }

    /// The media of a call proposal: known-short words, each once, a few at most.
    private static func media(of message: Element) -> [String] {
        var media: [String] = []
        for medium in message.findStrings(Path.proposedMedia) {
            // The store keeps media as one space-separated list: a medium holds no space.
            guard media.count < Bound.media, let medium = bounded(medium, Bound.medium), !medium.isEmpty,
                !medium.contains(where: \.isWhitespace), !media.contains(medium)
            else { continue }
            media.append(medium)
        }
        return media
    }

    /// The paths read, spelled once from the namespaces' constants (never from data: see Query).
    private enum Path {
        static let account = "{\(APushNamespace.bridge)}account@jid"
        static let bridgeMention = "{\(APushNamespace.bridge)}account@mention"
        static let forwarded = "{\(Namespace.forward)}forwarded/{*}*"
        static let proposeID = "{\(Namespace.jingleMessage)}propose@id"
        static let retractID = "{\(Namespace.jingleMessage)}retract@id"
        static let callMessages = "{\(Namespace.jingleMessage)}*"
        static let proposedMedia = "{\(Namespace.jingleMessage)}propose/{\(Namespace.jingleRTP)}description@media"
        static let originID = "{\(Namespace.sid)}origin-id@id"
        static let stanzaIDs = "{\(Namespace.sid)}stanza-id"
        static let receivedCarbon = "{\(Namespace.carbons)}received/" + forwardedMessage
        static let sentCarbon = "{\(Namespace.carbons)}sent/" + forwardedMessage
        static let forwardedMessage = "{\(Namespace.forward)}forwarded/{\(Namespace.client)}message"
        static let displayedSynchronization = "{\(Namespace.pubsubEvent)}event/items<node=\(Namespace.mds)>/item"
        static let summaryBody = #"\{"# + Namespace.pushSummary + #"}@last-message-body\"#
        static let summarySender = #"\{"# + Namespace.pushSummary + #"}@last-message-sender\"#
        static let encryptedPayloads = [
            "{\(Namespace.omemo)}encrypted", "{\(Namespace.omemo2)}encrypted",
            "{\(Namespace.openPGP)}openpgp", "{\(Namespace.legacyPGP)}x",
        ]
        static let displayedMarker = "{\(Namespace.chatMarkers)}displayed"
        static let mentionURIs = "{\(Namespace.references)}reference<type=mention>@uri"
    }

    /// Bounds on what a sender writes, in bytes as the summary's JSON spells a value (quotes and
    /// backslashes escaped). Together they take at most about 1.6 KiB of the envelope's 2256 bytes
    /// (a missed call: chat and from 512 each, sid 256, media 4 × 16, the keys), leaving the rest
    /// for the account. So no sender can grow a stored row or push a summary past the limit.
    enum Bound {
        /// Stanza ids, origin-ids and call SIDs; a longer one is left out (a longer SID makes no call).
        static let id = 256
        /// Nicks, cut to this.
        static let name = 256
        /// A chat's or sender's JID (RFC 7622 allows 1023 bytes a part); a longer one files nothing.
        static let jid = 512
        /// Media of a call: at most this many, each at most `medium` long.
        static let media = 4
        static let medium = 16
        /// The dedupe key as stored (sender and id); a longer one is not deduplicated.
        static let dedupeKey = 1024
    }

    /// `text` when its JSON spelling fits in `bytes`, else nil.
    static func bounded(_ text: String?, _ bytes: Int) -> String? {
        guard let text, text.utf8.count <= bytes else { return nil }
        return jsonLength(text) <= bytes ? text : nil
    }

    /// `name`, cut (between scalars) to the longest start whose JSON spelling fits in `bytes`.
    static func truncated(_ name: String, _ bytes: Int) -> String {
        if let whole = bounded(name, bytes) { return whole }
        var kept = String.UnicodeScalarView()
        var used = 0
        for scalar in name.unicodeScalars {
            used += jsonLength(String(scalar))
            if used > bytes { break }
            kept.append(scalar)
        }
        return String(kept)
    }

    private static func jsonLength(_ text: String) -> Int {
        JSONObjectWriter.quoted(text).utf8.count - 2
    }

    static func bareJID(_ text: String) -> String? {
        (try? JID(text))?.bare.description
    }
}
