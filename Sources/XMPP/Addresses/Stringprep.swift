import Foundation

/// RFC 3454 stringprep with the three XMPP profiles, as Prosody 0.12 (ICU's usprep) and ejabberd
/// 23.01 apply them to every address: nodeprep and resourceprep (RFC 3920 appendices A and B) and
/// nameprep (RFC 3491). A JID typed as `STRASSE@example.org`, `straße@example.org` or in full-width
/// letters then compares equal to what the server sends.
///
/// Steps: map (B.1 characters removed; B.2 case folding for nodeprep and nameprep), NFKC, refuse
/// the profile's prohibited characters (tables C.*), check bidirectional text (section 6).
///
/// How far Foundation goes, measured on this Linux toolchain: `folding(options: .caseInsensitive)`
/// is Unicode's full case folding (ß → ss, ς → σ, ﬀ → ff, U+0345 → ι, İ → i + U+0307, ı kept), which
/// is what B.2 holds for Unicode 3.2; `lowercased()` is not (ß, ς and ﬀ stay). B.2's other entries
/// (℃ → °c, 𝐀 → a) are what NFKC makes of a character folded again, so fold, NFKC, fold, NFKC gives
/// them. Characters assigned after Unicode 3.2 are unassigned to stringprep: as Prosody does (ejabberd
/// refuses them), they are accepted, kept unmapped and unnormalised, and a folding whose result was
/// assigned later (Cherokee, Georgian) is not applied. Bidi categories come from
/// table D.1 (right-to-left) and approximations where the servers use ICU's current bidi data (the
/// standard library has none): see `isRightToLeft` and `isLeftToRight`.
///
/// Measured against Prosody's own stringprep on every scalar U+0080-U+2FFFF (194,394), for each
/// profile: alone, 5 differ (CJK compatibility ideographs whose decomposition Unicode 4.0
/// corrected); between Latin letters, 116; between Hebrew letters, 3,431, nearly all left-to-right
/// symbols and punctuation taken as neutral, so the servers refuse a little more than this does.
enum Stringprep {
    enum Profile {
        case nodeprep, nameprep, resourceprep

        var foldsCase: Bool { self != .resourceprep }
    }

    enum Failure: Error, Equatable {
        case prohibited(Unicode.Scalar)
        /// Right-to-left text mixed with left-to-right, or not starting and ending right-to-left.
        case bidi
    }

