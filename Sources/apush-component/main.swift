import APush
import ComponentHost
import Foundation
import Logging
import SQLite
import Store

/// Exit codes after sysexits.h: usage errors are 64, configuration errors 78.
enum ExitCode {
    static let usage: Int32 = 64
    static let configuration: Int32 = 78
    static let software: Int32 = 70
}

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("apush-component: \(message)\n".utf8))
    exit(code)
}

let schema = ConfigurationSchema.apushComponent
let usage = CommandLineInvocation.usage(
    program: ComponentService.softwareName, purpose: "serve pushes",
    environmentPrefix: schema.environmentPrefix)
let invocation: CommandLineInvocation
do {
    invocation = try CommandLineInvocation.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    fail("\(error)\n\n\(usage)", code: ExitCode.usage)
}

func loadConfiguration(_ file: String?) -> (Configuration, APushSettings, StoreSettings) {
    do {
        let configuration = try Configuration.load(
            file: file, environment: ProcessInfo.processInfo.environment,
            schema: schema)
        return (configuration, try APushModule.settings(from: configuration), try StoreSettings(from: configuration))
    } catch {
        fail("\(error)", code: ExitCode.configuration)
    }
}

/// The SQLite core's `Synchronous` for the configuration's word.
func synchronous(_ setting: StoreSettings.Synchronous) -> Synchronous {
    switch setting {
    case .full: .full
    case .normal: .normal
    }
}

switch invocation {
case .help:
    print(usage)
case .version:
    print("\(ComponentService.softwareName) \(ComponentService.softwareVersion)")
case .checkConfig(let file):
    let (configuration, settings, storeSettings) = loadConfiguration(file)
    print(
        """
        configuration is valid
          component    \(configuration.component.jid) -> \(configuration.server)
          domains      \(configuration.domains.joined(separator: ", "))
          app server   \(settings.appServer)
          store        \(PushStoreSetting.redacted(storeSettings.location))\(PushStoreSetting.isPostgreSQL(storeSettings.location) ? "" : ", synchronous=\(storeSettings.synchronous.rawValue)")
          admins       \(configuration.admins.isEmpty ? "(none)" : configuration.admins.joined(separator: ", "))
          log          \(configuration.logLevel), \(configuration.logFormat.rawValue) lines
          http         \(configuration.http.map { "\($0): /health, /metrics" } ?? "(none)")
          coalescing   \(settings.coalesceSeconds) s
        """)
case .run(let file):
    let (configuration, settings, storeSettings) = loadConfiguration(file)
    let logger = Logger(
        label: "apush", level: configuration.logLevel, sink: StandardErrorLogSink(format: configuration.logFormat))
    let service: ComponentService
    let store: any PushStore
    let unavailableAtStart: StoreUnavailableError?
    do {
        (store, unavailableAtStart) = try await PushStoreSetting.open(
            storeSettings.location, limits: settings.storeLimits, componentSecret: configuration.component.secret,
            synchronous: synchronous(storeSettings.synchronous))
    } catch {
        fail("\(ConfigurationError(key: "store", reason: error.reason))", code: ExitCode.configuration)
    }
    if let unavailable = unavailableAtStart {
        // Running without it beats stopping: the server gets `wait` and keeps its registrations.
        logger.error("\(unavailable); publishes are answered wait until it opens (tried again on use)")
    }
    do {
        let module = try APushModule(store: store, settings: settings, logger: logger)
        service = try ComponentService(configuration: configuration, modules: [module], logger: logger)
    } catch {
        fail("cannot start: \(error)", code: ExitCode.software)
    }
    logger.notice(
        "\(ComponentService.softwareName) \(ComponentService.softwareVersion) starting as \(configuration.component.jid)"
    )
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await service.run() }
        group.addTask {
            let signal = await TerminationSignals.wait()
            logger.notice("\(signal) received: stopping")
        }
        await group.next()
        group.cancelAll()
    }
    logger.notice("stopped")
}
