// swift-tools-version:6.0
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

var targets: [Target] = [
    // System C libraries, each from its Debian -dev package.
    .systemLibrary(
        name: "CXML2", path: "Sources/CXML2", pkgConfig: "libxml-2.0",
        providers: [.apt(["libxml2-dev"])]),
    .systemLibrary(
        name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium",
        providers: [.apt(["libsodium-dev"])]),
    .systemLibrary(
        name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
        providers: [.apt(["libssl-dev"])]),
    .systemLibrary(
        name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
        providers: [.apt(["libsqlite3-dev"])]),
    .systemLibrary(
        name: "CLibPQ", path: "Sources/CLibPQ", pkgConfig: "libpq",
        providers: [.apt(["libpq-dev"])]),

    // Blocking system calls on threads of their own, off the cooperative pool and Dispatch's global queues.
    .target(name: "BlockingWork"),
    // A small swift-log-shaped logger: levels, metadata, a sink protocol, stderr and in-memory sinks.
    .target(name: "Logging"),
    // The incremental XML reader and the Element value. No Foundation: libxml2's ICU collides with it.
    .target(name: "XMLStream", dependencies: ["CXML2"]),
    // TCP sockets: a connection, a listener that backs off when accepting fails, errno as an error.
    .target(name: "Sockets", dependencies: ["BlockingWork"]),
    // The XMPP core: JIDs, errors, queries, forms, disco, ad-hoc, the XEP-0114 stream. No push policy.
    .target(name: "XMPP", dependencies: ["XMLStream", "CCrypto", "Logging", "Sockets"]),
    // A small strict HTTP/1.1 server for the operations endpoint (health, metrics).
    .target(name: "HTTPServer", dependencies: ["Sockets", "Logging", "BlockingWork"]),
    // The module host: config, logging, routing, the connection loop, signals, the operations endpoint.
    .target(name: "ComponentHost", dependencies: ["XMPP", "XMLStream", "HTTPServer", "Logging"]),
    // HPKE apush-v2 and the collapse tag over libsodium.
    .target(name: "Sealing", dependencies: ["CSodium"]),
    // What both SQL engines share: values, rows that decode or throw, migrations' steps and errors.
    .target(name: "SQLCore"),
    // The generic SQLite core: connection, statements, SQLite's values, migrating. Knows nothing of push.
    .target(name: "SQLite", dependencies: ["CSQLite", "SQLCore"]),
    // The generic PostgreSQL core over libpq: connection, parameters, rows (SQLite's values and rows,
    // so one decoding serves both engines), errors, transactions, migrations. Knows nothing of push.
    .target(name: "PostgreSQL", dependencies: ["CLibPQ", "SQLCore"]),
    // Registrations, windows, counters, tombstones: the PushStore protocol, its models and limits, and
    // its SQLite and PostgreSQL implementations. Sealing for the tokens' fingerprints, kept for lookups.
    .target(name: "Store", dependencies: ["SQLCore", "SQLite", "PostgreSQL", "Sealing"]),
    // The push module itself.
    .target(
        name: "APush",
        dependencies: ["ComponentHost", "HTTPServer", "XMPP", "XMLStream", "Sealing", "Store", "Logging"]),
    .executableTarget(name: "apush-component", dependencies: ["ComponentHost", "APush", "Store", "SQLite", "Logging"]),
    // The main job in one command: Prosody with the bridge, the component, a demo App Server, a client.
    .executableTarget(
        name: "apush-demo",
        dependencies: ["LocalServers", "ComponentHost", "APush", "Store", "Sealing", "Logging", "XMPP", "XMLStream"]),
    // Throughput of the push path against the cost of the seal itself; prints figures and ratios.
    // `apush-bench flood`: 100,000 publishes at a component process against a slow App Server.
    // `apush-bench scale`: a component process with a million registrations in its store.
    // `apush-bench postgresql`: publishes on PostgreSQL against SQLite WAL, two instances against one.
    .executableTarget(
        name: "apush-bench",
        dependencies: [
            "APush", "ComponentHost", "Store", "Sealing", "XMPP", "XMLStream", "Logging",
            "LocalServers", "SQLCore", "SQLite", "PostgreSQL", "BlockingWork",
        ]),
    // Real servers started on loopback ports of their own (Prosody, ejabberd, PostgreSQL), stopped by
    // PID; stand-ins for what cannot run here (the App Server) and a c2s client: what the demo, the
    // benchmark and the integration tests start.
    .target(name: "LocalServers", dependencies: ["XMPP", "XMLStream", "Sockets", "Sealing", "Logging"]),
    // What only the tests use: a clock moved by hand, recording and answering senders, the independent
    // envelope opener (Python), a raw HTTP client, waits, a full-disk mount. Not in any product.
    .target(name: "TestSupport", dependencies: ["XMPP", "XMLStream", "Sockets", "BlockingWork"]),
    // Temporary database files for the SQLite and store tests.
    .target(name: "SQLiteTesting"),

    .testTarget(name: "BlockingWorkTests", dependencies: ["BlockingWork"]),
    .testTarget(name: "LoggingTests", dependencies: ["Logging"]),
    .testTarget(name: "XMLStreamTests", dependencies: ["XMLStream"]),
    .testTarget(name: "LocalServersTests", dependencies: ["LocalServers", "XMPP", "XMLStream", "Logging"]),
    .testTarget(name: "SocketsTests", dependencies: ["Sockets", "LocalServers"]),
    .testTarget(
        name: "XMPPTests", dependencies: ["XMPP", "XMLStream", "Sockets", "LocalServers", "Logging", "BlockingWork"]),
    .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "Sockets", "TestSupport", "Logging"]),
    .testTarget(
        name: "ComponentHostTests",
        dependencies: ["ComponentHost", "HTTPServer", "XMPP", "XMLStream", "LocalServers", "TestSupport", "Logging"]),
    .testTarget(name: "SealingTests", dependencies: ["Sealing", "TestSupport"], resources: [.copy("Vectors")]),
    .testTarget(name: "SQLCoreTests", dependencies: ["SQLCore"]),
    .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "SQLCore", "CSQLite", "SQLiteTesting"]),
    .testTarget(name: "PostgreSQLTests", dependencies: ["PostgreSQL", "SQLCore", "LocalServers", "TestSupport"]),
    .testTarget(
        name: "StoreTests",
        dependencies: [
            "Store", "SQLCore", "SQLite", "CSQLite", "PostgreSQL", "SQLiteTesting", "Sealing", "XMPP", "Sockets",
            "LocalServers", "TestSupport",
        ]),
    .testTarget(
        name: "APushTests",
        dependencies: [
            "APush", "ComponentHost", "HTTPServer", "SQLCore", "SQLite", "Store", "Sealing", "XMPP", "XMLStream",
            "LocalServers", "TestSupport",
            "Logging",
        ]),
    .testTarget(
        name: "IntegrationTests",
        dependencies: [
            "ComponentHost", "HTTPServer", "APush", "Store", "Sealing", "SQLCore", "SQLite", "PostgreSQL", "XMPP",
            "XMLStream", "Sockets", "LocalServers", "TestSupport", "Logging", "BlockingWork",
        ],
        // Scripts of independently written clients (Python) the tests run.
        exclude: ["Clients"]),
]

// libFuzzer harnesses (Fuzz/), only when contrib/fuzz.sh asks: they reach internals through `@testable
// import`, which a plain release build does not allow, and libFuzzer supplies their `main`.
if Context.environment["APUSH_FUZZ"] == "1" {
    targets.append(
        .executableTarget(
            name: "apush-fuzz",
            dependencies: ["XMLStream", "XMPP", "HTTPServer", "ComponentHost", "APush", "Sealing", "Store"],
            path: "Fuzz/Targets"))
}

for index in targets.indices where targets[index].type != .system {
    targets[index].swiftSettings = (targets[index].swiftSettings ?? []) + strictSettings
}

let package = Package(
    name: "apush-component",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "apush-component", targets: ["apush-component"]),
        .executable(name: "apush-demo", targets: ["apush-demo"]),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
