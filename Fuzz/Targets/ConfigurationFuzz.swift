import APush
import Foundation

@testable import ComponentHost

/// The input is a configuration file: it must be read or refused with an error naming a key, and
/// what is read must give the push module its settings or such an error.
func fuzzConfiguration(_ input: [UInt8]) {
    guard let configuration = try? Configuration.load(json: Data(input), environment: [:], schema: .apushComponent)
    else { return }
    _ = try? APushModule.settings(from: configuration)
}
