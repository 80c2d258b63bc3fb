import BlockingWork
import Foundation
import Synchronization

/// Runs the independent Python opener (`Tests/SealingTests/Vectors/open_envelope.py`, a copy of the
/// design's `tools/open_envelope.py`, written apart from this project's code) on an envelope. It needs
/// python3 on PATH and the `cryptography` package; without them every call throws, so a test using it
/// fails loudly.
///
/// One Python process serves the whole test process (`open_envelopes.py`, which calls the opener's
/// own function line by line): starting Python and its cryptography package for every envelope took
/// some 170 ms for every push a test opens. Each exchange with it runs on a thread of its own
/// (`BlockingWork`): waiting there for Python, above all while it starts, must not hold a thread of
/// the cooperative pool that every test's tasks share.
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

    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Tests/SealingTests/Vectors")

    /// The plaintext, or `Rejected` with the opener's reason.
    public static func open(_ envelope: String, privateKey: [UInt8]) async throws -> [UInt8] {
        let outcome = try await run(envelope, privateKey: privateKey)
        guard outcome.status == 0 else { throw Rejected(description: outcome.diagnostics) }
        return outcome.plaintext
    }

    /// The opener's verdict as its command line gives it: status 0 with the plaintext, or 1 with
    /// "rejected: " and its reason.
    public static func run(_ envelope: String, privateKey: [UInt8]) async throws -> Outcome {
        let keyHex = privateKey.map { String(format: "%02x", $0) }.joined()
        let answer = try await BlockingWork.run {
            try server.withLock { server in
                if server == nil { server = try OpenerProcess() }
                do {
                    return try server?.ask("\(keyHex) \(envelope)") ?? ""
                } catch {
                    server = nil
                    throw error
                }
            }
        }
        if answer.hasPrefix("ok "), let plaintext = hexBytes(answer.dropFirst(3)) {
            return Outcome(status: 0, plaintext: plaintext, diagnostics: "")
        }
        if answer.hasPrefix("rejected ") {
            return Outcome(status: 1, plaintext: [], diagnostics: "rejected: \(answer.dropFirst(9))")
        }
        throw Unavailable(description: "open_envelopes.py answered \(answer.prefix(200))")
    }

    private static let server = Mutex<OpenerProcess?>(nil)

    private static func hexBytes(_ text: Substring) -> [UInt8]? {
        guard text.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// The Python process, a line in and a line out per envelope; it ends when its input does.
    private final class OpenerProcess {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let errors = Pipe()
        private var pending: [UInt8] = []

        init() throws {
            let script = vectors.appendingPathComponent("open_envelopes.py")
            guard FileManager.default.fileExists(atPath: script.path) else {
                throw Unavailable(description: "\(script.path) is missing")
            }
            // A Python that died (an ImportError) must fail the write, not kill the test process.
            signal(SIGPIPE, SIG_IGN)
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", script.path]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = errors
            do {
                try process.run()
            } catch {
                throw Unavailable(description: "cannot start python3: \(error)")
            }
        }

        deinit {
            try? input.fileHandleForWriting.close()
        }

        func ask(_ line: String) throws -> String {
            do {
                try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
            } catch {
                throw Unavailable(description: "open_envelopes.py is gone: \(diagnostics())")
            }
            while true {
                if let end = pending.firstIndex(of: 0x0A) {
                    defer { pending.removeSubrange(...end) }
                    return String(decoding: pending[..<end], as: UTF8.self)
                }
                let chunk = output.fileHandleForReading.availableData
                guard !chunk.isEmpty else {
                    throw Unavailable(description: "open_envelopes.py ended: \(diagnostics())")
                }
                pending += chunk
            }
        }

        /// What Python said on its way out (an ImportError, say).
        private func diagnostics() -> String {
            process.waitUntilExit()
            return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
    }
}
