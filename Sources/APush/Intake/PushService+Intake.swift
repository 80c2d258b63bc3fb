import Logging
import Synchronization
import Sealing
import Store
import XMLStream
import XMPP

extension PushService {
    /// Answers one publish from the server: returns for a `result`, throws the error to answer with.
    /// Only a domain in `servedDomains` may publish, and only to the component's bare JID (the link's,
    /// `upstream.componentJID`); what it asks to push goes to `upstream`.
    func handlePublish(_ iq: Element, servedDomains: Set<String>, upstream: Upstream) async throws(StanzaError) {
        let arrived = now()
        defer { statistics.observe(.publish, milliseconds: now() - arrived) }
        let answer: ServerAnswer
        do {
            let publish = try IncomingPublish(
                iq: iq, servedDomains: servedDomains, componentJID: upstream.componentJID)
            answer = try await handle(publish, upstream: upstream)
        } catch let error as StanzaError {
            statistics.count(.refusedPublish(error.condition))
            logger.info("refused a publish: \(error.text ?? error.condition.rawValue)")
            throw error
        } catch let error as StoreCapacityError {
            logger.warning("a publish for a new registration was refused: \(error)")
            answer = .wait(.resourceConstraint)
        } catch {
            if let fault = storeFault(error, during: "a publish") {
                answer = .wait(fault.condition)
            } else {
                logger.error("a publish failed: \(error)")
                answer = .wait(.internalServerError)
            }
        }
        statistics.count(.answer(answer))
        if let error = answer.error { throw error }
    }

    /// Takes the publish in one store transaction (its registration, made or refreshed from its
    /// publish-options, or the answer for a removed or unknown one; then its event, and every push it
    /// calls for put in the outbox), then delivers what is due now: sealed while the transaction
    /// commits, sent once it has.
    private func handle(_ publish: IncomingPublish, upstream: Upstream) async throws -> ServerAnswer {
        let classified = EventClassifier.classify(publish.notification)
        // The registration's publishes read before this one are decided first (`orderingKey`).
        let turn = StanzaTurn.current
        await turn?.wait()
        let at = now()
        if case .read = classified.event, let account = classified.account {
            // The account sent a message or a marker from another device: it is active there (grace).
            accountSessions.withLock { $0.activity(of: account, at: at) }
        }
        let intake = try await transactionDecided { transaction in
            try self.take(publish, classified, at: at, in: transaction)
        }
        turn?.end()
        switch intake.value {
        case .answered(let answer):
            try await intake.committed()
            return answer
        case .pushes(let pushes, let registration):
            // Sealed while the store commits; sent only once it has.
            let sealed = pushes.map { delivery.seal($0, for: registration) }
            try await intake.committed()
            var answer = ServerAnswer.accepted
            for (push, sealed) in zip(pushes, sealed) {
                let outcome = await delivery.send(push, sealed: sealed, to: registration, via: upstream, at: at)
                if outcome == .deadToken { answer = .gone }
                if case .retry(let reason) = outcome, answer == .accepted { answer = reason.serverAnswer }
            }
            return answer
        }
    }

    /// What a publish's transaction decided: an answer at once, or pushes to deliver (each in the outbox
    /// unless the store had no room for it).
    private enum Intake: Sendable {
        case answered(ServerAnswer)
        case pushes([OutgoingPush], for: Registration)
    }

    private func take(
        _ publish: IncomingPublish, _ classified: ClassifiedPublish, at: Timestamp,
        in transaction: any PushTransaction
    ) throws -> Intake {
        let registration: Registration
        if let options = publish.options {
            guard
                let registered = try transaction.registerUnlessBuried(
                    options.request(domain: publish.domain, token: publish.token, account: classified.account),
                    freshCollapseKey: CollapseKey.random().bytes, now: at, buriedSince: at - Self.day)
            else {
                statistics.count(.tombstoneAnswer)
                return .answered(.gone)
            }
            registration = registered
        } else if let stored = try transaction.registration(
            domain: publish.domain, token: publish.token, account: classified.account)
        {
            registration = stored
        } else if try transaction.isBuried(
            token: publish.token, pushModule: nil, account: classified.account, since: at - Self.day)
        {
            statistics.count(.tombstoneAnswer)
            return .answered(.gone)
        } else {
            return .answered(
                try answerUnknownNode(at: at, token: publish.token, account: classified.account, in: transaction))
        }
        let pushes = try apply(classified, to: registration, at: at, in: transaction).map { push in
            push.stored == nil
                ? try delivery.enteringOutbox(push, registrationID: registration.id, at: at, in: transaction) : push
        }
        return .pushes(pushes, for: registration)
    }

    /// An unknown node is answered `cancel` so the server drops it, but only a few times an hour, and
    /// fewer for one account (nil: a stock publish names none).
    private func answerUnknownNode(
        at: Timestamp, token: String, account: String?, in transaction: any PushTransaction
    ) throws -> ServerAnswer {
        guard
            try transaction.recordUnknownNodeAnswer(
                at: at, since: at - 3_600_000, limit: settings.unknownNodeCancelsPerHour, account: account ?? "",
                accountLimit: settings.unknownNodeCancelsPerAccountPerHour)
        else {
            if minuteLog.withLock({ $0.allows("unknown nodes capped", at: at) }) {
                logger.warning(
                    "publish for an unknown node \(Fingerprint.of(token)); the hourly cap of cancel answers "
                        + "(of the server or its account) is reached, answering wait (logged once a minute)")
            }
            statistics.count(.unknownNodeCapped)
            return .wait(.resourceConstraint)
        }
        logger.notice("publish for an unknown node \(Fingerprint.of(token)) with no publish-options: answering cancel")
        statistics.count(.unknownNodeCancelled)
        return .gone
    }
}
