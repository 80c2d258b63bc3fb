public import Logging
import Synchronization
import Sockets
public import XMLStream

/// How to reach the server and how to keep the link alive.
public struct ComponentConnectionSettings: Sendable {
    public var componentJID: String
    public var secret: String
    public var host: String
    public var port: UInt16
    public var backoff: Backoff
    public var rejectionBackoff: Backoff
    /// While another instance holds the JID (`conflict`).
    public var standbyBackoff: Backoff
    /// A ping goes to `keepaliveTarget` after this long without traffic...
    public var keepaliveInterval: Duration
    /// ...and no answer within this long means the TCP connection is dead.
    public var keepaliveTimeout: Duration
    /// Worst case, a dead link is noticed within interval + interval/2 + timeout = 45 s.
    public static let defaultKeepaliveInterval: Duration = .seconds(20)
    public static let defaultKeepaliveTimeout: Duration = .seconds(15)
    /// Who answers the keepalive ping: one of the server's own domains.
    public var keepaliveTarget: String
    /// How long the server may take from the connection to a completed handshake.
    public var handshakeTimeout: Duration
    public var limits: StreamLimits
    /// At most this many stanzas are handled at once; keep it above the number of requests handlers may
    /// have waiting for an answer at once (the host makes it twice that): see ComponentConnection...
    public var maxStanzasInHandling: Int
    /// ...and at most this many more wait for a handler, read (so answers behind them still arrive);
    /// past that the link stops reading and TCP pushes back on the server.
    public var maxStanzasWaiting: Int
    /// Stanzas with the same key are decided in the order they were read (`StanzaTurn`); nil: any order.
    public var orderingKey: @Sendable (Element) -> String?

    public init(
        componentJID: String, secret: String, host: String, port: UInt16, keepaliveTarget: String,
        backoff: Backoff = Backoff(), rejectionBackoff: Backoff = .afterRejection, standbyBackoff: Backoff = .standby,
        keepaliveInterval: Duration = defaultKeepaliveInterval, keepaliveTimeout: Duration = defaultKeepaliveTimeout,
        handshakeTimeout: Duration = .seconds(10), limits: StreamLimits = StreamLimits(),
        maxStanzasInHandling: Int = defaultMaxStanzasInHandling, maxStanzasWaiting: Int = 256,
        orderingKey: @escaping @Sendable (Element) -> String? = { _ in nil }
    ) {
        self.componentJID = componentJID
        self.secret = secret
        self.host = host
        self.port = port
        self.keepaliveTarget = keepaliveTarget
        self.backoff = backoff
        self.rejectionBackoff = rejectionBackoff
        self.standbyBackoff = standbyBackoff
        self.keepaliveInterval = keepaliveInterval
        self.keepaliveTimeout = keepaliveTimeout
        self.handshakeTimeout = handshakeTimeout
        self.limits = limits
        self.maxStanzasInHandling = maxStanzasInHandling
        self.maxStanzasWaiting = maxStanzasWaiting
        self.orderingKey = orderingKey
    }

    public static let defaultMaxStanzasInHandling = 1024
}

public enum ConnectionEvent: Sendable, Equatable {
    case connected
    case disconnected(ComponentStreamFailure)
}

/// Why a stanza could not be sent or a request got no answer.
public enum ComponentLinkError: Error, Sendable, Equatable {
    case notConnected
    case timedOut
    case disconnected
    /// A request with that id is already waiting for its answer.
    case duplicateID
    /// The answer came over the stream's stanza limits: it was skipped unread.
    case answerTooLarge
}

/// Something that can send stanzas to the server and wait for the answer to an IQ.
public protocol StanzaSender: Sendable {
    func send(_ stanza: Element) throws
    /// Sends an IQ get/set (an id is assigned when it has none) and returns the result or error stanza.
    func request(_ iq: Element, timeout: Duration) async throws -> Element
}

