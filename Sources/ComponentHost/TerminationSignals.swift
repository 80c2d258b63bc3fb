import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// Waits for SIGTERM or SIGINT through Dispatch signal sources, so a stop is graceful.
public enum TerminationSignals {
    /// Returns the signal's name once one arrives. The sources are set up before this suspends, so an
    /// early signal is not lost.
    public static func wait() async -> String {
        let queue = DispatchQueue(label: "apush.signals")
        let (stream, continuation) = AsyncStream<String>.makeStream()
        var sources: [any DispatchSourceSignal] = []
        for (number, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { continuation.yield(name) }
            source.resume()
            sources.append(source)
        }
        defer { for source in sources { source.cancel() } }
        for await name in stream {
            return name
        }
        return "cancelled"
    }
}
