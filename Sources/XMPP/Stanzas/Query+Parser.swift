/// Compiles a query path (grammar in Query.swift) in one pass over its characters.
struct QueryParser {
    private let path: String
    private let characters: [Character]
    private var position = 0

    init(_ path: String) {
        self.path = path
        self.characters = Array(path)
    }

    /// Characters that end an element or attribute name.
    private static let delimiters: Set<Character> = ["/", "{", "}", "<", ">", "@", "#", "$", "|", "\\", "!", "[", "]"]

    mutating func parse() throws(QueryError) -> Query {
        let isRooted = skip("/")
        var steps: [Query.Step] = []
        var extraction: Query.Extraction?
        while !atEnd, peek != "|" {
            if !steps.isEmpty || extraction != nil {
                guard extraction == nil else { throw error("an extraction (@, #, $, \\…\\) must end the path") }
                guard skip("/") else { throw error("expected '/' between segments") }
            }
            if skipSequence("..") {
                steps.append(.parent)
                extraction = try parseExtraction()
                if case .form = extraction { throw error("a data-form sub-query cannot follow '..'") }
                guard atEnd || peek == "/" || peek == "|" else { throw error("'..' takes no name or filter") }
                continue
            }
            let isFirstRooted = isRooted && steps.isEmpty
            let selector = try parseSelector(nameOptional: isFirstRooted)
            extraction = try parseExtraction()
            if let selector {
                steps.append(.select(selector))
            } else if case .form = extraction {
                steps.append(.select(.dataForm))  // a lone sub-query selects the forms below
            } else if extraction == nil {
                throw error("expected an element name, '..' or an extraction")
            }  // else a lone extraction reads the elements reached so far: `@id`, `/@id`, `a/#`
        }
        var conversion: Query.Conversion?
        if skip("|") {
            guard let extraction else { throw error("a conversion needs an extraction before it") }
            if case .form(let form) = extraction, form.field == nil {
                throw error("a conversion needs a data-form sub-query that names a field")
            }
            let name = String(characters[position...])
            guard let known = Query.Conversion(rawValue: name) else {
                throw error("unknown conversion '\(name)'; known: int, uint, bool, datetime, base64")
            }
            conversion = known
            position = characters.count
        }
        if steps.isEmpty, extraction == nil { throw error(isRooted ? "the path selects nothing" : "the path is empty") }
        return Query(path: path, isRooted: isRooted, steps: steps, extraction: extraction, conversion: conversion)
    }

    /// Nil when the segment has neither name nor filter (an extraction alone). Only a rooted first
    /// segment may have filters without a name: it then matches any element.
    private mutating func parseSelector(nameOptional: Bool) throws(QueryError) -> Query.Selector? {
        var namespace = Query.Selector.NamespaceMatch.parents
        var hasNamespace = false
        if skip("{") {
            let uri = readUntil("}")
            guard skip("}") else { throw error("unterminated '{'") }
            guard !uri.isEmpty else { throw error("empty namespace '{}'") }
            namespace = uri == "*" ? .any : .exactly(uri)
            hasNamespace = true
        }
        var name: Query.Selector.NameMatch?
        if skip("!") {
            let excluded = readName()
            guard !excluded.isEmpty else { throw error("'!' must be followed by an element name") }
            name = .not(excluded)
        } else if skip("*") {
            name = .any
        } else {
            let exact = readName()
            if !exact.isEmpty { name = .exactly(exact) }
        }
        var filters: [Query.Selector.Filter] = []
        while skip("<") {
            let attribute = readName()
            guard !attribute.isEmpty else { throw error("a filter needs an attribute name") }
            var value: String?
            if skip("=") { value = readUntil(">") }
            guard skip(">") else { throw error("unterminated '<' filter") }
            filters.append(.init(attribute: attribute, value: value))
        }
        guard let name else {
            if hasNamespace { throw error("a namespace must be followed by an element name or '*'") }
            guard filters.isEmpty || nameOptional else { throw error("a filter must follow an element name") }
            return filters.isEmpty ? nil : Query.Selector(namespace: .any, name: .any, filters: filters)
        }
        return Query.Selector(namespace: namespace, name: name, filters: filters)
    }

    private mutating func parseExtraction() throws(QueryError) -> Query.Extraction? {
        if skip("@") {
            let attribute = readName()
            guard !attribute.isEmpty else { throw error("'@' must be followed by an attribute name") }
            return .attribute(attribute)
        }
        if skip("#") { return .text }
        if skip("$") { return .name }
        if skip("\\") { return .form(try parseFormQuery()) }
        return nil
    }

    private mutating func parseFormQuery() throws(QueryError) -> Query.FormQuery {
        var query = Query.FormQuery()
        if skip("{") {
            let formType = readUntil("}")
            guard skip("}") else { throw error("unterminated '{' in a data-form sub-query") }
            guard !formType.isEmpty else { throw error("empty FORM_TYPE '{}'") }
            query.formType = formType == "*" ? nil : formType
        }
        let typeName = readName()
        if !typeName.isEmpty, typeName != "*" {
            guard let type = DataForm.FormType(rawValue: typeName) else {
                throw error("unknown form type '\(typeName)'; known: form, submit, result, cancel")
            }
            query.type = type
        }
        if skip("[") {
            let digits = readUntil("]")
            guard skip("]"), let index = Int(digits), index >= 0 else { throw error("an item index is '[n]', n ≥ 0") }
            query.itemIndex = index
        }
        if skip("@") {
            let field = readUntil("\\")
            guard !field.isEmpty else { throw error("'@' must be followed by a field name") }
            query.field = field
        }
        guard skip("\\") else { throw error("a data-form sub-query must end with '\\'") }
        if query.itemIndex != nil, query.field == nil { throw error("an item index needs a field ('[n]@field')") }
        return query
    }

    // MARK: Scanning

    private var atEnd: Bool { position >= characters.count }
    private var peek: Character? { atEnd ? nil : characters[position] }

    private mutating func skip(_ character: Character) -> Bool {
        guard peek == character else { return false }
        position += 1
        return true
    }

    private mutating func skipSequence(_ sequence: String) -> Bool {
        let wanted = Array(sequence)
        guard position + wanted.count <= characters.count,
            Array(characters[position..<position + wanted.count]) == wanted
        else { return false }
        position += wanted.count
        return true
    }

    private mutating func readName() -> String {
        let start = position
        while let character = peek, !Self.delimiters.contains(character), character != "=" { position += 1 }
        return String(characters[start..<position])
    }

    private mutating func readUntil(_ terminator: Character) -> String {
        let start = position
        while let character = peek, character != terminator { position += 1 }
        return String(characters[start..<position])
    }

    private func error(_ reason: String) -> QueryError {
        QueryError(path: path, offset: position, reason: reason)
    }
}
