import CXML2

/// What the reader reports about an XMPP stream, in document order.
public enum StreamEvent: Sendable, Equatable {
    /// The stream root (`stream:stream`) with its attributes and no children.
    case streamStart(Element)
    /// A complete child of the stream root: a stanza, or a stream-level element such as `handshake`.
    case stanza(Element)
    /// A child of the stream root that broke a per-stanza limit (`reason`): the reader kept only its
    /// start tag (name, namespace and attributes, no children), skipped the rest, and reads on, so the
    /// session can refuse that one stanza and keep the stream.
    case skippedStanza(Element, reason: StreamParseError)
    /// The peer closed the stream root.
    case streamEnd
}

/// Caps that keep a hostile or broken peer from making the reader buffer without bound.
public struct StreamLimits: Sendable {
    /// The most bytes one stanza may take on the wire, counted from its `<` to the end of its closing
    /// tag (whitespace between stanzas is not counted). Checked while the stanza is still arriving.
    /// The stream header (everything up to the end of the root's start tag) is held to it too.
    public var maxStanzaBytes: Int
    /// The most levels of elements one stanza may nest, the stanza itself being level 1 (the stream
    /// root is not counted): with 32, a stanza at document depth 2 may hold elements down to depth 33.
    public var maxDepth: Int
    /// While a stanza over either limit is skipped, libxml2 still holds each tag (start tag with its
    /// attributes, or an unfinished reference) whole until it ends: one tag longer than this ends the
    /// stream. Above `maxStanzaBytes`, so that a server's re-escaping (`'` as `&apos;`) of one attribute
    /// a user wrote within the server's own limit is still skipped rather than fatal.
    public var maxSkippedTagBytes: Int
    /// libxml2 keeps a frame for every open element even while a stanza is skipped: a skipped stanza
    /// nesting deeper than this (document depth) ends the stream.
    public var maxSkippedDepth: Int

    public init(
        maxStanzaBytes: Int = 262_144, maxDepth: Int = 32, maxSkippedTagBytes: Int = 4_194_304,
        maxSkippedDepth: Int = 1_024
    ) {
        self.maxStanzaBytes = maxStanzaBytes
        self.maxDepth = maxDepth
        self.maxSkippedTagBytes = maxSkippedTagBytes
        self.maxSkippedDepth = maxSkippedDepth
    }
}

/// Why the reader gave up. Each condition is the RFC 6120 stream error the session should send.
public struct StreamParseError: Error, Equatable {
    public enum Condition: String, Sendable {
        case notWellFormed = "not-well-formed"
        case restrictedXML = "restricted-xml"
        case policyViolation = "policy-violation"
        case invalidNamespace = "invalid-namespace"
    }

    public var condition: Condition
    /// A short description for logs; never contains character data from the stream.
    public var text: String

    public init(condition: Condition, text: String) {
        self.condition = condition
        self.text = text
    }
}

extension StreamParseError: CustomStringConvertible {
    public var description: String { "\(condition.rawValue): \(text)" }
}

/// An incremental reader of one XMPP stream over libxml2's SAX2 push parser.
///
/// Feed it bytes as they arrive; it returns the events they complete. It rejects what RFC 6120
/// §11.1 restricts (DTDs, entity declarations and references other than the predefined ones,
/// processing instructions, comments), never loads anything from the network, and enforces
/// `StreamLimits`. A stanza over the size or depth limit is skipped without being kept (`skippedStanza`);
/// what cannot be skipped ends the stream: malformed or restricted XML, a stanza whose own start tag
/// is over the size limit (there is nothing to answer yet), one tag over `maxSkippedTagBytes`, and
/// nesting past `maxSkippedDepth`. After an error every later `feed` throws the same
/// error until `reset()`.
///
/// Owned by one task: it is not `Sendable`.
public final class StreamParser {
    enum Mode {
        /// A `stream:stream` root whose children are reported one by one.
        case stream
        /// A standalone element, kept whole (see `Element.parse`).
        case document
    }

