import Testing

@testable import APush

@Suite struct MaintenanceScheduleTests {
    @Test func countersAreFlushedEveryMinuteAndRowsPrunedEveryFiveMinutes() {
        var schedule = MaintenanceSchedule(start: 0)
        var chores: [Int64: MaintenanceSchedule.Chore] = [:]
        var at: Int64 = 0
        while at <= 600_000 {
            if let chore = schedule.due(at: at) { chores[at] = chore }
            at += 1000
        }
        #expect(
            chores == [
                60_000: .flush, 120_000: .flush, 180_000: .flush, 240_000: .flush, 300_000: .prune,
                360_000: .flush, 420_000: .flush, 480_000: .flush, 540_000: .flush, 600_000: .prune,
            ])
    }

    @Test func theNextChoreIsWhenTheLoopMaySleepUntil() {
        var schedule = MaintenanceSchedule(start: 1000)
        #expect(schedule.next == 61_000)
        #expect(schedule.due(at: 30_000) == nil)
        #expect(schedule.next == 61_000)
        #expect(schedule.due(at: 75_000) == .flush)
        #expect(schedule.next == 135_000)
    }

    @Test func aClockSetBackStartsTheScheduleAgain() {
        var schedule = MaintenanceSchedule(start: 10_000_000)
        #expect(schedule.due(at: 1_000) == .prune)
        #expect(schedule.next == 61_000)
    }
}