    static func prepare(_ text: String, _ profile: Profile) throws(Failure) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return try prepareASCII(text, profile) }
        var mapped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where !mapsToNothing(scalar) {
            if profile.foldsCase { mapped.append(contentsOf: folded(scalar)) } else { mapped.append(scalar) }
        }
        var result = compatibilityNormalized(mapped)
        // Folding again matters only where NFKC changed something (℃ became °C).
        if profile.foldsCase, !result.unicodeScalars.elementsEqual(mapped) {
            var refolded = String.UnicodeScalarView()
            for scalar in result.unicodeScalars { refolded.append(contentsOf: folded(scalar)) }
            result = compatibilityNormalized(refolded)
        }
        for scalar in result.unicodeScalars where isProhibited(scalar, profile) {
            throw .prohibited(scalar)
        }
        try checkBidi(result)
        return result
    }

    /// Nearly every address is ASCII: no mapping but ASCII case, no NFKC, no bidi; bytes only.
    private static func prepareASCII(_ text: String, _ profile: Profile) throws(Failure) -> String {
        var hasUppercase = false
        for byte in text.utf8 {
            if isProhibitedASCII(byte, profile) { throw .prohibited(Unicode.Scalar(byte)) }
            if (0x41...0x5A).contains(byte) { hasUppercase = true }
        }
        guard profile.foldsCase, hasUppercase else { return text }
        return String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    // MARK: Mapping

    /// Table B.1: characters commonly mapped to nothing (soft hyphen, joiners, variation selectors).
    private static func mapsToNothing(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00AD, 0x034F, 0x1806, 0x180B...0x180D, 0x200B...0x200D, 0x2060, 0xFE00...0xFE0F, 0xFEFF: true
        default: false
        }
    }

    /// Table B.2 for one character: its full case folding, when stringprep's Unicode 3.2 knew both.
    private static func folded(_ scalar: Unicode.Scalar) -> String.UnicodeScalarView {
        if scalar.isASCII {
            return String((0x41...0x5A).contains(scalar.value) ? Unicode.Scalar(UInt8(scalar.value) + 0x20) : scalar)
                .unicodeScalars
        }
        guard isAssignedInUnicode32(scalar) else { return String(scalar).unicodeScalars }
        let folding = String(scalar).folding(options: .caseInsensitive, locale: nil).unicodeScalars
        return folding.allSatisfy(isAssignedInUnicode32) ? folding : String(scalar).unicodeScalars
    }

    /// NFKC of the characters Unicode 3.2 had; a later one is kept as it is, and splits the text
    /// (Unicode 3.2 normalization does not know it).
    private static func compatibilityNormalized(_ scalars: String.UnicodeScalarView) -> String {
        var result = ""
        var segment = String.UnicodeScalarView()
        for scalar in scalars {
            if isAssignedInUnicode32(scalar) {
                segment.append(scalar)
            } else {
                result += String(segment).precomposedStringWithCompatibilityMapping
                result.unicodeScalars.append(scalar)
                segment = String.UnicodeScalarView()
            }
        }
        return result + String(segment).precomposedStringWithCompatibilityMapping
    }

    private static func isAssignedInUnicode32(_ scalar: Unicode.Scalar) -> Bool {
        guard let age = scalar.properties.age else { return false }
        return age.major < 3 || (age.major == 3 && age.minor <= 2)
    }

    // MARK: Prohibition

    private static func isProhibitedASCII(_ byte: UInt8, _ profile: Profile) -> Bool {
        switch (profile, byte) {
        // C.2.1 controls; for a node also C.1.1 (space) and RFC 3920 A.5's " & ' / : < > @.
        case (.nodeprep, 0x00...0x20), (.nodeprep, 0x7F), (.nodeprep, 0x22), (.nodeprep, 0x26), (.nodeprep, 0x27),
            (.nodeprep, 0x2F), (.nodeprep, 0x3A), (.nodeprep, 0x3C), (.nodeprep, 0x3E), (.nodeprep, 0x40),
            (.resourceprep, 0x00...0x1F), (.resourceprep, 0x7F):
            true
        default: false  // ASCII in a domain is left to its own rules (letters, digits, hyphens).
        }
    }

    private static func isProhibited(_ scalar: Unicode.Scalar, _ profile: Profile) -> Bool {
        if scalar.isASCII { return isProhibitedASCII(UInt8(scalar.value), profile) }
        switch scalar.value {
        case 0x00A0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: return true  // C.1.2 spaces
        case 0x0080...0x009F, 0x06DD, 0x070F, 0x180E, 0x200C...0x200D, 0x2028...0x2029, 0x2060...0x2063,
            0x206A...0x206F, 0xFEFF, 0xFFF9...0xFFFC, 0x1D173...0x1D17A:
            return true  // C.2.2 controls
        case 0xFFF9...0xFFFD: return true  // C.6 inappropriate for plain text
        case 0x2FF0...0x2FFB: return true  // C.7 ideographic description
        case 0x0340...0x0341, 0x200E...0x200F, 0x202A...0x202E: return true  // C.8 display and deprecated
        case 0xE0001, 0xE0020...0xE007F: return true  // C.9 tagging
        default:
            // C.3 private use, C.4 non-characters (C.5 surrogates cannot occur in a String).
            return scalar.properties.generalCategory == .privateUse || scalar.properties.isNoncharacterCodePoint
        }
    }

    // MARK: Bidi (RFC 3454 section 6)

    private static func checkBidi(_ text: String) throws(Failure) {
        let scalars = text.unicodeScalars
        guard scalars.contains(where: isRightToLeft) else { return }
        guard !scalars.contains(where: isLeftToRight), let first = scalars.first, let last = scalars.last,
            isRightToLeft(first), isRightToLeft(last)
        else { throw .bidi }
    }

    /// Table D.1: bidi category R or AL in Unicode 3.2. The servers (ICU) take a later character in
    /// one of the right-to-left blocks as right-to-left too, unless it is a mark, a digit or a format
    /// character (an approximation: the standard library has no bidi data).
    private static func isRightToLeft(_ scalar: Unicode.Scalar) -> Bool {
        if !isAssignedInUnicode32(scalar) {
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark, .decimalNumber, .format:
                return false
            default: break
            }
            switch scalar.value {
            case 0x0590...0x08FF, 0xFB1D...0xFDCF, 0xFDF0...0xFDFF, 0xFE70...0xFEFF, 0x10800...0x10FFF,
                0x1E800...0x1EFFF:
                return true
            default: return false
            }
        }
        switch scalar.value {
        case 0x05BE, 0x05C0, 0x05C3, 0x05D0...0x05EA, 0x05F0...0x05F4, 0x061B, 0x061F, 0x0621...0x063A,
            0x0640...0x064A, 0x066D...0x066F, 0x0671...0x06D5, 0x06DD, 0x06E5...0x06E6, 0x06FA...0x06FE,
            0x0700...0x070D, 0x0710, 0x0712...0x072C, 0x0780...0x07A5, 0x07B1, 0x200F, 0xFB1D,
            0xFB1F...0xFB28, 0xFB2A...0xFB36, 0xFB38...0xFB3C, 0xFB3E, 0xFB40...0xFB41, 0xFB43...0xFB44,
            0xFB46...0xFBB1, 0xFBD3...0xFD3D, 0xFD50...0xFD8F, 0xFD92...0xFDC7, 0xFDF0...0xFDFC,
            0xFE70...0xFE74, 0xFE76...0xFEFC:
            return true
        default: return false
        }
    }

    /// An approximation of table D.2 (bidi category L), as the servers (ICU) apply it: letters,
    /// spacing marks, letter numbers, digits but the European and Arabic ones, and code points not
    /// yet assigned, outside the right-to-left characters. It misses left-to-right symbols and
    /// punctuation (rare in an address), so it refuses a little less than the servers.
    private static func isLeftToRight(_ scalar: Unicode.Scalar) -> Bool {
        guard !isRightToLeft(scalar) else { return false }
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .spacingMark,
            .letterNumber:
            return true
        case .unassigned:
            return !scalar.properties.isNoncharacterCodePoint
        case .decimalNumber:
            switch scalar.value {
            case 0x0030...0x0039, 0x0600...0x08FF, 0x10D30...0x10D39, 0x1E950...0x1E959, 0x1D7CE...0x1D7FF,
                0xFF10...0xFF19:
                return false
            default: return true
            }
        default:
            return false
        }
    }
}
