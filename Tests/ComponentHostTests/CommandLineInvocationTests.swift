import ComponentHost
import Testing

@Suite struct CommandLineInvocationTests {
    @Test(arguments: [
        ([], CommandLineInvocation.run(configFile: nil)),
        (["run"], .run(configFile: nil)),
        (["--config", "a.json"], .run(configFile: "a.json")),
        (["-c", "a.json"], .run(configFile: "a.json")),
        (["--config=a.json"], .run(configFile: "a.json")),
        (["run", "--config", "a.json"], .run(configFile: "a.json")),
        (["check-config"], .checkConfig(configFile: nil)),
        (["check-config", "--config", "/etc/apush.json"], .checkConfig(configFile: "/etc/apush.json")),
        (["check-config", "--config=x=y.json"], .checkConfig(configFile: "x=y.json")),
        (["--help"], .help),
        (["-h"], .help),
        (["run", "--help"], .help),
        (["--config", "a.json", "--help"], .help),
        (["--version"], .version),
        (["check-config", "--version"], .version),
    ])
    func parses(arguments: [String], expected: CommandLineInvocation) throws {
        #expect(try CommandLineInvocation.parse(arguments) == expected)
    }

    @Test(arguments: [
        (["serve"], "unknown command 'serve'"),
        (["--config"], "--config needs a file name"),
        (["--config", "--help"], "--config needs a file name"),
        (["-c", "a", "-c", "b"], "--config given twice"),
        (["--verbose"], "unknown argument '--verbose'"),
        (["run", "extra"], "unknown argument 'extra'"),
        (["--configfile=a"], "unknown argument '--configfile=a'"),
    ])
    func usageErrorsSayWhatIsWrong(arguments: [String], message: String) {
        let error = #expect(throws: CommandLineInvocation.UsageError.self) {
            try CommandLineInvocation.parse(arguments)
        }
        #expect(error?.message == message)
    }

    @Test func usageNamesEveryForm() {
        for form in ["[run]", "check-config", "--config FILE", "--help", "--version"] {
            #expect(CommandLineInvocation.usage.contains(form))
        }
    }
}
