// The stanza query language: how handlers read stanzas instead of walking elements by hand.
//
// It is a superset of Prosody's `util.stanza` `find` paths (`{ns}name/child@attr`, `name#`), with the
// extensions Monal's `MLXMLNode` added (wildcards, `..`, attribute filters, `$`, conversions and a
// data-form sub-query). A path is compiled once into a `Query`; string paths are cached.
//
// Grammar
//
//     query      := ["/"] [segment ("/" segment)*] ["|" conversion]
//     segment    := ".." [extraction]                 ascend to the parent of each match
//                 | selector [extraction]
//                 | extraction                        applies to the current element(s)
//     selector   := ["{" namespace "}"] name filter*
//     namespace  := URI | "*"                         "*": any namespace
//     name       := NAME | "*" | "!" NAME             "*": any name; "!x": any name but x
//     filter     := "<" attribute ["=" value] ">"     attribute present (and equal to value)
//     extraction := "@" attribute                     the attribute's value
//                 | "#"                               the element's text
//                 | "$"                               the element's name
//                 | "\" formquery "\"                 a data-form sub-query (below)
//     conversion := "int" | "uint" | "bool" | "datetime" | "base64"
//
// * Each segment selects among the children of the elements reached so far; a segment without
//   `{namespace}` means the namespace of that parent (Prosody's rule), so `body#` on a
//   `jabber:client` message reads the `jabber:client` body only.
// * A leading "/" makes the first segment select the element the query runs on, instead of its
//   children; there, an omitted name and namespace mean "anything": `/<type=result>/…`, `/@id`.
// * An extraction may only end the path. Without one, the results are the matched elements.
// * A filter value runs up to the next ">" and may hold "/", "{" or "@" but not ">".
// * Conversions need an extraction. A value that does not convert is left out of the results
//   (`|int` of "abc", `|bool` of "yes"). `bool`: `1`/`true`, `0`/`false`. `uint`: an `int` ≥ 0.
//   `datetime`: XEP-0082 DateTime (`2002-09-10T23:08:25Z`, fraction and ±hh:mm offset allowed) or
//   legacy XEP-0091 (`20020910T23:08:25`); no offset means UTC. `base64`: bytes, whitespace ignored.
//
// Data-form sub-query (XEP-0004, XEP-0068)
//
//     formquery  := ["{" FORM_TYPE "}"] [formtype] ["[" index "]"] ["@" field]
//
// It selects `<x xmlns='jabber:x:data'/>` elements: those the segment names, or, when the segment is
// only the sub-query, the `{jabber:x:data}x` children of the current element. `{FORM_TYPE}` keeps the
// forms whose FORM_TYPE field has that value and `formtype` those of that `type` (`form`, `submit`,
// `result`, `cancel`); `*` or omission means any. `@field` yields each value of that field (none
// when the field has no value); `[index]` reads the field from that `<item/>` of a multi-item form.
// Without `@field` the forms themselves are the results. Malformed forms match nothing.
//
// Examples (on the push publish of the fixtures, an `<iq/>` holding `<pubsub/>`):
//
//     {http://jabber.org/protocol/pubsub}pubsub/publish@node                          "tok123"
//     {http://jabber.org/protocol/pubsub}pubsub/publish-options/\{http://jabber.org/protocol/pubsub#publish-options}submit@pushModule\
//                                                                                     "apush"
//     {http://jabber.org/protocol/pubsub}pubsub/publish/item/{urn:xmpp:push:0}notification/\{urn:xmpp:push:summary}@message-count\|int
//                                                                                     1
//     …/{urn:xmpp:forward:0}forwarded/{jabber:client}message/body#                     the body text
//     …/{jabber:client}message/{urn:xmpp:delay}delay@stamp|datetime                    a Date
//     /<type=set>/{http://jabber.org/protocol/pubsub}pubsub/publish/../../@id          the iq's id
//     error/{urn:ietf:params:xml:ns:xmpp-stanzas}!text$                                the condition of an error stanza
//     @type                                                                           the stanza's type
//
// In Swift source, write paths holding "\" as raw strings: #"…/\{…}submit@pushModule\"#.
//
// API: `Element.find(_:)` gives every result in document order, `findFirst(_:)` the first, `check(_:)`
// whether there is one; `findElement(s)`/`findString(s)` keep the results of that kind; `findInt`,
// `findBool`, `findDate` and `findBytes` take the first result of their type, converting a string
// result as `|int`, `|bool`, `|datetime` or `|base64` would. Each takes a path string, compiled once
// and then cached; an invalid path matches nothing (see `compiled(_:)`). `find` and `findFirst` also
// take a compiled `Query` (`Query(_:)` throws a `QueryError` saying what is wrong with a path).
//
// Paths are literals: never write data (a JID, an id) into one. A value from a stanza could fuse with
// the syntax around it (a combining mark with "=", a prepend character with ">") or hold ">" itself.
// Select with a literal path and compare the value in Swift instead.

public import Foundation
import Synchronization
public import XMLStream

