import Foundation
import SQLiteTesting
import Testing

@testable import SQLite

@Suite struct WALCheckpointerTests {
    @Test func aCommitPastTheThresholdSchedulesOneCheckpointAndPastTheLimitCheckpointsInline() {
        #expect(WALCheckpointer.action(pages: 999, threshold: 1000, limit: 8000, scheduled: false) == .none)
        #expect(WALCheckpointer.action(pages: 1000, threshold: 1000, limit: 8000, scheduled: false) == .schedule)
        #expect(WALCheckpointer.action(pages: 5000, threshold: 1000, limit: 8000, scheduled: true) == .none)
        #expect(WALCheckpointer.action(pages: 8000, threshold: 1000, limit: 8000, scheduled: true) == .checkpointInline)
        #expect(
            WALCheckpointer.action(pages: 8000, threshold: 1000, limit: 8000, scheduled: false) == .checkpointInline)
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
