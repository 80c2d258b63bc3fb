import ComponentHost
import HTTPServer
import Store

extension PushService {
    /// /health: the link's state from the host, the store's from a count of what it keeps, taken at most
    /// once per `StoreReading.interval` (a probe in between is answered from memory).
    func health(host: HostStatus) async -> HTTPResponse {
        let registrations = await storeReading.registrations(at: now()) { [store] in
            try? await store.registrationsByDomain().values.reduce(0, +)
        }
        return HealthReport(
            role: host.linkRole, registrations: registrations, version: host.version,
            uptimeSeconds: host.uptimeSeconds, inFlight: delivery.publishesInFlight,
            inFlightLimit: settings.maxInFlight,
            httpAcceptFailures: host.httpAcceptFailures
        ).response
    }

    /// /metrics: the counters admin-stats reads, the histograms, the gauges and the process's figures.
    func metrics(host: HostStatus, servedDomains: Set<String>) async -> HTTPResponse {
        let registrations = (try? await store.registrationsByDomain()).map { counts in
            counts.merging(servedDomains.map { ($0, 0) }) { stored, _ in stored }
        }
        let page = MetricsPage(
            counters: statistics.sinceStartByStatistic, upstream: statistics.histogram(.upstream),
            publish: statistics.histogram(.publish), inFlight: delivery.publishesInFlight,
            inFlightLimit: settings.maxInFlight,
            registrations: registrations, stockRegistrations: try? await store.countRegistrationsWithoutAccount(),
            limits: settings.storeLimits, linkUp: host.linkIsUp, linkReconnects: host.linkReconnects,
            httpAcceptFailures: host.httpAcceptFailures, process: ProcessMetrics.current())
        return HTTPResponse(.ok, contentType: MetricsText.contentType, body: page.text)
    }
}
