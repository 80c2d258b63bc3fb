import Foundation

/// The harnesses in this executable; `APUSH_FUZZ_TARGET` picks the one libFuzzer runs
/// (contrib/fuzz.sh sets it). One binary for all of them: one build, one link.
enum FuzzTarget: String, CaseIterable {
    case streamParser = "stream-parser"
    case publish
    case bridge
    case dataForm = "data-form"
    case jid
    case configuration
    case http
    case adHocSession = "ad-hoc-session"
    case storeNotification = "store-notification"

    func run(_ input: [UInt8]) {
        switch self {
        case .streamParser: fuzzStreamParser(input)
        case .publish: fuzzPublish(input)
        case .bridge: fuzzBridge(input)
        case .dataForm: fuzzDataForm(input)
        case .jid: fuzzJID(input)
        case .configuration: fuzzConfiguration(input)
        case .http: fuzzHTTP(input)
        case .adHocSession: fuzzAdHocSession(input)
        case .storeNotification: fuzzStoreNotification(input)
        }
    }

    static let selected: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["APUSH_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("APUSH_FUZZ_TARGET must be one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    FuzzTarget.selected.run(Array(UnsafeRawBufferPointer(start: start, count: count)))
    return 0
}

/// SwiftPM links an executable's `main` to `<module>_main` (`--defsym`), which a module built with
/// `-parse-as-library` does not define: this is it, and it hands over to libFuzzer's own driver.
@_cdecl("apush_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var argc = argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return LLVMFuzzerRunDriver(&argc, &argv) { data, count in
        // libFuzzer always passes a buffer, an empty input included.
        guard let data else { return 0 }
        return fuzz(UnsafeRawPointer(data), count)
    }
}

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// A property the code under test must keep: when it does not, the input is a finding, and libFuzzer
/// saves it (the trap is what it watches for).
func require(_ condition: Bool, _ what: @autoclosure () -> String) {
    if !condition {
        FileHandle.standardError.write(Data("fuzz finding: \(what())\n".utf8))
        abort()
    }
}