/// The component's link to its server (XEP-0114), reconnecting for as long as `run` runs.
///
/// Stanzas for the component are handed to `onStanza` concurrently, so a handler that waits (for an
/// upstream answer, say) never holds up the read loop. Answers to our own requests are matched by id
/// and never reach `onStanza`.
///
/// Backpressure: at most `maxStanzasInHandling` stanzas are handled at once and `maxStanzasWaiting`
/// more wait, read; past that the reader stops reading, so the socket (`TCPConnection` reads only a
/// few chunks ahead) and then the server's TCP send buffer fill, instead of our memory.
///
/// Why that cannot deadlock: a handler may wait for an answer that arrives on this same socket, behind
/// the stanzas we stopped reading. While only the handlers are full, the reader keeps reading: new
/// stanzas join the waiting line and answers go straight to their callers. Reading stops only when
/// the line is full too, and then at most the modules' requests in flight (the push module's
/// `maxInFlight`, 512: past that a publish is answered `wait` without asking) can be waiting for an
/// answer; the host makes the handler cap twice that (1024 by default), so the other handlers need
/// nothing from the socket, finish, and take waiting stanzas, which lets the reader go on. Should that
/// ever fail (a cap set lower by hand), every request still ends at its timeout, so the link stalls
/// for that long but never for good. While the reader is held, the
/// keepalive does not ping: its answer could not be read, and a busy server is not a dead one.
public final class ComponentConnection: StanzaSender {
    private let settings: ComponentConnectionSettings
    private let logger: Logger
    private let link = Mutex(Link())
    /// Begins the id of every request this instance sends: an answer whose id does not is another
    /// instance's (`onStrayAnswer`).
    private let idPrefix = String(UInt64.random(in: .min ... .max), radix: 36)
    /// Each stanza read, with its turn among those of its ordering key.
    private let stanzas: StanzaGate<(Element, StanzaTurn?)>

    private struct Link {
        var socket: TCPConnection?
        var ready = false
        var nextID: UInt64 = 0
        var pending: [String: CheckedContinuation<Element, any Error>] = [:]
        var timers: [String: Task<Void, any Error>] = [:]
        /// Whom each request went to: only that entity's answer is taken.
        var addressees: [String: JID?] = [:]
        var endReason: ComponentStreamFailure?
    }

    public init(settings: ComponentConnectionSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        stanzas = StanzaGate(maxHandling: settings.maxStanzasInHandling, maxWaiting: settings.maxStanzasWaiting)
    }

    /// Stanzas read and not yet handled to the end (being handled, or waiting for a handler).
    package var stanzasHeld: Int {
        let held = stanzas.held
        return held.handling + held.waiting
    }

    /// Connects, serves, and reconnects with backoff until the calling task is cancelled; then closes
    /// the stream politely and returns.
    ///
    /// `onStrayAnswer` gets the answers (IQ results and errors) to requests this instance never sent,
    /// when several instances share the component JID and the server spreads its stanzas over their
    /// connections: another instance asked, and waits for it (`acceptRelayedAnswer`). Without it they
    /// go to `onStanza` like any stanza.
    public func run(
        onStanza: @escaping @Sendable (Element) async -> Void,
        onEvent: @escaping @Sendable (ConnectionEvent) async -> Void = { _ in },
        onStrayAnswer: (@Sendable (Element) -> Void)? = nil
    ) async {
        await withDiscardingTaskGroup { handlers in
            var schedule = ReconnectSchedule(
                backoff: settings.backoff, rejectionBackoff: settings.rejectionBackoff,
                standbyBackoff: settings.standbyBackoff)
            while !Task.isCancelled {
                let (failure, wasReady) = await session(
                    handlers: &handlers, schedule: &schedule, onStanza: onStanza, onEvent: onEvent,
                    onStrayAnswer: onStrayAnswer)
                if Task.isCancelled { break }
                await onEvent(.disconnected(failure))
                let step = schedule.ended(failure, wasReady: wasReady)
                let server = "\(settings.host):\(settings.port)"
                let message = "component link to \(server) down: \(failure); retrying in \(step.delay)"
                switch step.notice {
                case .warning: logger.warning(message)
                case .error: logger.error(message)
                case .standingBy:
                    logger.notice(
                        "standing by: another instance holds \(settings.componentJID) on \(server) (\(failure)); "
                            + "asking again every second to take over when it goes")
                case .none: break
                }
                try? await Task.sleep(for: step.delay)
            }
        }
    }

    public func send(_ stanza: Element) throws {
        let socket = link.withLock { $0.ready ? $0.socket : nil }
        guard let socket else { throw ComponentLinkError.notConnected }
        try socket.send(stanza.serialized(parentNamespace: Namespace.componentAccept))
    }

