import Testing
import XMPP
@testable import APush

@Suite struct ServerAnswerTests {
    @Test(arguments: [
        (ServerAnswer.accepted, nil, nil, "result"),
        (.gone, StanzaError.ErrorType.cancel, StanzaError.Condition.itemNotFound, "cancel"),
        (.wait(.resourceConstraint), .wait, .resourceConstraint, "wait"),
        (.wait(.remoteServerTimeout), .wait, .remoteServerTimeout, "wait"),
    ])
    func theServerIsAnsweredAsTheProtocolSays(_ answer: ServerAnswer, type: StanzaError.ErrorType?,
                                              condition: StanzaError.Condition?, statistics: String) {
        #expect(answer.error?.type == type)
        #expect(answer.error?.condition == condition)
        #expect(answer.statisticsName == statistics)
    }
}
