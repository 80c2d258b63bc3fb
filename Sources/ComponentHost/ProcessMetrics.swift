import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What Prometheus' process collector reports, read from /proc: memory, CPU time, start time, open
/// descriptors.
public struct ProcessMetrics: Sendable, Equatable {
    public var residentMemoryBytes: Int64
    public var cpuSeconds: Double
    /// Since the Unix epoch.
    public var startTimeSeconds: Double
    public var openDescriptors: Int64

    public init(residentMemoryBytes: Int64, cpuSeconds: Double, startTimeSeconds: Double, openDescriptors: Int64) {
        self.residentMemoryBytes = residentMemoryBytes
        self.cpuSeconds = cpuSeconds
        self.startTimeSeconds = startTimeSeconds
        self.openDescriptors = openDescriptors
    }

    /// This process's figures; nil where /proc cannot be read (not Linux, or a restricted /proc).
    public static func current() -> ProcessMetrics? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let bootTime = bootTime(fromProcStat: system),
            let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
        else { return nil }
        return parse(
            stat: stat, bootTime: bootTime, ticksPerSecond: Int64(sysconf(Int32(_SC_CLK_TCK))),
            pageSize: Int64(sysconf(Int32(_SC_PAGESIZE))), openDescriptors: Int64(descriptors.count))
    }

    /// Reads /proc/self/stat (proc(5)): utime and stime (fields 14, 15) and starttime (22) in clock
    /// ticks, rss (24) in pages. The command (field 2) is in parentheses and may hold spaces and
    /// parentheses itself: fields are counted after its last `)`.
    static func parse(stat: String, bootTime: Int64, ticksPerSecond: Int64, pageSize: Int64, openDescriptors: Int64)
        -> ProcessMetrics?
    {
        guard ticksPerSecond > 0, let close = stat.lastIndex(of: ")") else { return nil }
        // After the command: field 3 (state) is at index 0.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func field(_ number: Int) -> Int64? {
            let index = number - 3
            return fields.indices.contains(index) ? Int64(fields[index]) : nil
        }
        guard let user = field(14), let system = field(15), let start = field(22), let pages = field(24) else {
            return nil
        }
        let (memory, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return ProcessMetrics(
            residentMemoryBytes: overflow ? .max : memory,
            cpuSeconds: Double(user) / Double(ticksPerSecond) + Double(system) / Double(ticksPerSecond),
            startTimeSeconds: Double(bootTime) + Double(start) / Double(ticksPerSecond),
            openDescriptors: openDescriptors)
    }

    /// The `btime` line of /proc/stat: when the system booted, in seconds since the epoch.
    static func bootTime(fromProcStat text: String) -> Int64? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Int64(line.dropFirst("btime ".count))
        }
        return nil
    }

    /// The four process series, under the names Prometheus' process collector uses.
    public func write(to text: inout MetricsText) {
        text.family("process_resident_memory_bytes", .gauge, help: "Resident memory size in bytes.")
        text.sample("process_resident_memory_bytes", residentMemoryBytes)
        text.family("process_cpu_seconds_total", .counter, help: "Total user and system CPU time spent in seconds.")
        text.sample("process_cpu_seconds_total", cpuSeconds)
        text.family(
            "process_start_time_seconds", .gauge, help: "Start time of the process since unix epoch in seconds.")
        text.sample("process_start_time_seconds", startTimeSeconds)
        text.family("process_open_fds", .gauge, help: "Number of open file descriptors.")
        text.sample("process_open_fds", openDescriptors)
    }
}
