import Foundation
import Sealing
import Store
import Synchronization
import XMLStream

/// `apush-bench statements [COUNT]` (4000): where a whole publish's time goes in the store. Runs COUNT
/// publishes one after another on a WAL file, times every statement the store runs (binding and reading
/// its rows included), and prints them per publish beside the seal and the parse measured in the same
/// run. It ends with the floor those figures set: a publish's pushes are decided by its statements, so
/// its seal cannot start before them (only the commit overlaps it); with everything else free, the
/// publish rate could reach at most the seal's time over that floor.
enum StatementTimes {
    static func run(_ arguments: [String]) async throws {
        let count = max(1, Int(arguments.first ?? "") ?? 4000)
        print("apush-bench statements: \(count) publishes one after another on a WAL file")
        let device = KeyPair.generate()
        let stanzas = (0..<count).map { Bench.publish($0, key: device.publicKey) }
        let parse = try Bench.measure("parse a bridged publish (libxml2 → Element)", count) { index in
            _ = try Element.parse(stanzas[index])
        }
        let elements = try stanzas.map { try Element.parse($0) }
        let (seal, pooledSeal) = try Bench.measureSeals(count, key: device.publicKey)
        let times = Times()
        let publish = try await Bench.measurePublishes(
            elements, on: .file(path: Bench.temporaryStore()), name: "SQLite file (WAL), every statement timed",
            statementObserver: times.add)

        let perPublish = times.perPublish(count)
        print("")
        print("  " + Bench.padded("statement (its first line)", 76) + "runs  µs each  µs a publish")
        // Statements run less than once in ten publishes (the schema, a device's first registration) are
        // summed in one line.
        let (hot, rare) = (perPublish.filter { $0.runs >= 0.1 }, perPublish.filter { $0.runs < 0.1 })
        for line in hot {
            print(
                "  " + Bench.padded(line.sql, 76)
                    + String(format: "%4.2f %8.1f %13.1f", line.runs, line.microseconds / line.runs, line.microseconds))
        }
        let rareTotal = rare.reduce(0) { $0 + $1.microseconds }
        print("  " + Bench.padded("\(rare.count) others", 76) + String(format: "%27.1f", rareTotal))
        let statements = perPublish.reduce(0) { $0 + $1.microseconds }
        let commit = perPublish.first { $0.sql == "COMMIT" }?.microseconds ?? 0
        let publishMicroseconds = 1e6 / publish.rate
        print(
            "  " + Bench.padded("all statements (the store's work on its thread)", 76)
                + String(format: "%27.1f", statements))
        print(
            "  " + Bench.padded("the whole publish", 76) + String(format: "%27.1f", publishMicroseconds))

        // Everything but the statements, the parse and the seal taken as free: the statements before the
        // commit decide, then the seal (a pooled key) runs while the commit does.
        let sealMicroseconds = 1e6 / seal.rate
        let floor = 1e6 / parse.rate + (statements - commit) + max(1e6 / pooledSeal.rate, commit)
        print(
            "  " + Bench.padded("floor: parse + statements before the commit + max(pooled seal, commit)", 76)
                + String(format: "%27.1f", floor))
        print("ratios of rates")
        Bench.ratio("publish rate / seal rate (this run)", sealMicroseconds / publishMicroseconds)
        Bench.ratio("the most these statements allow: seal time / floor", sealMicroseconds / floor)
        Bench.ratio("statements' share of a publish's time", statements / publishMicroseconds)
    }

    /// Every statement's runs and time, by the start of its first line; told on the store's thread.
    final class Times: Sendable {
        private let totals = Mutex<[String: (runs: Int, took: Duration)]>([:])

        func add(_ sql: String, _ took: Duration) {
            let line = String((sql.split(separator: "\n").first ?? Substring(sql)).prefix(72))
            totals.withLock { totals in
                let total = totals[line] ?? (0, .zero)
                totals[line] = (total.runs + 1, total.took + took)
            }
        }

        /// Runs and microseconds per publish, the costliest first.
        func perPublish(_ publishes: Int) -> [(sql: String, runs: Double, microseconds: Double)] {
            totals.withLock { totals in
                totals.map { sql, total in
                    let microseconds = Flood.seconds(total.took) * 1e6 / Double(publishes)
                    return (sql, Double(total.runs) / Double(publishes), microseconds)
                }
            }
            .sorted { $0.microseconds > $1.microseconds }
        }
    }
}
