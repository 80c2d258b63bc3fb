import Foundation

/// Whether the tests run under a sanitizer (`contrib/test.sh` sets `APUSH_SANITIZED_RUN` for that run).
/// The suites that run two component processes beside a real server are left to the plain run: a
/// sanitizer's report from a child process lands in its log, not the run's, so they would add only
/// load, under which the other suites' liveness bounds were passed.
public enum SanitizedRun {
    public static var isActive: Bool { ProcessInfo.processInfo.environment["APUSH_SANITIZED_RUN"] != nil }
}
