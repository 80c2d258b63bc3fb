import Foundation

/// XEP-0082 DateTime and the legacy XEP-0091 form, parsed without locale or calendar state.
enum XMPPDateTime {
    static func parse(_ string: String) -> Date? {
        var scanner = DigitScanner(Array(string.utf8))
        let year: Int
        let month: Int
        let day: Int
        guard let y = scanner.number(4) else { return nil }
        if scanner.skip("-") {
            guard let m = scanner.number(2), scanner.skip("-"), let d = scanner.number(2) else { return nil }
            (year, month, day) = (y, m, d)
        } else {  // XEP-0091: CCYYMMDDThh:mm:ss
            guard let m = scanner.number(2), let d = scanner.number(2) else { return nil }
            (year, month, day) = (y, m, d)
        }
        guard scanner.skip("T"), let hour = scanner.number(2), scanner.skip(":"), let minute = scanner.number(2),
            scanner.skip(":"), let second = scanner.number(2)
        else { return nil }
        var fraction = 0.0
        if scanner.skip(".") {
            guard let digits = scanner.digitRun(), let value = Double("0." + digits) else { return nil }
            fraction = value
        }
        var offset = 0
        if scanner.skip("Z") || scanner.atEnd {
            offset = 0
        } else {
            let sign: Int
            if scanner.skip("+") { sign = 1 } else if scanner.skip("-") { sign = -1 } else { return nil }
            guard let offsetHours = scanner.number(2), scanner.skip(":"), let offsetMinutes = scanner.number(2),
                offsetHours < 24, offsetMinutes < 60
            else { return nil }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        }
        guard scanner.atEnd, (1...12).contains(month), (1...daysInMonth(month, year)).contains(day),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        let seconds = daysSinceEpoch(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private static func daysInMonth(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (the "days from civil" algorithm).
    private static func daysSinceEpoch(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private struct DigitScanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard !atEnd, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        /// Exactly `count` ASCII digits.
        mutating func number(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[position..<position + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            position += count
            return value
        }

        mutating func digitRun() -> String? {
            let start = position
            while !atEnd, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position > start ? String(decoding: bytes[start..<position], as: UTF8.self) : nil
        }
    }
}
