import Foundation

/// Runs the independent Python opener (`Tests/SealingTests/Vectors/open_envelope.py`, a copy of the
/// design's `tools/open_envelope.py`, written apart from this project's code) on an envelope. It needs
/// python3 on PATH and the `cryptography` package; without them every call throws, so a test using it
/// fails loudly.
public enum IndependentOpener {
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
    }

    public struct Rejected: Error, CustomStringConvertible {
        public let description: String
    }

    public struct Outcome: Sendable {
        public let status: Int32
        public let plaintext: [UInt8]
        public let diagnostics: String
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/SealingTests/Vectors/open_envelope.py")

    /// The plaintext, or `Rejected` with the opener's reason.
    public static func open(_ envelope: String, privateKey: [UInt8]) throws -> [UInt8] {
        let outcome = try run(envelope, privateKey: privateKey)
        guard outcome.status == 0 else { throw Rejected(description: outcome.diagnostics) }
        return outcome.plaintext
    }

    /// The opener's verdict as it gave it: exit 0 with the plaintext, or 1 with its reason.
    public static func run(_ envelope: String, privateKey: [UInt8]) throws -> Outcome {
        guard FileManager.default.fileExists(atPath: script.path) else {
            throw Unavailable(description: "\(script.path) is missing")
        }
        let keyHex = privateKey.map { String(format: "%02x", $0) }.joined()
        let outcome = try execute(["python3", script.path, "--key", keyHex, envelope])
        // The script's verdicts are exit 0, or exit 1 with "rejected: …"; anything else (a usage
        // error, an ImportError, which also exits 1) means the opener could not judge.
        let isVerdict = outcome.status == 0 || (outcome.status == 1 && outcome.diagnostics.hasPrefix("rejected:"))
        guard isVerdict else {
            throw Unavailable(description: "open_envelope.py exited \(outcome.status): \(outcome.diagnostics)")
        }
        return outcome
    }

    private static func execute(_ arguments: [String]) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        do {
            try process.run()
        } catch {
            throw Unavailable(description: "cannot start python3: \(error)")
        }
        // The output is small (under 3 KiB), so reading before waiting cannot deadlock on a full pipe.
        let plaintext = output.fileHandleForReading.readDataToEndOfFile()
        let diagnostics = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, plaintext: Array(plaintext),
            diagnostics: String(decoding: diagnostics, as: UTF8.self))
    }
}
