/// What one program reads from its configuration: the host's own keys, each module's, and the prefix of
/// the environment variables that override them. The host names no module's key; a module declares
/// its keys, and the host checks and assembles them as it does its own.
public struct ConfigurationSchema: Sendable {
    /// Prepended to every variable name, e.g. `APUSH_` for `APUSH_COMPONENT_JID`.
    public var environmentPrefix: String
    public var modules: [ModuleConfiguration]

    public init(environmentPrefix: String, modules: [ModuleConfiguration]) {
        self.environmentPrefix = environmentPrefix
        self.modules = modules
    }

    /// Every variable, with its full name and the key it overrides: the host's first, then each module's.
    public var environment: [EnvironmentOverride] {
        (Configuration.hostEnvironment + modules.flatMap(\.environment)).map { entry in
            var prefixed = entry
            prefixed.variable = environmentPrefix + entry.variable
            return prefixed
        }
    }

    /// The top-level keys the modules own.
    var moduleKeys: [String] { modules.flatMap(\.keys) }
}

/// The top-level keys a hosted module owns, handed to it undecoded (an object such as a `push`
/// section, or a single value), and the environment variables that override them.
public struct ModuleConfiguration: Sendable {
    public var keys: [String]
    public var environment: [EnvironmentOverride]

    public init(keys: [String], environment: [EnvironmentOverride]) {
        self.keys = keys
        self.environment = environment
    }
}

/// An environment variable (named without the program's prefix) and the key it sets: a stable
/// interface for operators. A list is written comma-separated.
public struct EnvironmentOverride: Sendable, Equatable {
    public var variable: String
    /// A dotted path such as `component.jid`.
    public var key: String
    public var isList: Bool

    public init(_ variable: String, key: String, isList: Bool = false) {
        self.variable = variable
        self.key = key
        self.isList = isList
    }
}
