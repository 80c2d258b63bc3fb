import Foundation
import SQLiteTesting
import Testing

import SQLCore

@testable import SQLite

@Suite struct WALCheckpointerTests {
    @Test func aCommitPastTheThresholdSchedulesOneCheckpointAndPastTheLimitCheckpointsInline() {
        func action(_ pages: Int, scheduled: Bool = false, scheduledAt: Int = 0) -> WALCheckpointer.Action {
            WALCheckpointer.action(
                pages: pages, threshold: 1000, limit: 8000, scheduled: scheduled, scheduledAt: scheduledAt)
        }
        #expect(action(999) == .none)
        #expect(action(1000) == .schedule)
        #expect(action(5000, scheduled: true) == .none)
        #expect(action(8000, scheduled: true) == .checkpointInline)
        #expect(action(8000) == .checkpointInline)
    }

    @Test func theNextPassWaitsUntilTheLogHasGrownByAThresholdAgain() {
        func action(_ pages: Int, scheduledAt: Int) -> WALCheckpointer.Action {
            WALCheckpointer.action(
                pages: pages, threshold: 1000, limit: 8000, scheduled: false, scheduledAt: scheduledAt)
        }
        // A pass asked for at 1000 pages copied them; the log keeps growing beside a busy writer.
        #expect(action(1001, scheduledAt: 1000) == .none)
        #expect(action(1999, scheduledAt: 1000) == .none)
        #expect(action(2000, scheduledAt: 1000) == .schedule)
        // A log written from its start again counts from there.
        #expect(action(999, scheduledAt: 3000) == .none)
        #expect(action(1000, scheduledAt: 3000) == .schedule)
    }

    @Test func aGrowingLogAsksForAPassOncePerThresholdNotAtEveryCommit() {
        // No file to copy into: each pass fails at once, which leaves only the asking to count.
        let checkpointer = WALCheckpointer(path: "/nonexistent/apush/store.sqlite", threshold: 16)
        var asked: [Int] = []
        for pages in 1..<(16 * 8) {
            if checkpointer.committed(pages: pages) == .schedule { asked.append(pages) }
            checkpointer.settle()
        }
        #expect(asked == [16, 32, 48, 64, 80, 96, 112])
        // A log written from its start again (a pass copied all of it) counts from there, even when it
        // grows past where the last pass was asked for before it passes the threshold.
        asked = []
        for pages in [5, 10, 113] {
            if checkpointer.committed(pages: pages) == .schedule { asked.append(pages) }
            checkpointer.settle()
        }
        #expect(asked == [113])
    }

    @Test func aFileIsCheckpointedInTheBackgroundAndItsLogStaysBounded() throws {
        try withTemporaryDatabasePath { path in
            let pages = 16
            let database = try Database(.file(path: path), checkpointPages: pages)
            try database.executeScript("CREATE TABLE items (id INTEGER PRIMARY KEY, payload BLOB NOT NULL)")
            let payload = SQLValue.blob([UInt8](repeating: 7, count: 3000))
            for _ in 0..<2000 {
                try database.execute("INSERT INTO items (payload) VALUES (?)", [payload])
            }
            database.settleCheckpoints()
            #expect((database.backgroundCheckpoints ?? 0) > 0)
            // 2000 commits wrote some 2000 pages; a log that was never checkpointed would hold them all.
            let log = try #require(try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int)
            #expect(log <= (pages * 8 + 4) * 4096 + 32 * 1024)
            // What the log held is in the file for any other connection.
            let reader = try Database(.file(path: path))
            #expect(try reader.queryOne("SELECT count(*) AS n FROM items").decode("n", \.int64Value) == 2000)
        }
    }

    @Test func memoryHasNoCheckpointer() throws {
        #expect(try Database(.memory).backgroundCheckpoints == nil)
    }
}
