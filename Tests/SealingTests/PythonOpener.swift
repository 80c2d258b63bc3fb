import Foundation

/// Runs the project's independent Python opener (`Vectors/open_envelope.py`, a copy of
/// /work/shared/tools/open_envelope.py) on an envelope. It needs python3 on PATH and the
/// `cryptography` package; without them every call throws, so a test using it fails loudly.
enum PythonOpener {
    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    struct Outcome {
        let status: Int32
        let plaintext: [UInt8]
        let diagnostics: String
    }

    static func open(_ envelope: String, privateKey: [UInt8]) throws -> Outcome {
        guard let script = Bundle.module.url(forResource: "open_envelope", withExtension: "py",
                                             subdirectory: "Vectors") else {
            throw Unavailable(description: "open_envelope.py is missing from the test bundle")
        }
        let keyHex = privateKey.map { String(format: "%02x", $0) }.joined()
        let outcome = try run(["python3", script.path, "--key", keyHex, envelope])
        // The script's verdicts are exit 0, or exit 1 with "rejected: …"; anything else (a usage
        // error, an ImportError, which also exits 1) means the opener could not judge.
        let isVerdict = outcome.status == 0 || (outcome.status == 1 && outcome.diagnostics.hasPrefix("rejected:"))
        guard isVerdict else {
            throw Unavailable(description: "open_envelope.py exited \(outcome.status): \(outcome.diagnostics)")
        }
        return outcome
    }

    private static func run(_ arguments: [String]) throws -> Outcome {
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
        return Outcome(status: process.terminationStatus, plaintext: Array(plaintext),
                       diagnostics: String(decoding: diagnostics, as: UTF8.self))
    }
}
