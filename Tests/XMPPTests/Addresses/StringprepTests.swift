import BlockingWork
import Foundation
import Testing

@testable import XMPP

@Suite struct StringprepTests {
    @Test(
        arguments: [
            // ASCII: case only, on the fast path.
            ("Alice", "alice", "alice", "Alice"),
            // ß folds to ss (lowercased() would keep it), for the node and the domain, not the resource.
            ("STRASSE", "strasse", "strasse", "STRASSE"),
            ("straße", "strasse", "strasse", "straße"),
            // The ﬀ ligature and full-width letters: NFKC for all three, folding for two.
            ("\u{FB00}", "ff", "ff", "ff"),
            ("\u{FF21}lice", "alice", "alice", "Alice"),
            // Greek final sigma folds to σ; Turkish dotted capital I to i + U+0307; dotless ı stays.
            ("\u{03C2}", "\u{03C3}", "\u{03C3}", "\u{03C2}"),
            ("\u{0130}", "i\u{0307}", "i\u{0307}", "\u{0130}"),
            ("\u{0131}", "\u{0131}", "\u{0131}", "\u{0131}"),
            // B.1: soft hyphen, zero-width joiner and a variation selector are removed.
            ("a\u{00AD}b\u{200D}c\u{FE0F}", "abc", "abc", "abc"),
            // B.2 holds what NFKC makes of a character, folded: ℃ is °c, 𝐀 is a.
            ("\u{2103}", "\u{00B0}c", "\u{00B0}c", "\u{00B0}C"),
            ("\u{1D400}", "a", "a", "A"),
            // Already prepared text is kept; right-to-left only text is fine.
            ("jérôme", "jérôme", "jérôme", "jérôme"),
            // Compatibility spaces become ASCII spaces, which only a node refuses.
            ("a\u{3000}b", "-", "a b", "a b"),
            ("\u{05D0}\u{05D1}", "\u{05D0}\u{05D1}", "\u{05D0}\u{05D1}", "\u{05D0}\u{05D1}"),
        ] as [(String, String, String, String)])
    func preparesAsTheServersDo(input: String, node: String, name: String, resource: String) throws {
        #expect((try? Stringprep.prepare(input, .nodeprep)) == (node == "-" ? nil : node))
        #expect(try Stringprep.prepare(input, .nameprep) == name)
        #expect(try Stringprep.prepare(input, .resourceprep) == resource)
    }

    @Test(
        arguments: [
            ("a b", Stringprep.Profile.nodeprep, Stringprep.Failure.prohibited(" ")),
            ("a\"b", .nodeprep, .prohibited("\"")), ("a&b", .nodeprep, .prohibited("&")),
            ("a'b", .nodeprep, .prohibited("'")),
            ("a/b", .nodeprep, .prohibited("/")), ("a:b", .nodeprep, .prohibited(":")),
            ("a<b", .nodeprep, .prohibited("<")),
            ("a>b", .nodeprep, .prohibited(">")), ("a@b", .nodeprep, .prohibited("@")),
            ("a\u{7}b", .nodeprep, .prohibited("\u{7}")), ("a\u{7}b", .resourceprep, .prohibited("\u{7}")),
            // A no-break space is a space once NFKC has run; U+1680 stays what it is.
            ("a\u{00A0}b", .nodeprep, .prohibited(" ")),
            ("a\u{1680}b", .nodeprep, .prohibited("\u{1680}")), ("a\u{1680}b", .nameprep, .prohibited("\u{1680}")),
            ("a\u{1680}b", .resourceprep, .prohibited("\u{1680}")),
            ("a\u{0085}b", .resourceprep, .prohibited("\u{0085}")),
            ("a\u{E000}b", .nodeprep, .prohibited("\u{E000}")),
            ("a\u{202E}b", .resourceprep, .prohibited("\u{202E}")),
            ("a\u{E0041}b", .nodeprep, .prohibited("\u{E0041}")),
            ("a\u{2FF0}b", .nodeprep, .prohibited("\u{2FF0}")),
            // Right-to-left beside left-to-right, or not at both ends.
            ("\u{05D0}a", .nodeprep, .bidi), ("\u{05D0}a", .resourceprep, .bidi), ("\u{05D0}1", .nodeprep, .bidi),
            ("1\u{0627}", .nameprep, .bidi),
        ] as [(String, Stringprep.Profile, Stringprep.Failure)])
    func refusesWhatTheProfileProhibits(input: String, profile: Stringprep.Profile, failure: Stringprep.Failure) {
        #expect(throws: failure) { try Stringprep.prepare(input, profile) }
    }

