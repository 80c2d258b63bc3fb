import Logging
import Sealing
import Store
import XMLStream
import XMPP

extension PushService {
    /// Answers one publish from the server: returns for a `result`, throws the error to answer with.
    /// Only a domain in `servedDomains` may publish; what it asks to push goes to `upstream`.
    func handlePublish(_ iq: Element, servedDomains: Set<String>, upstream: Upstream) async throws(StanzaError) {
        let arrived = now()
        defer { statistics.observe(.publish, milliseconds: now() - arrived) }
        let answer: ServerAnswer
        do {
            let publish = try IncomingPublish(iq: iq, servedDomains: servedDomains)
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

    /// Finds the registration the publish is for (made or refreshed from its publish-options), or answers
    /// for a removed or unknown one; then applies its event and delivers what is due now.
    private func handle(_ publish: IncomingPublish, upstream: Upstream) async throws -> ServerAnswer {
        let at = now()
        let classified = EventClassifier.classify(publish.notification)
        let registration: Registration
        if let options = publish.options {
            guard
                let registered = try await store.registerUnlessBuried(
                    options.request(domain: publish.domain, token: publish.token, account: classified.account),
                    freshCollapseKey: CollapseKey.random().bytes, now: at, buriedSince: at - Self.day)
            else {
                statistics.count(.tombstoneAnswer)
                return .gone
            }
            registration = registered
        } else if let stored = try await store.registration(
            domain: publish.domain, token: publish.token,
            account: classified.account)
        {
            registration = stored
        } else if try await store.isBuried(
            token: publish.token, pushModule: nil, account: classified.account,
            since: at - Self.day)
        {
            statistics.count(.tombstoneAnswer)
            return .gone
        } else {
            return try await answerUnknownNode(at: at, token: publish.token)
        }
        let pushes = try await apply(classified, to: registration, at: at)
        var answer = ServerAnswer.accepted
        for push in pushes {
            let outcome = await deliver(push, to: registration, via: upstream, at: at)
            if outcome == .deadToken { answer = .gone }
            if case .retry(let reason) = outcome, answer == .accepted { answer = reason.serverAnswer }
        }
        return answer
    }

    /// An unknown node is answered `cancel` so the server drops it, but only a few times an hour.
    private func answerUnknownNode(at: Timestamp, token: String) async throws -> ServerAnswer {
        guard
            try await store.recordUnknownNodeAnswer(
                at: at, since: at - 3_600_000,
                limit: settings.unknownNodeCancelsPerHour)
        else {
            logger.warning(
                "publish for an unknown node \(Fingerprint.of(token)); the hourly cap of cancel answers is reached, answering wait"
            )
            statistics.count(.unknownNodeCapped)
            return .wait(.resourceConstraint)
        }
        logger.notice("publish for an unknown node \(Fingerprint.of(token)) with no publish-options: answering cancel")
        statistics.count(.unknownNodeCancelled)
        return .gone
    }
}