    public func request(_ iq: Element, timeout: Duration) async throws -> Element {
        var iq = iq
        let id =
            iq[attribute: "id"]
            ?? link.withLock { link in
                link.nextID += 1
                return "\(idPrefix)-\(link.nextID)"
            }
        iq[attribute: "id"] = id
        let addressee = iq[attribute: "to"].flatMap { try? JID($0) }
        return try await withCheckedThrowingContinuation { continuation in
            let refusal = link.withLock { link -> ComponentLinkError? in
                guard link.ready else { return .notConnected }
                guard link.pending[id] == nil else { return .duplicateID }
                link.pending[id] = continuation
                link.addressees[id] = addressee
                return nil
            }
            if let refusal {
                continuation.resume(throwing: refusal)
                return
            }
            // The timer starts only once the request is registered, so it can never fire first.
            let timer = Task {
                try await Task.sleep(for: timeout)
                self.resolve(id: id, with: .failure(ComponentLinkError.timedOut))
            }
            link.withLock { $0.timers[id] = timer }
            do {
                try send(iq)
            } catch {
                resolve(id: id, with: .failure(error))
            }
        }
    }

    private func resolve(id: String, with result: Result<Element, any Error>) {
        let (continuation, timer) = link.withLock { link in
            link.addressees.removeValue(forKey: id)
            return (link.pending.removeValue(forKey: id), link.timers.removeValue(forKey: id))
        }
        timer?.cancel()
        continuation?.resume(with: result)
    }

    /// One connection, from connect to close. Returns why it ended and whether it got ready.
    private func session(
        handlers: inout DiscardingTaskGroup, schedule: inout ReconnectSchedule,
        onStanza: @escaping @Sendable (Element) async -> Void,
        onEvent: @escaping @Sendable (ConnectionEvent) async -> Void,
        onStrayAnswer: (@Sendable (Element) -> Void)?
    ) async -> (ComponentStreamFailure, Bool) {
        let socket: TCPConnection
        do {
            socket = try await TCPConnection.connect(host: settings.host, port: settings.port)
        } catch {
            return (.connectionLost("\(error)"), false)
        }
        link.withLock { $0 = Link(socket: socket, nextID: $0.nextID) }
        var machine = ComponentStreamStateMachine(componentJID: settings.componentJID, secret: settings.secret)
        let parser = StreamParser(limits: settings.limits)
        let activity = ActivityClock()
        var wasReady = false
        var turns = StanzaTurns(limit: 2 * (settings.maxStanzasInHandling + settings.maxStanzasWaiting))
        let keepalive = Task { await keepAlive(socket: socket, lastActivity: activity) }
        let handshakeDeadline = Task { await closeUnlessReady(socket, within: settings.handshakeTimeout) }
        defer {
            keepalive.cancel()
            handshakeDeadline.cancel()
        }

        var failure: ComponentStreamFailure?
        func perform(_ action: ComponentStreamStateMachine.Action) async {
            switch action {
            case .send(let text):
                try? socket.send(text)
            case .ready:
                wasReady = true
                link.withLock { $0.ready = true }
                let tookOver = schedule.connected()
                logger.log(
                    level: tookOver ? .notice : .info,
                    "component \(settings.componentJID) connected to \(settings.host):\(settings.port)"
                        + (tookOver ? ": active now, taking over from the instance that held it" : ""))
                await onEvent(.connected)
            case .deliver(let stanza):
                guard !deliverAnswer(stanza) else { break }
                if let onStrayAnswer, isAnswerToAnother(stanza) {
                    onStrayAnswer(stanza)
                    break
                }
                let turn = settings.orderingKey(stanza).map { turns.turn(for: $0) }
                if stanzas.admit((stanza, turn)) {
                    handlers.addTask { [stanzas] in
                        var next: (Element, StanzaTurn?)? = (stanza, turn)
                        while let (stanza, turn) = next {
                            await StanzaTurn.$current.withValue(turn) { await onStanza(stanza) }
                            turn?.end()
                            next = stanzas.next()
                        }
                    }
                }
                await stanzas.waitForRoom()
                activity.touch()
            case .close(let farewell, let reason):
                if let farewell { try? socket.send(farewell) }
                failure = reason
                socket.close()
            case .none:
                break
            }
        }

        await perform(machine.connected())
        do {
            for try await chunk in socket.incoming() {
                activity.touch()
                let events: [StreamEvent]
                do {
                    events = try parser.feed(chunk)
                } catch {
                    await perform(machine.parseFailed(error))
                    break
                }
                for event in events where failure == nil {
                    if case .skippedStanza(let stanza, let reason) = event {
                        // What one stanza over a limit costs: a refusal of it alone, never the link. An
                        // answer to one of our requests fails that request now, not at its timeout.
                        logger.warning(
                            "skipped a <\(stanza.name)> from \(stanza.fromString ?? "the server"): \(reason.text)")
                        if let id = awaitedAnswerID(stanza) {
                            resolve(id: id, with: .failure(ComponentLinkError.answerTooLarge))
                        }
                    }
                    await perform(machine.received(event))
                }
                if failure != nil { break }
            }
        } catch {
            failure = failure ?? .connectionLost("\(error)")
        }
        if Task.isCancelled {
            await perform(machine.stop())
        }
        let ended = link.withLock { link in
            let pending = link.pending
            let reason = link.endReason
            for timer in link.timers.values { timer.cancel() }
            link = Link(nextID: link.nextID)
            return (pending, reason)
        }
        for continuation in ended.0.values {
            continuation.resume(throwing: ComponentLinkError.disconnected)
        }
        socket.close()
        return (failure ?? ended.1 ?? .closedByPeer, wasReady)
    }

