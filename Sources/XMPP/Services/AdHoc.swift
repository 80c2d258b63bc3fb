import XMLStream

/// XEP-0050 ad-hoc commands: what a command is, what it is asked, and what it answers.
public struct AdHocCommand: Sendable {
    public let node: String
    public let name: String
    /// Checked before every stage, not only the first: a session id is no licence.
    public let isAllowed: @Sendable (JID) -> Bool
    public let handler: @Sendable (AdHocRequest) async throws -> AdHocResponse

    public init(
        node: String, name: String, isAllowed: @escaping @Sendable (JID) -> Bool,
        handler: @escaping @Sendable (AdHocRequest) async throws -> AdHocResponse
    ) {
        self.node = node
        self.name = name
        self.isAllowed = isAllowed
        self.handler = handler
    }
}

public enum AdHocAction: String, Sendable, Equatable, CaseIterable {
    case execute, next, prev, complete, cancel
}

public struct AdHocRequest: Sendable {
    /// The full JID that runs the command.
    public let requester: JID
    public let action: AdHocAction
    /// The form the requester submitted with this stage, if any.
    public let form: DataForm?
    /// 0 for the first stage; one more for each `executing` answer before.
    public let stage: Int
    /// What the previous stage chose to remember. It travels in a hidden field of the stage's form,
    /// which the requester can read (it is authenticated, not encrypted): never put a secret here.
    public let state: [String: String]

    public init(requester: JID, action: AdHocAction, form: DataForm?, stage: Int, state: [String: String]) {
        self.requester = requester
        self.action = action
        self.form = form
        self.stage = stage
        self.state = state
    }
}

public struct AdHocNote: Sendable, Equatable {
    public enum Kind: String, Sendable { case info, warn, error }
    public var kind: Kind
    public var text: String

    public init(_ kind: Kind, _ text: String) {
        self.kind = kind
        self.text = text
    }
}

public struct AdHocResponse: Sendable {
    public enum Status: String, Sendable { case executing, completed, canceled }

    public var status: Status
    public var form: DataForm?
    public var notes: [AdHocNote]
    /// The actions offered while executing (besides cancel); the first is the default.
    public var actions: [AdHocAction]
    public var state: [String: String]

    public init(
        status: Status, form: DataForm? = nil, notes: [AdHocNote] = [], actions: [AdHocAction] = [],
        state: [String: String] = [:]
    ) {
        self.status = status
        self.form = form
        self.notes = notes
        self.actions = actions
        self.state = state
    }

    /// Another stage follows: show `form`, offer `actions`, remember `state`.
    public static func next(
        _ form: DataForm, actions: [AdHocAction] = [.complete], state: [String: String] = [:],
        notes: [AdHocNote] = []
    ) -> AdHocResponse {
        AdHocResponse(status: .executing, form: form, notes: notes, actions: actions, state: state)
    }

    public static func completed(_ notes: AdHocNote..., form: DataForm? = nil) -> AdHocResponse {
        AdHocResponse(status: .completed, form: form, notes: notes)
    }
}
