import Foundation

/// The temporary directory and log reading shared by the server launchers.
enum ServerDirectory {
    static func create(prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("apush-\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Each existing file under a header line, in the given order, optionally cut to its last lines.
    static func contents(of names: [String], in directory: URL, lastLines: Int?) -> String {
        names.compactMap { name in
            let url = directory.appendingPathComponent(name)
            guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let kept = lastLines.map { lines.suffix($0) } ?? lines[...]
            return "==> \(url.path) <==\n" + kept.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

extension ServerDirectory {
    /// A double-quoted string literal valid in both Lua and YAML configuration files.
    static func quoted(_ string: String) -> String {
        let escaped = string.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }
}
