import Testing

@testable import SQLCore

@Suite struct MigrationTests {
    @Test func theNewestVersionIsTheLastOfAnAscendingList() throws {
        #expect(try Migration.newestVersion(of: []) == 0)
        #expect(try Migration.newestVersion(of: [1, 2, 5].map { Migration(version: $0, sql: "") }) == 5)
    }

    @Test(arguments: [[2, 1], [1, 1], [0, 1], [-1]])
    func versionsThatAreNotPositiveAndAscendingAreRefused(versions: [Int]) {
        #expect(throws: MigrationError.invalidVersions(versions)) {
            try Migration.newestVersion(of: versions.map { Migration(version: $0, sql: "") })
        }
    }
}
