import ComponentHost
import Foundation
import Store
import Testing
import XMPP

@testable import APush

@Suite struct MetricsPageTests {
    static func page(
        counters: [(Statistic, Int64)] = [], registrations: [String: Int]? = ["example.org": 3],
        upstream: [Int64] = [], publish: [Int64] = []
    ) -> String {
        var upstreamHistogram = LatencyHistogram()
        for value in upstream { upstreamHistogram.observe(milliseconds: value) }
        var publishHistogram = LatencyHistogram()
        for value in publish { publishHistogram.observe(milliseconds: value) }
        return MetricsPage(
            counters: counters.map { (statistic: $0.0, value: $0.1) }, upstream: upstreamHistogram,
            publish: publishHistogram, inFlight: 2, inFlightLimit: 512, registrations: registrations, linkUp: true,
            linkReconnects: 1, httpAcceptFailures: 3,
            process: ProcessMetrics(
                residentMemoryBytes: 1 << 20, cpuSeconds: 0.5, startTimeSeconds: 1.7e9, openDescriptors: 7)
        ).text
    }

    @Test func thePageIsValidExpositionWithEveryNameOfTheContract() throws {
        let exposition = try Exposition(
            Self.page(
                counters: [
                    (.answer(.accepted), 5), (.refusedPublish(.forbidden), 1), (.push(.message, .accepted), 4),
                    (.push(.call, .deadToken), 1), (.unknownNodeCapped, 2), (.unrecordedAnswer(.kept), 1),
                    (.event(.callEnded(sid: "s", by: "b", answeredElsewhere: false)), 1),
                ], upstream: [3, 40, 40, 900, 45_000], publish: [1, 2]))
        for (name, type) in [
            ("apush_publishes_total", "counter"), ("apush_pushes_total", "counter"), ("apush_held_total", "counter"),
            ("apush_coalesced_total", "counter"), ("apush_deduplicated_total", "counter"),
            ("apush_dropped_total", "counter"), ("apush_upstream_seconds", "histogram"),
            ("apush_publish_seconds", "histogram"), ("apush_inflight", "gauge"), ("apush_registrations", "gauge"),
            ("apush_link_up", "gauge"), ("apush_link_reconnects_total", "counter"),
            ("apush_http_accept_failures_total", "counter"),
            ("process_resident_memory_bytes", "gauge"), ("process_cpu_seconds_total", "counter"),
            ("process_start_time_seconds", "gauge"), ("process_open_fds", "gauge"),
        ] {
            #expect(exposition.types[name] == type, "\(name)")
        }
        #expect(exposition.value("apush_publishes_total", ["answer": "result"]) == 5)
        #expect(exposition.value("apush_http_accept_failures_total", [:]) == 3)
        #expect(exposition.value("apush_publishes_total", ["answer": "auth"]) == 1)
        #expect(exposition.value("apush_publishes_total", ["answer": "modify"]) == 0)
        #expect(exposition.value("apush_pushes_total", ["kind": "message", "outcome": "sent"]) == 4)
        #expect(exposition.value("apush_pushes_total", ["kind": "call", "outcome": "dead"]) == 1)
        #expect(exposition.value("apush_pushes_total", ["kind": "wake", "outcome": "expired"]) == 0)
        #expect(exposition.value("apush_dropped_total", ["reason": "unknown-node"]) == 2)
        #expect(exposition.value("apush_dropped_total", ["reason": "rate-limit"]) == 0)
        #expect(exposition.value("apush_unrecorded_answers_total", ["fate": "unrecorded"]) == 1)
        #expect(exposition.value("apush_unrecorded_answers_total", ["fate": "recorded-late"]) == 0)
        #expect(exposition.value("apush_events_total", ["kind": "call-ended"]) == 1)
        #expect(exposition.value("apush_registrations", ["domain": "example.org"]) == 3)
        #expect(exposition.value("apush_inflight", [:]) == 2)
        #expect(exposition.value("apush_inflight_limit", [:]) == 512)
        #expect(exposition.value("apush_link_up", [:]) == 1)
        #expect(exposition.value("apush_upstream_seconds_count", [:]) == 5)
        #expect(exposition.value("apush_upstream_seconds_bucket", ["le": "0.05"]) == 3)
        #expect(exposition.value("apush_upstream_seconds_bucket", ["le": "30.0"]) == 4)
        #expect(exposition.value("apush_upstream_seconds_sum", [:]) == 45.983)
        #expect(exposition.value("apush_publish_seconds_count", [:]) == 2)
    }

