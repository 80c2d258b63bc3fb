/// What the command line asked for. Parsing is pure so every usage error is tested; the executable
/// exits 64 (EX_USAGE) on one.
public enum CommandLineInvocation: Equatable, Sendable {
    case run(configFile: String?)
    case checkConfig(configFile: String?)
    case help
    case version

    /// The usage text of `program`, whose `run` does `purpose` and whose settings come from
    /// `environmentPrefix`* variables too.
    public static func usage(program: String, purpose: String, environmentPrefix: String) -> String {
        """
        usage: \(program) [run] [--config FILE]
               \(program) check-config [--config FILE]
               \(program) --help | --version

          run            connect to the XMPP server as a component and \(purpose) (the default)
          check-config   read and validate the configuration, print a summary, and exit
          --config FILE  the JSON configuration file; without one, settings come from \(environmentPrefix)* variables
                         (the environment overrides the file either way)
        """
    }

    public struct UsageError: Error, Equatable, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }

    public static func parse(_ arguments: [String]) throws(UsageError) -> CommandLineInvocation {
        var remaining = arguments[...]
        var subcommand = "run"
        if let first = remaining.first, !first.hasPrefix("-") {
            subcommand = first
            remaining = remaining.dropFirst()
        }
        var configFile: String?
        while let argument = remaining.popFirst() {
            switch argument {
            case "--help", "-h":
                return .help
            case "--version":
                return .version
            case "--config", "-c":
                guard let value = remaining.popFirst(), !value.hasPrefix("-") else {
                    throw UsageError(message: "--config needs a file name")
                }
                guard configFile == nil else { throw UsageError(message: "--config given twice") }
                configFile = value
            default:
                if let value = argument.split(separator: "=", maxSplits: 1).dropFirst().first,
                    argument.hasPrefix("--config=")
                {
                    configFile = String(value)
                } else {
                    throw UsageError(message: "unknown argument '\(argument)'")
                }
            }
        }
        switch subcommand {
        case "run": return .run(configFile: configFile)
        case "check-config": return .checkConfig(configFile: configFile)
        default: throw UsageError(message: "unknown command '\(subcommand)'")
        }
    }
}
