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

    @Test func usageNamesEveryFormAndWhatTheProgramSays() {
        let usage = CommandLineInvocation.usage(
            program: "some-component", purpose: "serve widgets",
            environmentPrefix: "SOME_")
        for form in [
            "some-component [run]", "some-component check-config", "--config FILE", "--help", "--version",
            "serve widgets", "SOME_* variables",
        ] {
            #expect(usage.contains(form))
        }
    }
}
