import Testing

@testable import ComponentHost

@Suite struct ProcessMetricsTests {
    /// proc(5): the command in parentheses may hold spaces and parentheses; fields count after the last.
    static let stat =
        "4242 (apush (x) y) S 1 4242 4242 0 -1 4194560 1500 0 0 0 250 150 0 0 20 0 3 0 12000 300000000 2048 "
        + "18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"

    @Test func theStatLineGivesMemoryCPUAndStartTime() throws {
        let metrics = try #require(
            ProcessMetrics.parse(
                stat: Self.stat, bootTime: 1_700_000_000, ticksPerSecond: 100, pageSize: 4096, openDescriptors: 9))
        #expect(metrics.residentMemoryBytes == 2048 * 4096)
        #expect(metrics.cpuSeconds == 4.0)
        #expect(metrics.startTimeSeconds == 1_700_000_120)
        #expect(metrics.openDescriptors == 9)
    }

    @Test(arguments: ["", "4242 apush S 1", "4242 (apush) S 1 2 3", "4242 (apush) S x y z"])
    func aStatLineCutShortOrWithoutItsCommandGivesNothing(_ stat: String) {
        #expect(
            ProcessMetrics.parse(stat: stat, bootTime: 0, ticksPerSecond: 100, pageSize: 4096, openDescriptors: 1)
                == nil)
    }

    @Test func bootTimeIsTheBtimeLine() {
        #expect(ProcessMetrics.bootTime(fromProcStat: "cpu  1 2 3\nbtime 1700000000\nprocesses 5\n") == 1_700_000_000)
        #expect(ProcessMetrics.bootTime(fromProcStat: "cpu  1 2 3\n") == nil)
    }

    @Test func thisProcessHasFiguresOnLinux() throws {
        let metrics = try #require(ProcessMetrics.current())
        #expect(metrics.residentMemoryBytes > 0)
        #expect(metrics.openDescriptors > 2)
        #expect(metrics.startTimeSeconds > 1_600_000_000)
    }
}
