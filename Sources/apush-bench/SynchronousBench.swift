import Foundation
import SQLite
import Sealing
import Store
import XMLStream

/// `apush-bench synchronous [COUNT] [ROUNDS]` (2000, 3): whole publishes on a WAL file whose commits
/// are synced (`synchronous=FULL`, the component's default: a commit survives a power loss) against
/// one whose log is synced at checkpoints only (`NORMAL`: a commit survives the process being killed),
/// one after another and 16 in flight, the order alternating from round to round; prints each round's
/// ratio FULL ÷ NORMAL and their medians.
enum SynchronousBench {
    static func run(_ arguments: [String]) async throws {
        let count = Int(arguments.first ?? "") ?? 2000
        let rounds = max(1, Int(arguments.dropFirst().first ?? "") ?? 3)
        Flood.say(
            "apush-bench synchronous: \(count) publishes a row, \(rounds) rounds, a WAL file in "
                + "\(FileManager.default.temporaryDirectory.path) (\(Bench.isDebug ? "DEBUG build" : "release build"))")
        let key = KeyPair.generate().publicKey
        let elements = try (0..<count).map { try Element.parse(Bench.publish($0, key: key)) }
        var sequential: [Double] = []
        var loaded: [Double] = []
        for round in 1...rounds {
            let fullFirst = !round.isMultiple(of: 2)
            let oneAfterAnother = try await inOrder(fullFirst: fullFirst) { mode in
                try await Bench.measurePublishes(
                    elements, on: .file(path: Bench.temporaryStore()),
                    name: "round \(round): one after another, synchronous=\(mode.rawValue.uppercased())",
                    synchronous: mode
                ).rate
            }
            let inFlight = try await inOrder(fullFirst: fullFirst) { mode in
                try await PostgreSQLBench.row(
                    "round \(round): 16 in flight, synchronous=\(mode.rawValue.uppercased())",
                    try (0..<PostgreSQLBench.devices + count).map { try Element.parse(Bench.publish($0, key: key)) },
                    on: .sqlite(mode), inFlight: 16
                ).rate
            }
            sequential.append(oneAfterAnother.full / oneAfterAnother.normal)
            loaded.append(inFlight.full / inFlight.normal)
            Flood.say(
                String(
                    format: "  round %d: FULL ÷ NORMAL, publishes/s: %.2f one after another, %.2f 16 in flight",
                    round, oneAfterAnother.full / oneAfterAnother.normal, inFlight.full / inFlight.normal))
        }
        for (name, ratios) in [("one after another", sequential), ("16 in flight", loaded)] {
            let sorted = ratios.sorted()
            Bench.ratio(
                String(
                    format: "FULL ÷ NORMAL, %@, median of %d rounds (%.2f–%.2f)", name, rounds, sorted[0],
                    sorted[sorted.count - 1]), sorted[sorted.count / 2])
        }
    }

    /// The rate `measure` gives for each mode, the one named first measured first.
    private static func inOrder(fullFirst: Bool, _ measure: (Synchronous) async throws -> Double) async throws
        -> (full: Double, normal: Double)
    {
        if fullFirst {
            let full = try await measure(.full)
            return (full, try await measure(.normal))
        }
        let normal = try await measure(.normal)
        return (try await measure(.full), normal)
    }
}