    @Test func refusesNonCharacters() throws {
        let noncharacter = try #require(Unicode.Scalar(UInt32(0xFDD0)))
        #expect(throws: Stringprep.Failure.prohibited(noncharacter)) {
            try Stringprep.prepare("a" + String(noncharacter), .nameprep)
        }
    }

    @Test func aSpaceIsFineInAResource() throws {
        #expect(try Stringprep.prepare(" Balcony ", .resourceprep) == " Balcony ")
    }

    static let trickyInputs = [
        "Alice", "STRASSE", "straße", "\u{FB00}", "\u{FF21}\u{FF22}", "\u{03A3}\u{03C2}", "\u{0130}", "\u{0131}",
        "a\u{00AD}b", "a\u{200D}b", "a\u{200C}b", "a\u{FEFF}b", "\u{2103}", "\u{1D400}", "\u{0345}", "\u{0149}",
        "\u{01C5}", "\u{1E9E}", "\u{13A0}", "\u{10A0}", "J\u{0065}\u{0301}r\u{00F4}me", "\u{0301}alice",
        "a b", "a@b", "a/b", "a\u{00A0}b", "a\u{E000}b", "a\u{202E}b", "\u{05D0}\u{05D1}", "\u{05D0}a", "\u{05D0}1",
        "\u{0627}\u{0644}", "\u{3002}", "\u{FF0E}", "Ⅻ", "ﬁ", "ǰ", "ᾈ", "Ω", "K", "Å", "\u{2126}",
        "münchen", "MÜNCHEN", "\u{0660}\u{0661}", "\u{06F0}", "a\u{1806}b", "\u{E0041}",
        // Bidi beyond Unicode 3.2: an unassigned code point of the Hebrew block, an NKo letter
        // (5.0), a Thai digit and a CJK ideograph between Hebrew letters, a Cypriot letter (4.0).
        "X\u{0590}x", "X\u{07CA}x", "\u{05D0}\u{0E51}\u{05D1}", "\u{05D0}\u{4E00}\u{05D1}", "a\u{10800}",
        "\u{05D0}\u{0301}\u{05D1}", "\u{0627}\u{0661}\u{0628}",
    ]

    /// The servers' own stringprep (Prosody's util.encodings through lua5.4, ejabberd's
    /// p1_stringprep through erl) gives the same answer for each tricky input: the prepared text,
    /// or a refusal. Only where they disagree does this follow Prosody: ejabberd refuses characters
    /// Unicode 3.2 did not have (stringprep's rule for stored strings), Prosody accepts them.
    @Test(arguments: [ServerStringprep.prosody, .ejabberd])
    func agreesWithTheServersOwnStringprep(_ server: ServerStringprep) async throws {
        let oracle = try await server.prepare(Self.trickyInputs)
        let unicode32 = Unicode.Version(major: 3, minor: 2)
        for (input, expected) in zip(Self.trickyInputs, oracle)
        where server == .prosody
            || input.unicodeScalars.allSatisfy({ ($0.properties.age.map { $0 <= unicode32 }) ?? false })
        {
            for (profile, wanted) in zip([Stringprep.Profile.nodeprep, .nameprep, .resourceprep], expected) {
                let ours = try? Stringprep.prepare(input, profile)
                #expect(ours == wanted, "\(profile) of \(input.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
    }
}

/// A server's own stringprep, run once over many inputs.
enum ServerStringprep: Sendable, CustomTestStringConvertible {
    case prosody, ejabberd

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    var testDescription: String { self == .prosody ? "Prosody 0.12" : "ejabberd 23.01" }

    /// For each input, nodeprep, nameprep and resourceprep (nil: refused). Each line the program
    /// prints is three fields, tab-separated: `[hex hex …]` or `-`.
    /// The server's program runs on a thread of its own: an Erlang node takes seconds to start, which on
    /// the cooperative pool would hold up the other suites' tasks.
    func prepare(_ inputs: [String]) async throws -> [[String?]] {
        let (command, arguments) = try program(inputs)
        let (status, data) = try await BlockingWork.run {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [command] + arguments
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, data)
        }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        guard status == 0, lines.count == inputs.count else {
            throw Unavailable(
                description: "\(command) with \(testDescription)'s stringprep failed (\(status))")
        }
        return lines.map { line in
            line.split(separator: "\t").map { field -> String? in
                guard field != "-" else { return nil }
                let scalars = field.dropFirst().dropLast().split(separator: " ")
                    .compactMap { UInt32($0, radix: 16).flatMap(Unicode.Scalar.init) }
                return String(String.UnicodeScalarView(scalars))
            }
        }
    }

    private func program(_ inputs: [String]) throws -> (String, [String]) {
        switch self {
        case .prosody:
            guard
                let library = ["/usr/lib/prosody", "/usr/local/lib/prosody", "/usr/lib64/prosody"]
                    .first(where: { FileManager.default.fileExists(atPath: $0 + "/util/encodings.so") })
            else {
                throw Unavailable(description: "Prosody's util/encodings.so is not installed (contrib/setup-debian.sh)")
            }
            let strings = inputs.map { input in
                "\"" + input.unicodeScalars.map { "\\u{\(String($0.value, radix: 16))}" }.joined() + "\""
            }
            return (
                "lua5.4",
                [
                    "-e",
                    """
                    package.cpath = "\(library)/?.so;" .. package.cpath
                    local prep = require "util.encodings".stringprep
                    local function hex(s) if s == nil then return "-" end
                      local out = {} for _, c in utf8.codes(s) do out[#out + 1] = string.format("%x", c) end
                      return "[" .. table.concat(out, " ") .. "]" end
                    for _, s in ipairs({\(strings.joined(separator: ","))}) do
                      print(hex(prep.nodeprep(s)) .. "\\t" .. hex(prep.nameprep(s)) .. "\\t" .. hex(prep.resourceprep(s)))
                    end
                    """,
                ]
            )
        case .ejabberd:
            let lists = inputs.map { "[" + $0.unicodeScalars.map { String($0.value) }.joined(separator: ",") + "]" }
            return (
                "erl",
                [
                    "-noshell", "-eval",
                    """
                    application:ensure_all_started(stringprep),
                    Hex = fun(error) -> "-"; (B) -> "[" ++ string:join([integer_to_list(C, 16)
                      || C <- unicode:characters_to_list(B)], " ") ++ "]" end,
                    lists:foreach(fun(S) -> B = unicode:characters_to_binary(S),
                      io:format("~s\\t~s\\t~s~n", [Hex(stringprep:nodeprep(B)), Hex(stringprep:nameprep(B)),
                                                   Hex(stringprep:resourceprep(B))]) end,
                      [\(lists.joined(separator: ","))]),
                    halt().
                    """,
                ]
            )
        }
    }
}