    private let limits: StreamLimits
    private let mode: Mode
    private var context: xmlParserCtxtPtr

    /// Document depth of the innermost open element (the stream root is 1).
    private var depth = 0
    /// The open elements of the stanza being built, outermost first.
    private var frames: [Frame] = []
    private var events: [StreamEvent] = []
    private var document: Element?
    private var failure: StreamParseError?
    /// The start tag of the stanza being skipped, and why; nil when none is.
    private var skipping: (head: Element, reason: StreamParseError)?
    /// Total bytes handed to libxml2 since the stream began.
    private var fedBytes = 0
    /// The byte offset where the current stanza (or the gap before it) began: everything fed since
    /// then counts against `maxStanzaBytes`.
    private var stanzaStart = 0

    /// libxml2 is fed at most this much at a time, so the size limit is checked often enough that an
    /// endless stanza is cut off without being buffered whole.
    private static let sliceBytes = 16_384
    private static let streamsNamespace = "http://etherx.jabber.org/streams"

    public convenience init(limits: StreamLimits = .init()) {
        self.init(limits: limits, mode: .stream)
    }

    init(limits: StreamLimits, mode: Mode) {
        self.limits = limits
        self.mode = mode
        context = Self.makeContext()
        context.pointee._private = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        xmlFreeParserCtxt(context)
    }

