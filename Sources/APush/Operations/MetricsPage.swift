import ComponentHost
import Store
import XMPP

/// The /metrics page (docs/wire-contract.md, Operations), written from figures already gathered: the
/// counters since start, the two histograms, the gauges, and the process's own figures.
struct MetricsPage: Sendable {
    var counters: [(statistic: Statistic, value: Int64)]
    var upstream: LatencyHistogram
    var publish: LatencyHistogram
    var inFlight: Int
    var inFlightLimit: Int
    /// Registrations by domain; nil when the store did not answer.
    var registrations: [String: Int]?
    /// Registrations with no account (stock mode); nil when the store did not answer.
    var stockRegistrations: Int? = nil
    /// The caps the registrations are held to, shown beside them so an alert can compare the two.
    var limits = StoreLimits()
    var linkUp: Bool
    var linkReconnects: Int
    var httpAcceptFailures: Int
    var process: ProcessMetrics?

    /// The series shown at 0 before anything is counted, so rates and alerts on them work from the
    /// start: every answer, every kind and outcome the contract names, every reason of a drop.
    static let alwaysShown: [Statistic] =
        [
            .answer(.accepted), .answer(.gone), .answer(.wait(.resourceConstraint)), .refusedPublish(.badRequest),
            .refusedPublish(.forbidden), .coalescedHeld, .coalescedSent, .deduplicated, .droppedByPolicy,
            .droppedByRateLimit, .unknownNodeCancelled, .tombstoneAnswer, .upstreamInFlightCap,
            .unrecordedAnswer(.kept), .unrecordedAnswer(.recorded), .unrecordedAnswer(.dropped),
        ]
        + [Summary.Kind.message, .call, .read, .wake].flatMap { kind in
            [Statistic.PushFate.accepted, .deadToken, .refused, .retrying, .expired].map { Statistic.push(kind, $0) }
        }

    var text: String {
        var totals: [CounterSeries: Int64] = [:]
        for statistic in Self.alwaysShown { if let series = statistic.metric { totals[series] = 0 } }
        for (statistic, value) in counters {
            if let series = statistic.metric { totals[series, default: 0] += value }
        }
        var page = MetricsText()
        let byFamily = Dictionary(grouping: totals, by: \.key.family)
        for family in CounterSeries.Family.allCases {
            guard let series = byFamily[family] else { continue }
            page.family(family.rawValue, .counter, help: family.help)
            for (labels, value) in series.map({ ($0.key.labels.sorted { $0.key < $1.key }, $0.value) })
                .sorted(by: { Self.order($0.0, $1.0) })
            {
                page.sample(family.rawValue, labels: labels.map { ($0.key, $0.value) }, value)
            }
        }
        for (name, histogram, help) in [
            ("apush_upstream_seconds", upstream, "Time from sending a push to the App Server to its answer."),
            ("apush_publish_seconds", publish, "Time from a server's publish arriving to the component's answer."),
        ] {
            page.histogram(
                name, help: help, buckets: histogram.cumulative, sum: Double(histogram.sumMilliseconds) / 1000)
        }
        page.family("apush_inflight", .gauge, help: "Pushes sent to the App Server awaiting its answer.")
        page.sample("apush_inflight", Int64(inFlight))
        page.family("apush_inflight_limit", .gauge, help: "The cap of pushes awaiting the App Server (maxInFlight).")
        page.sample("apush_inflight_limit", Int64(inFlightLimit))
        page.family("apush_store_up", .gauge, help: "1 when the store answered this scrape.")
        page.sample("apush_store_up", Int64(registrations == nil ? 0 : 1))
        if let registrations {
            page.family("apush_registrations", .gauge, help: "Registrations kept, by server domain.")
            for domain in registrations.keys.sorted() {
                page.sample("apush_registrations", labels: [("domain", domain)], Int64(registrations[domain] ?? 0))
            }
        }
        if let stockRegistrations {
            page.family("apush_stock_registrations", .gauge, help: "Registrations with no account (stock mode).")
            page.sample("apush_stock_registrations", Int64(stockRegistrations))
        }
        for (name, limit, help) in [
            ("apush_registrations_limit", limits.registrations, "The cap of registrations in all (maxRegistrations)."),
            (
                "apush_stock_registrations_limit", limits.registrationsWithoutAccount,
                "The cap of registrations with no account (maxStockRegistrations)."
            ),
            (
                "apush_account_registrations_limit", limits.registrationsPerAccount,
                "Registrations one account keeps; a new one removes its least recently used."
            ),
        ] {
            page.family(name, .gauge, help: help)
            page.sample(name, Int64(limit))
        }
        page.family("apush_link_up", .gauge, help: "1 while the component link to the server is up.")
        page.sample("apush_link_up", Int64(linkUp ? 1 : 0))
        page.family("apush_link_reconnects_total", .counter, help: "Times the component link was made again.")
        page.sample("apush_link_reconnects_total", Int64(linkReconnects))
        page.family(
            "apush_http_accept_failures_total", .counter,
            help: "Times this endpoint's accepting started to fail (no descriptor left, say); retried with pauses.")
        page.sample("apush_http_accept_failures_total", Int64(httpAcceptFailures))
        process?.write(to: &page)
        return page.text
    }

    /// Label sets in a stable order, value by value.
    private static func order(_ lhs: [(key: String, value: String)], _ rhs: [(key: String, value: String)]) -> Bool {
        lhs.map { "\($0.key)=\($0.value)" }.lexicographicallyPrecedes(rhs.map { "\($0.key)=\($0.value)" })
    }
}
