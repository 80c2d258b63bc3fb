import Foundation

/// Whether the tests run under a sanitizer (`contrib/test.sh` sets `APUSH_SANITIZED_RUN` for that run).
/// The scenarios whose component runs as a child process under heavy load (kill -9 rounds, two
/// instances, a database restart) are left to the plain run: a sanitizer's report from a child process
/// lands in its log, not the run's, so they would add only load, under which the other suites'
/// liveness bounds were passed.
public enum SanitizedRun {
    public static var isActive: Bool { ProcessInfo.processInfo.environment["APUSH_SANITIZED_RUN"] != nil }
}