/// A compiled query path. Compile paths used on hot paths once, or rely on the string cache.
public struct Query: Sendable, Hashable, CustomStringConvertible {
    /// The path as written.
    public let path: String
    let isRooted: Bool
    let steps: [Step]
    let extraction: Extraction?
    let conversion: Conversion?

    public init(_ path: String) throws(QueryError) {
        var parser = QueryParser(path)
        self = try parser.parse()
    }

    init(path: String, isRooted: Bool, steps: [Step], extraction: Extraction?, conversion: Conversion?) {
        self.path = path
        self.isRooted = isRooted
        self.steps = steps
        self.extraction = extraction
        self.conversion = conversion
    }

    public var description: String { path }

    enum Step: Sendable, Hashable {
        case select(Selector)
        case parent
    }

    struct Selector: Sendable, Hashable {
        enum NamespaceMatch: Sendable, Hashable {
            case parents, any
            case exactly(String)
        }
        enum NameMatch: Sendable, Hashable {
            case any
            case exactly(String)
            case not(String)
        }
        struct Filter: Sendable, Hashable {
            let attribute: String
            let value: String?
        }

        var namespace: NamespaceMatch
        var name: NameMatch
        var filters: [Filter]

        static let dataForm = Selector(namespace: .exactly(Namespace.dataForms), name: .exactly("x"), filters: [])
    }

    enum Extraction: Sendable, Hashable {
        case attribute(String)
        case text
        case name
        case form(FormQuery)
    }

    struct FormQuery: Sendable, Hashable {
        /// Nil: any FORM_TYPE (or none).
        var formType: String?
        /// Nil: any form type.
        var type: DataForm.FormType?
        var itemIndex: Int?
        var field: String?
    }

    enum Conversion: String, Sendable, Hashable, CaseIterable {
        case int, uint, bool, datetime, base64
    }
}

/// A compile error: where in the path, and why.
public struct QueryError: Error, Sendable, Hashable, CustomStringConvertible {
    public let path: String
    /// The character offset of the problem.
    public let offset: Int
    public let reason: String

    public init(path: String, offset: Int, reason: String) {
        self.path = path
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "invalid query '\(path)' at offset \(offset): \(reason)" }
}

/// One result of a query.
public enum QueryValue: Sendable, Equatable {
    case element(Element)
    case string(String)
    case int(Int)
    case bool(Bool)
    case date(Date)
    case bytes([UInt8])
}

// MARK: - Evaluation

extension Query {
    /// A matched element with the elements above it, so that ".." can go back up; `indices` locate
    /// it below the root and tell apart matches that ".." brought together.
    private struct Match {
        var chain: [Element]
        var indices: [Int]
        var element: Element { chain[chain.count - 1] }
    }

    /// Every result, in document order.
    public func evaluate(on root: Element) -> [QueryValue] {
        guard steps.contains(.parent) else { return evaluateDescending(on: root) }
        var matches = [Match(chain: [root], indices: [])]
        for (position, step) in steps.enumerated() {
            switch step {
            case .select(let selector) where position == 0 && isRooted:
                matches = matches.filter { selector.matches($0.element, parent: nil) }
            case .select(let selector):
                matches = matches.flatMap { match in
                    match.element.elements.enumerated().compactMap { index, child in
                        selector.matches(child, parent: match.element)
                            ? Match(chain: match.chain + [child], indices: match.indices + [index]) : nil
                    }
                }
            case .parent:
                var seen = Set<[Int]>()
                matches = matches.compactMap { match in
                    guard match.chain.count > 1 else { return nil }
                    let parent = Match(chain: Array(match.chain.dropLast()), indices: Array(match.indices.dropLast()))
                    return seen.insert(parent.indices).inserted ? parent : nil
                }
            }
        }
        return matches.flatMap { extract(from: $0.element) }
    }

    /// `evaluate` for a path that never goes up (most of them): no chains to keep, no child arrays made.
    private func evaluateDescending(on root: Element) -> [QueryValue] {
        var matches = [root]
        for (position, step) in steps.enumerated() {
            guard case .select(let selector) = step else { continue }
            if position == 0 && isRooted {
                matches = matches.filter { selector.matches($0, parent: nil) }
                continue
            }
            var next: [Element] = []
            for parent in matches {
                for case .element(let child) in parent.children where selector.matches(child, parent: parent) {
                    next.append(child)
                }
            }
            matches = next
        }
        return matches.flatMap(extract)
    }

    private func extract(from element: Element) -> [QueryValue] {
        let strings: [String]
        switch extraction {
        case nil: return [.element(element)]
        case .attribute(let name): strings = element[attribute: name].map { [$0] } ?? []
        case .text: strings = [element.text]
        case .name: strings = [element.name]
        case .form(let formQuery):
            guard let form = try? DataForm(element: element), formQuery.matches(form) else { return [] }
            guard let field = formQuery.field else { return [.element(element)] }
            if let index = formQuery.itemIndex {
                guard form.items.indices.contains(index) else { return [] }
                strings = form.items[index].first { $0.variable == field }?.values ?? []
            } else {
                strings = form.values(field)
            }
        }
        guard let conversion else { return strings.map(QueryValue.string) }
        return strings.compactMap(conversion.apply)
    }
}

