/// Writes what `ByteReader` reads: big-endian integers and strings after a two-byte length.
extension [UInt8] {
    mutating func appendBigEndian(_ value: UInt64, width: Int) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) {
            append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// A two-byte count; false past 65,535.
    mutating func appendLength(_ count: Int) -> Bool {
        guard let length = UInt16(exactly: count) else { return false }
        appendBigEndian(UInt64(length), width: 2)
        return true
    }

    mutating func appendString(_ string: String) -> Bool {
        guard appendLength(string.utf8.count) else { return false }
        append(contentsOf: string.utf8)
        return true
    }
}

/// Reads big-endian integers and length-prefixed strings, nil past the end.
struct ByteReader {
    let bytes: [UInt8]
    private var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func integer(width: Int) -> UInt64? {
        take(width)?.reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func string() -> String? {
        guard let length = integer(width: 2), let utf8 = take(Int(length)) else { return nil }
        return String(decoding: utf8, as: UTF8.self)
    }

    private mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count <= bytes.count - offset else { return nil }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }
}