    /// Issue 20, item 7: the registrations beside each cap they are held to, so an operator can alert
    /// before a cap refuses new ones.
    @Test func theRegistrationsAreShownBesideTheirCaps() throws {
        var limits = StoreLimits(registrations: 1_000, registrationsWithoutAccount: 250)
        limits.registrationsPerAccount = 8
        let page = MetricsPage(
            counters: [(.registrationExpired, 4)], upstream: LatencyHistogram(), publish: LatencyHistogram(),
            inFlight: 0, inFlightLimit: 512, registrations: ["example.org": 300, "other.org": 2],
            stockRegistrations: 120, limits: limits, linkUp: true, linkReconnects: 0, httpAcceptFailures: 0,
            process: nil
        ).text
        let exposition = try Exposition(page)
        for name in [
            "apush_registrations_limit", "apush_stock_registrations", "apush_stock_registrations_limit",
            "apush_account_registrations_limit",
        ] {
            #expect(exposition.types[name] == "gauge", "\(name)")
        }
        #expect(exposition.value("apush_registrations_limit", [:]) == 1_000)
        #expect(exposition.value("apush_stock_registrations", [:]) == 120)
        #expect(exposition.value("apush_stock_registrations_limit", [:]) == 250)
        #expect(exposition.value("apush_account_registrations_limit", [:]) == 8)
        #expect(exposition.value("apush_registration_changes_total", ["change": "expired"]) == 4)
        // A store that did not answer: no count, the caps still.
        let failed = try Exposition(Self.page(registrations: nil))
        #expect(failed.types["apush_stock_registrations"] == nil)
        #expect(failed.value("apush_registrations_limit", [:]) == Double(StoreLimits.defaultRegistrations))
    }

    /// Every counter's series is in a family the page declares, so none is written without its type.
    @Test func everyStatisticShowsAsACounter() throws {
        let statistics: [Statistic] = [
            .tombstoneAnswer, .quietHoursWake, .upstreamInFlightCap, .upstreamRefused(.init(rawValue: "made-up")),
            .testPush(.read), .registered, .unregistered, .push(nil, .superseded), .push(.read, .unsealable),
            .registrationExpired,
        ]
        let exposition = try Exposition(Self.page(counters: statistics.map { ($0, 1) }))
        for statistic in statistics {
            let series = try #require(statistic.metric)
            #expect(exposition.types[series.family.rawValue] == "counter")
            #expect(exposition.value(series.family.rawValue, series.labels) == 1, "\(statistic)")
        }
        #expect(exposition.value("apush_upstream_refused_total", ["condition": "other"]) == 1)
    }

    @Test func aDomainNameWithQuotesIsEscapedAndAStoreThatFailedShowsNoRegistrations() throws {
        let escaped = try Exposition(Self.page(registrations: ["a\"b\\c": 1]))
        #expect(escaped.value("apush_registrations", ["domain": "a\"b\\c"]) == 1)
        let failed = try Exposition(Self.page(registrations: nil))
        #expect(failed.types["apush_registrations"] == nil)
        #expect(failed.value("apush_store_up", [:]) == 0)
    }
}

/// A reader of the text exposition format, strict enough to fail the page on any line Prometheus would
/// refuse: each line is a HELP, a TYPE or a sample; names and labels are well formed; a family's
/// samples follow its TYPE together; no series twice; a histogram's buckets rise to +Inf == _count.
struct Exposition {
    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    private(set) var types: [String: String] = [:]
    private(set) var samples: [String: [[String: String]: Double]] = [:]

