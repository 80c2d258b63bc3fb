@testable import XMLStream

/// The input is one byte `n`, then `n` slice lengths (one byte each, 1...256, used in turn), then the
/// bytes of a stream. The stream is read whole and in those slices: when both readings succeed they
/// must report the same events, and each stanza must read back from what it writes. Every reading must end in events or
/// an error, never a trap, and a
/// parser that failed must keep failing the same way, and read like new after `reset()`. Under tight
/// limits a stanza over them is skipped: only its start tag is reported.
func fuzzStreamParser(_ input: [UInt8]) {
    let sliceCount = Int(input.first ?? 0) % 32
    let lengths = input.dropFirst().prefix(sliceCount).map { Int($0) + 1 }
    let stream = Array(input.dropFirst(1 + sliceCount))

    let parser = StreamParser()
    let whole = read(stream, slicedBy: [], with: parser)
    let sliced = read(stream, slicedBy: lengths, with: StreamParser())
    if case .success(let wholeEvents) = whole, case .success(let slicedEvents) = sliced {
        require(wholeEvents == slicedEvents, "slicing changed the events")
    }
    if case .success(let events) = whole {
        for case .stanza(let stanza) in events {
            let written = stanza.serialized()
            let reread = try? StreamParser().feed(Array((emptyStreamHeader + written).utf8))
            require(
                reread == [.streamStart(emptyStreamRoot), .stanza(stanza)],
                "a stanza changed when written and read again: \(written)")
        }
    }
    if case .failure(let error) = whole {
        require(
            Result { () throws(StreamParseError) in try parser.feed([UInt8(ascii: " ")]) }.error == error,
            "a failed parser read on")
    }
    parser.reset()
    require(read(stream, slicedBy: [], with: parser) == whole, "reset() did not start afresh")

    // Tight limits reach the size and depth checks, and the skipping of a stanza over them, with small
    // inputs. A skipped stanza is reported by its start tag alone, and the reader goes on after it.
    let tight = StreamLimits(maxStanzaBytes: 300, maxDepth: 3, maxSkippedTagBytes: 600)
    if case .success(let events) = read(stream, slicedBy: lengths, with: StreamParser(limits: tight)) {
        for case .skippedStanza(let head, let reason) in events {
            require(head.children.isEmpty, "a skipped stanza kept its content")
            require(reason.condition == .policyViolation, "a stanza was skipped for \(reason)")
        }
    }
}

private let emptyStreamHeader = "<stream:stream xmlns:stream='http://etherx.jabber.org/streams'>"
private let emptyStreamRoot = Element("stream", namespace: "http://etherx.jabber.org/streams")

private func read(_ stream: [UInt8], slicedBy lengths: [Int], with parser: StreamParser)
    -> Result<[StreamEvent], StreamParseError>
{
    var events: [StreamEvent] = []
    var offset = 0
    var turn = 0
    repeat {
        let length = lengths.isEmpty ? stream.count : lengths[turn % lengths.count]
        let end = min(stream.count, offset + length)
        do {
            events += try parser.feed(stream[offset..<end])
        } catch {
            return .failure(error)
        }
        offset = end
        turn += 1
    } while offset < stream.count
    return .success(events)
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