    /// Parses the next bytes of the stream and returns the events they complete.
    public func feed(_ bytes: some Collection<UInt8>) throws(StreamParseError) -> [StreamEvent] {
        try parse(bytes, terminate: false)
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    /// Forgets everything and starts reading a new stream, as after a reconnect.
    public func reset() {
        xmlFreeParserCtxt(context)
        context = Self.makeContext()
        context.pointee._private = Unmanaged.passUnretained(self).toOpaque()
        depth = 0
        frames = []
        events = []
        document = nil
        failure = nil
        skipping = nil
        fedBytes = 0
        stanzaStart = 0
    }

    /// Parses a whole document in `.document` mode and returns its root element.
    func parseDocument(_ bytes: some Collection<UInt8>) throws(StreamParseError) -> Element {
        try parse(bytes, terminate: true)
        guard let document else {
            throw StreamParseError(condition: .notWellFormed, text: "no element")
        }
        return document
    }

    private func parse(_ bytes: some Collection<UInt8>, terminate: Bool) throws(StreamParseError) {
        if let failure { throw failure }
        let outcome =
            bytes.withContiguousStorageIfAvailable { parse($0, terminate: terminate) }
            ?? Array(bytes).withUnsafeBufferPointer { parse($0, terminate: terminate) }
        if let outcome {
            events.removeAll()
            frames.removeAll()
            throw outcome
        }
    }

    /// Feeds the buffer to libxml2 slice by slice; returns the error that ended the stream, if any.
    private func parse(_ buffer: UnsafeBufferPointer<UInt8>, terminate: Bool) -> StreamParseError? {
        var remaining = buffer[...]
        repeat {
            let slice = UnsafeBufferPointer(rebasing: remaining.prefix(Self.sliceBytes))
            remaining = remaining.dropFirst(slice.count)
            fedBytes += slice.count
            let isLast = terminate && remaining.isEmpty
            let status = slice.withMemoryRebound(to: CChar.self) { chars in
                xmlParseChunk(context, chars.baseAddress, Int32(chars.count), isLast ? 1 : 0)
            }
            if failure == nil, status != 0 {
                // Every libxml2 error reaches `failed(with:)`; this only guards against one that did not.
                failure = StreamParseError(condition: .notWellFormed, text: "libxml2 error \(status)")
            }
            if failure == nil {
                skipWhitespaceBetweenStanzas()
                checkSizeLimits()
            }
            if let failure {
                xmlStopParser(context)
                return failure
            }
        } while !remaining.isEmpty
        return nil
    }

    private static func makeContext() -> xmlParserCtxtPtr {
        _ = libxml2Initialized
        var handler = xmlSAXHandler()
        handler.initialized = UInt32(XML_SAX2_MAGIC)
        handler.startElementNs = { ctx, localName, prefix, uri, namespaceCount, _, attributeCount, _, attributes in
            parser(ctx).startElement(
                localName: localName, uri: uri, attributeCount: Int(attributeCount), attributes: attributes)
        }
        handler.endElementNs = { ctx, _, _, _ in parser(ctx).endElement() }
        handler.characters = { ctx, chars, length in parser(ctx).characters(chars, Int(length)) }
        handler.ignorableWhitespace = handler.characters
        handler.cdataBlock = handler.characters
        handler.internalSubset = { ctx, _, _, _ in
            parser(ctx).restrict("DTDs are not allowed")
            // Safe here: libxml2 checks for a stopped parser right after this callback, so the
            // internal subset (and any entity declared in it) is never read.
            xmlStopParser(ctx?.assumingMemoryBound(to: xmlParserCtxt.self))
        }
        handler.externalSubset = { ctx, _, _, _ in parser(ctx).restrict("DTDs are not allowed") }
        handler.entityDecl = { ctx, _, _, _, _, _ in parser(ctx).restrict("entity declarations are not allowed") }
        handler.unparsedEntityDecl = { ctx, _, _, _, _ in
            parser(ctx).restrict("entity declarations are not allowed")
        }
        handler.getEntity = { ctx, _ in
            // Only called for entities other than the five predefined ones.
            parser(ctx).restrict("entity references are not allowed")
            return nil
        }
        handler.getParameterEntity = { ctx, _ in
            parser(ctx).restrict("entity references are not allowed")
            return nil
        }
        handler.resolveEntity = { ctx, _, _ in
            parser(ctx).restrict("external entities are not allowed")
            return nil
        }
        handler.processingInstruction = { ctx, _, _ in
            parser(ctx).restrict("processing instructions are not allowed")
        }
        handler.comment = { ctx, _ in parser(ctx).restrict("comments are not allowed") }
        handler.serror = { ctx, error in
            guard let ctx, let error, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
            parser(ctx).failed(with: error.pointee)
        }
        // libxml2 copies the handler, so a local is enough.
        guard let context = xmlCreatePushParserCtxt(&handler, nil, nil, 0, nil) else {
            fatalError("libxml2 could not allocate a parser context")
        }
        // Never touch the network, and read UTF-8 whatever the XML declaration claims (RFC 6120 §11.6).
        // XML_PARSE_NOENT and the DTD-loading options stay off: entities are never substituted or loaded.
        xmlCtxtUseOptions(context, Int32(XML_PARSE_NONET.rawValue | XML_PARSE_IGNORE_ENC.rawValue))
        return context
    }

    // MARK: - SAX events

    private func startElement(
        localName: UnsafePointer<xmlChar>?, uri: UnsafePointer<xmlChar>?, attributeCount: Int,
        attributes: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) {
        guard failure == nil else { return }
        depth += 1
        let name = string(localName)
        let attributes = Self.attributes(attributeCount, attributes)
        if mode == .stream && depth == 1 {
            let namespace = uri.map(Self.namespaceURI)
            guard name == "stream", namespace == Self.streamsNamespace else {
                fail(.invalidNamespace, "the stream root must be <stream xmlns='\(Self.streamsNamespace)'>")
                return
            }
            events.append(.streamStart(Element(name, namespace: namespace, attributes: attributes)))
            // libxml2 reports the start tag with its closing `>` not yet consumed.
            stanzaStart = position + 1
            return
        }
        guard skipping == nil else {
            if depth > limits.maxSkippedDepth {
                fail(.policyViolation, "elements nest deeper than \(limits.maxSkippedDepth) levels")
            }
            return
        }
        guard depth - stanzaDepth < limits.maxDepth else {
            refuseStanza(.policyViolation, "elements nest deeper than \(limits.maxDepth) levels")
            return
        }
        let parentNamespace =
            frames.isEmpty
            ? (mode == .stream ? Self.streamsNamespace : nil)
            : frames[frames.count - 1].element.namespace
        // An element outside every namespace under a namespaced parent (`xmlns=''`) gets "" rather than
        // nil, because nil means "the parent's namespace" when an element is serialised.
        let namespace = uri.map(Self.namespaceURI) ?? (parentNamespace == nil ? nil : "")
        if !frames.isEmpty { frames[frames.count - 1].flushText() }
        frames.append(Frame(element: Element(name, namespace: namespace, attributes: attributes)))
    }

    private func endElement() {
        guard failure == nil else { return }
        defer { depth -= 1 }
        if mode == .stream && depth == 1 {
            events.append(.streamEnd)
            return
        }
        if skipping != nil {
            if depth == stanzaDepth { endSkippedStanza() }
            return
        }
        var frame = frames.removeLast()
        frame.flushText()
        guard frames.isEmpty else {
            frames[frames.count - 1].element.children.append(.element(frame.element))
            return
        }
        let end = position
        guard end - stanzaStart <= limits.maxStanzaBytes else {
            // Complete, yet over the limit: refused like one cut off while it arrives.
            frames = [frame]
            refuseStanza(.policyViolation, stanzaTooLarge)
            if skipping != nil { endSkippedStanza() }
            return
        }
        stanzaStart = end
        switch mode {
        case .stream: events.append(.stanza(frame.element))
        case .document: document = frame.element
        }
    }

    private func characters(_ chars: UnsafePointer<xmlChar>?, _ length: Int) {
        guard failure == nil, skipping == nil, let chars else { return }
        guard !frames.isEmpty else {
            // Text between stanzas (whitespace keepalives) is not part of any stanza. libxml2 either
            // hands over its input buffer before consuming the text, or a copy after consuming it.
            let isUnconsumed = UnsafeRawPointer(chars) == UnsafeRawPointer(context.pointee.input.pointee.cur)
            stanzaStart = max(stanzaStart, isUnconsumed ? position + length : position)
            return
        }
        frames[frames.count - 1].text.append(contentsOf: UnsafeBufferPointer(start: chars, count: length))
    }

    private func failed(with error: xmlError) {
        guard failure == nil else { return }
        var message = error.message.map { String(cString: $0) } ?? "malformed XML"
        while message.last?.isWhitespace == true { message.removeLast() }
        fail(.notWellFormed, message)
    }

    private func restrict(_ text: String) {
        fail(.restrictedXML, text)
    }

    private var stanzaTooLarge: String { "a stanza exceeds \(limits.maxStanzaBytes) bytes" }

    /// After each slice: a stanza over the size limit is skipped from here on, if it can be (its start
    /// tag is read); while one is skipped, what libxml2 holds unread is bounded instead.
    private func checkSizeLimits() {
        if skipping != nil {
            if fedBytes - position > limits.maxSkippedTagBytes {
                fail(.policyViolation, "a tag exceeds \(limits.maxSkippedTagBytes) bytes")
            }
        } else if fedBytes - stanzaStart > limits.maxStanzaBytes {
            refuseStanza(.policyViolation, stanzaTooLarge)
        }
    }

    private func endSkippedStanza() {
        guard let skipped = skipping else { return }
        skipping = nil
        stanzaStart = position
        events.append(.skippedStanza(skipped.head, reason: skipped.reason))
    }

    /// Drops what was built of the current stanza and skips the rest of it, keeping its start tag to
    /// report. Fails the stream instead when there is no stanza to report (its start tag is not read
    /// yet) or no stream to go on with (a standalone document).
    private func refuseStanza(_ condition: StreamParseError.Condition, _ text: String) {
        guard mode == .stream, let stanza = frames.first?.element else {
            fail(condition, text)
            return
        }
        skipping = (
            Element(stanza.name, namespace: stanza.namespace, attributes: stanza.attributes),
            StreamParseError(condition: condition, text: text)
        )
        frames = []
    }

    /// Records the first error and silences libxml2's callbacks. The parser itself is stopped once
    /// control returns to `parse`: stopping it inside most callbacks frees input libxml2 still reads.
    private func fail(_ condition: StreamParseError.Condition, _ text: String) {
        guard failure == nil else { return }
        failure = StreamParseError(condition: condition, text: text)
        context.pointee.disableSAX = 1
    }

    // MARK: - Helpers

    /// Document depth of a stanza: the stream root's children, or the document's root.
    private var stanzaDepth: Int { mode == .stream ? 2 : 1 }

    /// The offset of libxml2's read position from the start of the stream.
    private var position: Int { Int(xmlByteConsumed(context)) }

    /// Moves the stanza start past whitespace libxml2 holds unparsed between stanzas, so keepalives
    /// never count against the next stanza.
    private func skipWhitespaceBetweenStanzas() {
        guard frames.isEmpty, depth == stanzaDepth - 1, let input = context.pointee.input,
            var cursor = input.pointee.cur, let end = input.pointee.end
        else { return }
        let start = cursor
        while cursor < end, isXMLWhitespace(cursor.pointee) { cursor += 1 }
        stanzaStart = max(stanzaStart, position + (cursor - start))
    }

    /// SAX2 hands attributes as (local name, prefix, URI, value start, value end) quintuples.
    private static func attributes(
        _ count: Int, _ quintuples: UnsafeMutablePointer<UnsafePointer<xmlChar>?>?
    ) -> [Attribute] {
        guard count > 0, let quintuples else { return [] }
        return (0..<count).map { index in
            let fields = quintuples + index * 5
            let localName = string(fields[0])
            let name = fields[1].map { string($0) + ":" + localName } ?? localName
            guard let start = fields[3], let end = fields[4] else { return Attribute(name, "") }
            return Attribute(name, attributeValue(UnsafeBufferPointer(start: start, count: end - start)))
        }
    }

    /// A namespace URI (an `xmlns` value), which libxml2 hands over escaped as `attributeValue` says.
    private static func namespaceURI(_ uri: UnsafePointer<xmlChar>) -> String {
        attributeValue(UnsafeBufferPointer(start: uri, count: Int(xmlStrlen(uri))))
    }

    /// Without entity substitution libxml2 reports an `&` that came from `&amp;` or `&#38;` as the
    /// five bytes `&#38;` (for its tree builder to decode later), and a literal `&` cannot reach this
    /// buffer any other way, so each `&#38;` here stands for one `&`.
    private static func attributeValue(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        guard bytes.contains(UInt8(ascii: "&")) else { return String(decoding: bytes, as: UTF8.self) }
        let escapedAmpersand = Array("&#38;".utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            decoded.append(bytes[index])
            let isEscapedAmpersand = bytes[index...].starts(with: escapedAmpersand)
            index += isEscapedAmpersand ? escapedAmpersand.count : 1
        }
        return String(decoding: decoded, as: UTF8.self)
    }
}

@available(*, unavailable)
extension StreamParser: Sendable {}

/// An element being built, with the character data that has arrived since its last child.
private struct Frame {
    var element: Element
    var text: [UInt8] = []

    /// Adjacent text pieces (libxml2 splits text at chunk and entity boundaries, CDATA included)
    /// become one text node.
    mutating func flushText() {
        guard !text.isEmpty else { return }
        element.children.append(.text(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }
}

/// Thread-safe one-time libxml2 set-up, run before the first context is created.
private let libxml2Initialized: Void = xmlInitParser()

private func parser(_ ctx: UnsafeMutableRawPointer?) -> StreamParser {
    // The push context is the callbacks' user data; `_private` holds the unretained StreamParser.
    let context = ctx.unsafelyUnwrapped.assumingMemoryBound(to: xmlParserCtxt.self)
    return Unmanaged<StreamParser>.fromOpaque(context.pointee._private).takeUnretainedValue()
}

private func isXMLWhitespace(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x20, 0x09, 0x0A, 0x0D: true
    default: false
    }
}

private func string(_ text: UnsafePointer<xmlChar>?) -> String {
    guard let text else { return "" }
    return String(cString: text)
}
