// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "storesh",
    // Linux only (Debian, as the README's set-up says): glibc's types (`__rlimit_resource_t`), Linux's file calls
    // (CStoreshFiles) and libedit's headers; no Apple platform is claimed.
    products: [
        .executable(name: "storesh", targets: ["storesh"]),
        .library(name: "StoreshCore", targets: ["StoreshCore"]),
        .library(name: "StoreshLocal", targets: ["StoreshLocal"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // The server's logger (Hummingbird's), named where serve quiets or keeps it.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Hummingbird's own: a live page's event stream ends when the server shuts down gracefully.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // The shell's C layer over libedit (its variadic calls, a UTF-8 character reader, the SIGINT flag). It
        // builds against libedit's header (Debian `libedit-dev`) and loads the library when the prompt opens, so
        // that a script or `storesh -c` does not pay for loading it.
        .target(name: "CStoreshTerminal", linkerSettings: [.linkedLibrary("dl")]),
        // libxml2's SAX parser for S3's answers, loaded on the first answer (Debian `libxml2-dev` for its headers).
        .target(
            name: "CStoreshXML", cSettings: [.unsafeFlags(["-I/usr/include/libxml2"])],
            linkerSettings: [.linkedLibrary("dl")]),
        // SQLite, the local bucket's storage engine (pkg-config `sqlite3`, Debian `libsqlite3-dev`).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // Storage semantics only: paths, metadata, the listing rules, errors, the Bucket interface.
        // Knows nothing of terminals or files.
        // CRC-32C in C, on the processor's CRC32 instruction where there is one.
        .target(name: "CStoreshChecksum"),
        // The file operations Swift's Glibc does not expose: an atomic exchange of two paths (renameat2).
        .target(name: "CStoreshFiles"),
        .target(
            name: "StoreshCore",
            dependencies: ["CStoreshChecksum", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // SQLite's C interface, wrapped once: connections, cached statements, incremental blob I/O.
        .target(name: "StoreshSQLite", dependencies: ["CSQLite"]),
        // The local bucket: one durable SQLite file, its page tokens, plus the JSON export/import format.
        .target(
            name: "StoreshLocal",
            dependencies: [
                "StoreshCore", "StoreshSQLite", "StoreshWire", "CSQLite", "CStoreshFiles",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Plans and their execution, for any bucket: the dry run's planned bucket, the applier, the journal, undo
        // and resume. A plan's working state is a private temporary SQLite database, so that a plan of millions of
        // changes needs no more memory than a small one.
        .target(name: "StoreshExecution", dependencies: ["StoreshCore", "StoreshSQLite", "CSQLite"]),
        // The wire formats: each API's requests and documents, built once for the backends that send them, the
        // server that answers them and `explain`, which shows them.
        .target(
            name: "StoreshWire",
            dependencies: ["StoreshCore", "CStoreshXML", .product(name: "Crypto", package: "swift-crypto")]),
        // Security rules: the rules language, its evaluation, and the engine the local bucket asks.
        // The sample rules (links to samples/rules/) are compiled in: `rules load --sample NAME` needs no file.
        .target(
            name: "StoreshRules", dependencies: ["StoreshCore"],
            resources: [
                .embedInCode("SampleRules/open.rules"), .embedInCode("SampleRules/owner-only.rules"),
                .embedInCode("SampleRules/version1.rules"),
            ]),
        // The command language: lexer, parser, AST with source positions, interpreter over any Bucket.
        // The storage rules' article (a link into the documentation catalog) is compiled in for `help L3`.
        .target(
            name: "StoreshLanguage", dependencies: ["StoreshCore", "StoreshExecution", "StoreshWire"],
            resources: [.embedInCode("StorageRules.md")]),
        // `storesh serve`: a local bucket behind the Firebase Storage emulator's HTTP API (the Cloud Storage JSON
        // API and the Firebase v0 API), on Hummingbird. The HTTP layer only: storage semantics stay in the core.
        .target(
            name: "StoreshServer",
            dependencies: [
                "StoreshCore", "StoreshLocal", "StoreshRules", "StoreshWire",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The request parser's errors, and the HTTP parts a handler of the connection sees.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The address check before anything is written (StorageServer.checkAddress).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                // V4 signed URLs' signatures (SHA-256, RSA PKCS #1 v1.5).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            // The page's style and script, compiled in and served beside it (PageAssets).
            resources: [.embedInCode("Page/page.css"), .embedInCode("Page/page.js")]),

        // Real buckets: Google Cloud Storage (and Firebase) over HTTP with AsyncHTTPClient, its credentials, and
        // the retry policy of remote requests. Each backend is a `Bucket`; storage semantics stay in the core.
        .target(
            name: "StoreshRemote",
            dependencies: [
                "StoreshCore", "StoreshWire",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // Requests' headers and bodies as AsyncHTTPClient takes them, and its event loops.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]),

        .executableTarget(
            name: "storesh",
            dependencies: [
                "StoreshCore", "StoreshLocal", "StoreshLanguage", "StoreshExecution", "StoreshRules", "StoreshServer",
                "StoreshRemote", "CStoreshTerminal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            // Linker scripts, not sources (see linkerSettings).
            exclude: ["StaticRuntime"],
            // The teaching sample (a link to samples/teaching.json), compiled in so that a lone binary can
            // create the default bucket.
            resources: [.embedInCode("teaching.json")],
            // A cold start (issue 23): linked by the toolchain's lld (1 s instead of gold's 20), as a position-
            // dependent executable, so that the loader applies none of the static binary's 133,000 relative
            // relocations and writes none of the ~330 pages they touch, and exporting only the symbols the shared
            // libraries need (not 42,000, which the loader's address lookups scan). StaticRuntime's two linker
            // scripts, first on the library path, link GCC's C++ library and unwinder statically, so that the
            // loader loads neither libstdc++.so.6 nor libgcc_s.so.1 at start (0.5 ms).
            linkerSettings: [
                .unsafeFlags([
                    "-use-ld=lld", "-Xlinker", "-no-pie", "-Xlinker", "--no-export-dynamic",
                    "-L\(Context.packageDirectory)/Sources/storesh/StaticRuntime",
                ])
            ]
        ),
        // The fuzz engine for the language, and its driver (scripts/fuzz).
        .target(
            name: "StoreshFuzzing", dependencies: ["StoreshCore", "StoreshLanguage", "StoreshLocal", "StoreshRules"]),
        .executableTarget(
            name: "storesh-fuzz", dependencies: ["StoreshCore", "StoreshLanguage", "StoreshLocal", "StoreshFuzzing"]),
        // In-process benchmarks driven by scripts/bench.
        .executableTarget(
            name: "storesh-bench", dependencies: ["StoreshCore", "StoreshLocal", "StoreshLanguage", "StoreshRules"]),

        // Helpers shared by the test targets.
        .target(name: "StoreshTestSupport", dependencies: ["StoreshCore"], path: "Tests/StoreshTestSupport"),
        .testTarget(name: "StoreshCoreTests", dependencies: ["StoreshCore", "StoreshTestSupport"]),
        .testTarget(
            name: "StoreshRulesTests",
            dependencies: [
                "StoreshCore", "StoreshRules", "StoreshLocal", "StoreshLanguage", "StoreshTestSupport",
                "StoreshFuzzing",
            ]),
        .testTarget(
            name: "StoreshLocalTests",
            dependencies: [
                "StoreshCore", "StoreshLocal", "StoreshSQLite", "CSQLite", "StoreshRules", "StoreshTestSupport",
                "StoreshFuzzing", "StoreshWire",
            ]),
        .testTarget(
            name: "StoreshLanguageTests",
            dependencies: [
                "StoreshCore", "StoreshLanguage", "StoreshExecution", "StoreshLocal", "StoreshRules",
                "StoreshTestSupport", "StoreshFuzzing",
            ]),
        .testTarget(
            name: "StoreshExecutionTests", dependencies: ["StoreshExecution", "StoreshCore", "StoreshTestSupport"]),
        .testTarget(
            name: "StoreshServerTests",
            dependencies: [
                "StoreshServer", "StoreshCore", "StoreshLocal", "StoreshWire",
                // The routes in process, in Hummingbird's router test mode (the end-to-end suites run the binary).
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .testTarget(name: "StoreshRemoteTests", dependencies: ["StoreshRemote", "StoreshCore", "StoreshWire"]),
        // The command line's own parsing, in process (the storesh executable's module).
        .testTarget(
            name: "StoreshCommandLineTests",
            dependencies: [
                "storesh", "StoreshLanguage", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Runs the built `storesh` binary as a user would.
        .testTarget(name: "StoreshEndToEndTests", dependencies: ["StoreshCore", "StoreshLocal"]),
    ]
)