extension Query.Selector {
    func matches(_ element: Element, parent: Element?) -> Bool {
        switch namespace {
        case .any: break
        case .parents: if let parent, element.namespace != parent.namespace { return false }
        case .exactly(let wanted): if element.namespace != wanted { return false }
        }
        switch name {
        case .any: break
        case .exactly(let wanted): if element.name != wanted { return false }
        case .not(let unwanted): if element.name == unwanted { return false }
        }
        return filters.allSatisfy { filter in
            guard let value = element[attribute: filter.attribute] else { return false }
            return filter.value.map { $0 == value } ?? true
        }
    }
}

extension Query.FormQuery {
    func matches(_ form: DataForm) -> Bool {
        if let formType, form.formType != formType { return false }
        if let type, form.type != type { return false }
        return true
    }
}

extension Query.Conversion {
    func apply(_ raw: String) -> QueryValue? {
        let string = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        switch self {
        case .int: return Int(string).map(QueryValue.int)
        case .uint: return Int(string).flatMap { $0 >= 0 ? .int($0) : nil }
        case .bool: return XMLBoolean.parse(string).map(QueryValue.bool)
        case .datetime: return XMPPDateTime.parse(string).map(QueryValue.date)
        case .base64:
            let compact = string.filter { !$0.isWhitespace }
            return Data(base64Encoded: compact).map { .bytes(Array($0)) }
        }
    }
}

// MARK: - The cache and the Element API

extension Query {
    /// Compiled string paths: at most `cacheLimit` of them, each at most `cacheablePathBytes` long
    /// (a longer one is compiled every time). Paths are literals, so the cache holds a few dozen; the
    /// bounds keep a caller that built paths from data from growing it.
    private static let cache = Mutex<[String: Query]>([:])
    static let cacheLimit = 1024
    static let cacheablePathBytes = 1024

    /// The compiled query for a path, from the cache when it was compiled before.
    public static func cached(_ path: String) throws(QueryError) -> Query {
        if let query = cache.withLock({ $0[path] }) { return query }
        let query = try Query(path)
        guard path.utf8.count <= cacheablePathBytes else { return query }
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[path] = query
        }
        return query
    }

    /// For the `Element.find…(String)` family: nil for an invalid path, which then matches nothing.
    /// A bad literal shows in the tests of the code that reads with it (its results are missing); at
    /// run time nothing, whatever a stanza holds, may stop the program.
    static func compiled(_ path: String) -> Query? {
        try? cached(path)
    }

    /// How many paths the cache holds, and their bytes.
    static var cacheSize: (count: Int, bytes: Int) {
        cache.withLock { cache in (cache.count, cache.keys.reduce(0) { $0 + $1.utf8.count }) }
    }

    static func isCached(_ path: String) -> Bool { cache.withLock { $0[path] != nil } }
}

extension Element {
    /// All results of a query path; none for an invalid path (`Query(_:)` says what is wrong with one).
    public func find(_ path: String) -> [QueryValue] { Query.compiled(path)?.evaluate(on: self) ?? [] }
    public func find(_ query: Query) -> [QueryValue] { query.evaluate(on: self) }

    public func findFirst(_ path: String) -> QueryValue? { find(path).first }
    public func findFirst(_ query: Query) -> QueryValue? { find(query).first }

    /// True when the path has at least one result.
    public func check(_ path: String) -> Bool { !find(path).isEmpty }

    public func findElements(_ path: String) -> [Element] {
        find(path).compactMap { if case .element(let element) = $0 { element } else { nil } }
    }
    public func findElement(_ path: String) -> Element? { findElements(path).first }

    public func findStrings(_ path: String) -> [String] {
        find(path).compactMap { if case .string(let string) = $0 { string } else { nil } }
    }
    public func findString(_ path: String) -> String? { findStrings(path).first }

    // The typed readers take the first result of that type, or convert the first string result as
    // the matching conversion would, so `findInt("…@count")` and `findInt("…@count|int")` agree.

    public func findInt(_ path: String) -> Int? {
        firstConverted(path, .int) { if case .int(let value) = $0 { value } else { nil } }
    }
    public func findBool(_ path: String) -> Bool? {
        firstConverted(path, .bool) { if case .bool(let value) = $0 { value } else { nil } }
    }
    public func findDate(_ path: String) -> Date? {
        firstConverted(path, .datetime) { if case .date(let value) = $0 { value } else { nil } }
    }
    public func findBytes(_ path: String) -> [UInt8]? {
        firstConverted(path, .base64) { if case .bytes(let value) = $0 { value } else { nil } }
    }

    private func firstConverted<T>(
        _ path: String, _ conversion: Query.Conversion,
        _ unwrap: (QueryValue) -> T?
    ) -> T? {
        for value in find(path) {
            if let result = unwrap(value) { return result }
            if case .string(let string) = value, let converted = conversion.apply(string) { return unwrap(converted) }
        }
        return nil
    }
}
