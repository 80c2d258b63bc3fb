import Foundation
import Store

/// Times as people read them in command answers.
enum TimeFormat {
    /// `2026-11-29 16:00:00 UTC`, or `never`.
    static func describe(_ timestamp: Timestamp?) -> String {
        guard let timestamp else { return "never" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(timestamp) / 1000))
    }
}
