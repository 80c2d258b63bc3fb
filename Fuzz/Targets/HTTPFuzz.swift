import HTTPServer

/// The input is a request head, its first byte choosing the size of the slices it arrives in. Read in
/// slices and whole, it must end the same way; what is read must read back the same from a head
/// written from it; and the answer to it must be written without a trap.
func fuzzHTTP(_ input: [UInt8]) {
    guard let first = input.first else { return }
    let bytes = input.dropFirst()
    let sliceSize = Int(first % 64) + 1
    var whole = HTTPRequestReader()
    let wholeOutcome = whole.read(bytes)
    var sliced = HTTPRequestReader()
    var slicedOutcome: Result<HTTPRequest, HTTPRequest.Refusal>?
    var start = bytes.startIndex
    while slicedOutcome == nil, start < bytes.endIndex {
        let end = min(start + sliceSize, bytes.endIndex)
        slicedOutcome = sliced.read(bytes[start..<end])
        start = end
    }
    require(slicedOutcome == wholeOutcome, "a head read in slices ended otherwise than read whole")
    guard case .success(let request)? = wholeOutcome else { return }
    require(request.path.hasPrefix("/"), "a path not in origin-form was read")
    let fields = request.headers.map { "\($0.name): \($0.value)\r\n" }.joined()
    let written = Array("\(request.method) \(request.path) \(request.version.rawValue)\r\n\(fields)\r\n".utf8)
    var again = HTTPRequestReader()
    require(again.read(written) == .success(request), "a request did not read back from its own head")
    _ = HTTPResponse(.ok, body: request.path).serialized(withBody: request.method != "HEAD")
}