    /// An IQ result or error answering one of our requests goes back to its caller.
    /// An answer that another instance passed on (it reached that instance's connection): taken if it
    /// answers a request of this one, as if it had come on this link.
    public func acceptRelayedAnswer(_ answer: Element) {
        _ = deliverAnswer(answer)
    }

    /// An IQ result or error whose id is not one this instance gives its requests.
    private func isAnswerToAnother(_ stanza: Element) -> Bool {
        guard stanza.name == "iq", let type = stanza[attribute: "type"], type == "result" || type == "error",
            let id = stanza[attribute: "id"]
        else { return false }
        return !id.hasPrefix("\(idPrefix)-")
    }

    private func deliverAnswer(_ stanza: Element) -> Bool {
        guard let id = awaitedAnswerID(stanza) else { return false }
        resolve(id: id, with: .success(stanza))
        return true
    }

    /// The id of the request `stanza` answers, if it is an IQ result or error to one still waiting.
    private func awaitedAnswerID(_ stanza: Element) -> String? {
        guard stanza.name == "iq", let type = stanza[attribute: "type"], type == "result" || type == "error",
            let id = stanza[attribute: "id"]
        else { return nil }
        // Only the entity we asked may answer: a guessed id from anyone else is not an answer.
        let from = stanza[attribute: "from"].flatMap { try? JID($0) }
        let expected = link.withLock { link -> Bool in
            guard link.pending[id] != nil else { return false }
            return link.addressees[id].map { $0 == nil || $0 == from } ?? true
        }
        return expected ? id : nil
    }

    /// A server that accepts the connection but never completes the handshake must not hold it forever.
    private func closeUnlessReady(_ socket: TCPConnection, within timeout: Duration) async {
        guard (try? await Task.sleep(for: timeout)) != nil, !link.withLock({ $0.ready }) else { return }
        logger.warning("no handshake within \(timeout); reconnecting")
        link.withLock { $0.endReason = .handshakeTimeout }
        socket.close()
    }

    /// Pings the server after a quiet spell; no answer in time closes the socket, which ends the session.
    private func keepAlive(socket: TCPConnection, lastActivity: ActivityClock) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: settings.keepaliveInterval / 2)
            guard lastActivity.idle >= settings.keepaliveInterval, link.withLock({ $0.ready }),
                !stanzas.isHoldingReader
            else { continue }
            let ping = Element(
                "iq", namespace: Namespace.componentAccept,
                ["type": "get", "from": settings.componentJID, "to": settings.keepaliveTarget],
                children: [Element("ping", namespace: Namespace.ping)])
            do {
                _ = try await request(ping, timeout: settings.keepaliveTimeout)
            } catch ComponentLinkError.timedOut {
                logger.warning("no answer to a keepalive ping within \(settings.keepaliveTimeout); reconnecting")
                link.withLock { $0.endReason = .keepaliveTimeout }
                socket.close()
                return
            } catch {
                return
            }
        }
    }
}

/// When the server last sent anything: a quiet link is probed, a busy one is not.
private final class ActivityClock: Sendable {
    private let last = Mutex(ContinuousClock.now)

    func touch() { last.withLock { $0 = .now } }
    var idle: Duration { ContinuousClock.now - last.withLock { $0 } }
}