    init(_ text: String) throws {
        guard text.hasSuffix("\n") else { throw ParseError(description: "the page does not end with a line feed") }
        var closedFamilies: Set<String> = []
        var currentFamily: String?
        var histogramBuckets: [String: [(Double, Double)]] = [:]
        for line in text.dropLast().split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("# HELP ") { continue }
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ").map(String.init)
                guard parts.count == 4, Self.isMetricName(parts[2]),
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]), types[parts[2]] == nil
                else { throw ParseError(description: "bad or repeated TYPE line: \(line)") }
                if let currentFamily { closedFamilies.insert(currentFamily) }
                types[parts[2]] = parts[3]
                currentFamily = parts[2]
                continue
            }
            let (name, labels, value) = try Self.sample(line)
            let family = Self.family(of: name, types: types)
            guard let family, family == currentFamily, !closedFamilies.contains(family) else {
                throw ParseError(description: "a sample outside its family's block: \(line)")
            }
            guard samples[name, default: [:]][labels] == nil else {
                throw ParseError(description: "series twice: \(line)")
            }
            samples[name, default: [:]][labels] = value
            if name.hasSuffix("_bucket"), let le = labels["le"] {
                let bound = le == "+Inf" ? Double.infinity : try Self.number(le)
                histogramBuckets[family, default: []].append((bound, value))
            }
        }
        for (family, buckets) in histogramBuckets {
            guard zip(buckets, buckets.dropFirst()).allSatisfy({ $0.0 < $1.0 && $0.1 <= $1.1 }) else {
                throw ParseError(description: "\(family): buckets not rising")
            }
            guard buckets.last?.0 == .infinity, buckets.last?.1 == samples[family + "_count"]?[[:]],
                samples[family + "_sum"]?[[:]] != nil
            else { throw ParseError(description: "\(family): +Inf is not _count, or _sum is missing") }
        }
    }

    func value(_ name: String, _ labels: [String: String]) -> Double? { samples[name]?[labels] }

    private static func family(of name: String, types: [String: String]) -> String? {
        if types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" { return base }
        }
        return nil
    }

    private static func isMetricName(_ name: String) -> Bool {
        name.range(of: "^[a-zA-Z_:][a-zA-Z0-9_:]*$", options: .regularExpression) != nil
    }

    private static func number(_ text: String) throws -> Double {
        switch text {
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default:
            guard let value = Double(text) else { throw ParseError(description: "not a number: \(text)") }
            return value
        }
    }

    /// `name{label="value",...} number`, label values with only \\, \" and \n escaped.
    private static func sample(_ line: String) throws -> (String, [String: String], Double) {
        var rest = Substring(line)
        let name = String(rest.prefix { $0 != "{" && $0 != " " })
        guard isMetricName(name) else { throw ParseError(description: "bad metric name: \(line)") }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let label = String(rest.prefix { $0 != "=" })
                guard label.range(of: "^[a-zA-Z_][a-zA-Z0-9_]*$", options: .regularExpression) != nil,
                    rest.dropFirst(label.count).hasPrefix("=\"")
                else { throw ParseError(description: "bad label: \(line)") }
                rest = rest.dropFirst(label.count + 2)
                var value = ""
                while true {
                    guard let character = rest.popFirst() else { throw ParseError(description: "open label: \(line)") }
                    if character == "\"" { break }
                    if character == "\\" {
                        switch rest.popFirst() {
                        case "\\": value.append("\\")
                        case "\"": value.append("\"")
                        case "n": value.append("\n")
                        default: throw ParseError(description: "bad escape: \(line)")
                        }
                    } else if character == "\n" {
                        throw ParseError(description: "raw line feed in a label: \(line)")
                    } else {
                        value.append(character)
                    }
                }
                guard labels.updateValue(value, forKey: label) == nil else {
                    throw ParseError(description: "label twice: \(line)")
                }
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw ParseError(description: "bad label list: \(line)")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw ParseError(description: "no value: \(line)") }
        return (name, labels, try number(String(rest.dropFirst())))
    }
}
