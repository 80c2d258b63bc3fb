import APush
import ComponentHost
import Foundation
import Logging
import Sealing
import Store
import XMLStream
import XMPP
import LocalServers

/// The whole mission on one screen, on loopback only: a real Prosody 0.12 with mod_cloud_notify and the
/// bridge (`--server prosody13`: Prosody 13.0; `--server ejabberd` or `ejabberd24`: a real ejabberd 23.01
/// or 24.12 with mod_push and its bridge), apush-component with an SQLite store, a demo App Server that
/// opens each push with the demo device's private key, and real clients. Nothing is sent anywhere else.
@main
struct Demo {
    static let window = 3
    /// How long alice's activity, or her laptop being available, keeps her phone quiet (step 5).
    static let grace = 5

    static func main() async {
        do {
            try await run()
        } catch {
            FileHandle.standardError.write(Data("demo failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run() async throws {
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let componentSecret = "demo-component-\(UInt32.random(in: .min ... .max))"
        let appServerSecret = "demo-appserver-\(UInt32.random(in: .min ... .max))"
        let arguments = Array(CommandLine.arguments.dropFirst())
        let verbose = arguments.contains("--verbose")
        let serverName =
            arguments.firstIndex(of: "--server").map { $0 + 1 < arguments.count ? arguments[$0 + 1] : "" }
            ?? "prosody"

        let server: any XMPPTestServer
        let description: String
        switch serverName {
        case "prosody", "prosody13":
            let release: ProsodyServer.Release = serverName == "prosody13" ? .v13 : .v0_12
            server = try ProsodyServer(
                release: release, componentJID: "apush.localhost", componentSecret: componentSecret,
                modules: ProsodyServer.defaultModules + ["apush_bridge"],
                hostConfig: "    apush_bridge_component = \"apush.localhost\"",
                pluginPaths: [repository.appendingPathComponent("contrib/prosody").path],
                otherComponents: ["push.localhost": appServerSecret])
            description = "\(release) with mod_cloud_notify and mod_apush_bridge"
        case "ejabberd", "ejabberd24":
            let release: EjabberdServer.Release = serverName == "ejabberd24" ? .v24_12 : .v23_01
            server = try EjabberdServer(
                componentJID: "apush.localhost", componentSecret: componentSecret,
                otherComponents: ["push.localhost": appServerSecret],
                bridge: EjabberdServer.Bridge(
                    buildScript: repository.appendingPathComponent("contrib/ejabberd/build.sh")),
                release: release)
            description = "ejabberd \(release.rawValue) with mod_push and mod_apush_bridge"
        default:
            throw DemoError("--server takes prosody, prosody13, ejabberd or ejabberd24, not \(serverName)")
        }
        section("apush-component demo: everything on 127.0.0.1, nothing leaves this machine")
        try await server.start()
        do {
            try await showMission(
                on: server, described: description, componentSecret: componentSecret,
                appServerSecret: appServerSecret, verbose: verbose)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Everything after the server is up; the caller stops the server however this ends.
    static func showMission(
        on server: any XMPPTestServer, described description: String, componentSecret: String,
        appServerSecret: String, verbose: Bool
    ) async throws {
        for user in ["alice", "bob"] { try await server.register(user: user, password: "demo-\(user)") }
        step(
            "\(description) (pid \(await server.pid ?? 0)), c2s on port \(server.c2sPort), "
                + "components on \(server.componentPort)")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apush-demo-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storePath = directory.appendingPathComponent("apush.sqlite").path
        let configuration = try Configuration.load(
            file: nil,
            environment: [
                "APUSH_COMPONENT_JID": "apush.localhost", "APUSH_COMPONENT_SECRET": componentSecret,
                "APUSH_SERVER": "127.0.0.1:\(server.componentPort)", "APUSH_DOMAINS": "localhost",
                "APUSH_APP_SERVER": "push.localhost", "APUSH_STORE": storePath,
                "APUSH_LOG": verbose ? "debug" : "warning",
            ], schema: .apushComponent)
        var settings = try APushModule.settings(from: configuration)
        settings.coalesceSeconds = window
        settings.defaults.graceSeconds = grace
        settings.defaults.graceWhen = .connected
        let logger = Logger(label: "apush", level: configuration.logLevel, sink: StandardErrorLogSink())
        let module = try APushModule(
            store: try SQLitePushStore(.file(path: storePath), limits: settings.storeLimits), settings: settings,
            logger: logger)
        let component = try ComponentService(configuration: configuration, modules: [module], logger: logger)
        let connected = AsyncStream<Void>.makeStream()
        let componentTask = Task {
            await component.run { event in if event == .connected { connected.continuation.yield() } }
        }
        defer { componentTask.cancel() }
        for await _ in connected.stream { break }
        step(
            "apush-component as apush.localhost: SQLite store \(storePath), coalescing window \(window) s, "
                + "grace \(grace) s while the account is connected or active elsewhere")

        let appServer = StandInAppServer(
            jid: "push.localhost", secret: appServerSecret,
            port: server.componentPort(for: "push.localhost"))
        appServer.start()
        try await appServer.waitUntilConnected()
        let device = KeyPair.generate()
        step(
            "demo App Server as push.localhost: opens each push with the demo device's private key "
                + "(public key \(Fingerprint.of(device.publicKey)))")

        section("1. alice's phone enables push and goes offline")
        let token = "demo-token-\(UInt32.random(in: .min ... .max))"
        let phone = try await C2SClient.connect(
            port: server.c2sPort, domain: "localhost", user: "alice",
            password: "demo-alice", resource: "phone")
        try await phone.enablePush(
            service: "apush.localhost", node: token,
            publishOptions: .submit(
                formType: Namespace.pubsubPublishOptions,
                values: [
                    "pushModule": "demo-fcm", "apushEncryptionPublicKey": Base64.encode(device.publicKey),
                    "apushCalls": "1", "apushRead": "1",
                ]))
        await phone.close()
        step("token \(Fingerprint.of(token)), module demo-fcm, messages + calls + reads; the phone disconnects")

        let bob = try await C2SClient.connect(
            port: server.c2sPort, domain: "localhost", user: "bob",
            password: "demo-bob", resource: "laptop")
        var shown = 0
        var secrets: [String] = []
        func show(_ count: Int, timeout: Duration = .seconds(Self.window + 10)) async throws {
            for _ in 0..<count {
                let push = try await appServer.nextPush(timeout: timeout)
                shown += 1
                let opened = try Envelope.open(push.envelope, privateKey: device.privateKey)
                let json = String(decoding: opened, as: UTF8.self).trimmingCharacters(in: .whitespaces)
                for secret in secrets where json.contains(secret) || push.envelope.contains(secret) {
                    throw DemoError("message text reached the App Server")
                }
                let kind = push.kind ?? "message"
                let collapse = push.collapse.map { " collapse \($0.prefix(10))…" } ?? ""
                print("   ⇐ push \(shown) [\(kind)] \(push.envelope.count)-char envelope\(collapse)")
                print("     opened: \(json)")
            }
        }

        /// Messages from bob to alice, each with a secret text that no push may carry.
        func bobWrites(_ count: Int, id: String) throws {
            for index in 1...count {
                let text = "Secret text number \(secrets.count + 1) that must never leave the server"
                secrets.append(text)
                try bob.send(
                    Element.message(
                        type: .chat, id: "\(id)-\(index)", to: try JID("alice@localhost"),
                        children: [
                            Element("body", namespace: Namespace.client, [:], text: text)
                        ], namespace: Namespace.client))
            }
        }

        section("2. bob sends alice a burst of 5 messages")
        try bobWrites(5, id: "burst")
        try await show(1)
        print("     … 4 more held by coalescing; when the \(window) s window ends, one more with the latest count:")
        try await show(1)

        section("3. bob calls alice (XEP-0353 propose)")
        let sid = "call-\(UInt32.random(in: .min ... .max))"
        try bob.send(
            Element.message(
                type: .chat, id: "propose-1", to: try JID("alice@localhost"),
                children: [
                    Element(
                        "propose", namespace: Namespace.jingleMessage, ["id": sid],
                        children: [
                            Element("description", namespace: Namespace.jingleRTP, ["media": "audio"])
                        ]),
                    Element("store", namespace: Namespace.hints),
                ], namespace: Namespace.client))
        try await show(1)

        section("4. alice reads the chat on her laptop (the phone is still offline)")
        let laptop = try await C2SClient.connect(
            port: server.c2sPort, domain: "localhost", user: "alice",
            password: "demo-alice", resource: "laptop")
        try laptop.send(
            Element.message(
                type: .chat, id: "read-1", to: try JID("bob@localhost"),
                children: [
                    Element("displayed", namespace: Namespace.chatMarkers, ["id": "burst-5"])
                ], namespace: Namespace.client))
        try await show(1)

        section("5. alice chats on her laptop while bob writes; then she steps away")
        let heard = appServer.pushes.count
        try bobWrites(3, id: "grace")
        try await Task.sleep(for: .seconds(Self.window + 1))
        print(
            "     3 messages from bob, \(appServer.pushes.count - heard) pushes: her laptop is available, the phone stays quiet"
        )
        try laptop.sendRaw("<presence><show>away</show></presence>")
        print("     the laptop goes away; once the grace ends, one push with the count and the unread badge:")
        try await show(1, timeout: .seconds(Self.grace * 3 + 10))

        section("Done")
        print("   \(shown) pushes; every one a sealed apush-v2 envelope that only the device's key opens,")
        print("   none carrying message text. Apple and Google would see only that a device was woken.")
        await laptop.close()
        await bob.close()
        await appServer.stop()
        componentTask.cancel()
        await componentTask.value
    }

    static func section(_ title: String) {
        print("\n\(title)")
    }

    static func step(_ text: String) {
        print("   ▸ \(text)")
    }
}

struct DemoError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
