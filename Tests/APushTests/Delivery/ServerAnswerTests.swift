import Testing
import XMPP

@testable import APush

@Suite struct ServerAnswerTests {
    @Test(arguments: [
        (ServerAnswer.accepted, nil, nil),
        (.gone, StanzaError.ErrorType.cancel, StanzaError.Condition.itemNotFound),
        (.wait(.resourceConstraint), .wait, .resourceConstraint),
        (.wait(.remoteServerTimeout), .wait, .remoteServerTimeout),
    ])
    func theServerIsAnsweredAsTheProtocolSays(
        _ answer: ServerAnswer, type: StanzaError.ErrorType?,
        condition: StanzaError.Condition?
    ) {
        #expect(answer.error?.type == type)
        #expect(answer.error?.condition == condition)
    }
}
