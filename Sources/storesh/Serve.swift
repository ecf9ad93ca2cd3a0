import ArgumentParser
import Foundation
import StoreshCore
import StoreshLocal
import StoreshServer

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve a local bucket over HTTP with the Firebase Storage emulator's API, for the official clients and SDKs.",
        discussion: """
            The Cloud Storage JSON API (at /storage/v1 and at /, with /upload and /download) and the Firebase v0 API \
            (/v0/b/BUCKET/o…), over the same durable bucket file the shell and scripts use, which they may use at the \
            same time. Point a client at it with the lines it prints (export STORAGE_EMULATOR_HOST=…, or the SDKs' \
            connectStorageEmulator). The bucket is served under its own name (storesh serve --name NAME sets it when \
            the file is created).

            On the Cloud Storage JSON API and with `Bearer owner` or `Firebase owner`, requests are the \
            administrator's; other v0 requests are decided by the bucket's security rules, with request.auth read \
            from the (unsigned) emulator ID token. PUT /internal/setRules loads rules; POST /internal/reset empties \
            the bucket.

            In a Firebase project, firebase.json (here or in a directory above; --config FILE, --no-config) gives \
            the host and port (emulators.storage) and the rules file (storage.rules), which is loaded at start and \
            again whenever it changes, as firebase emulators:start does; --host and --port come first.

            Every answered change is durable. Ctrl-C or SIGTERM stops the server once the requests in progress are \
            answered. Each request is logged on standard error when it is a terminal and --quiet is not given (--log, \
            --no-log to choose).
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp(
        "The address to listen on (default: firebase.json's emulators.storage.host, else 127.0.0.1); anything but loopback lets others in as the administrator.",
        valueName: "address"))
    var host: String?

    @Option(help: ArgumentHelp(
        "The port to listen on (default: firebase.json's emulators.storage.port, else 9199); 0 picks a free one.", valueName: "port"))
    var port: Int?

    @Option(help: ArgumentHelp(
        "The Firebase project file to read, as firebase emulators:start does: emulators.storage.host and .port, and storage.rules, loaded at start and again whenever the file changes (default: firebase.json here or in a directory above).",
        valueName: "firebase.json"))
    var config: String?

    @Flag(name: .customLong("no-config"), help: "Read no firebase.json.")
    var noConfig = false

    @Option(help: ArgumentHelp("The bucket's name, when storesh serve creates the bucket file (e.g. demo-project.appspot.com).", valueName: "name"))
    var name: String?

    @Option(help: ArgumentHelp("The largest object an upload may make, in MiB (its bytes wait in a file beside the bucket until the upload lands).", valueName: "mib"))
    var maxObjectSize = 256

    @Option(help: ArgumentHelp(
        "Wait this many milliseconds before each answer, as a distant service's round trip would (to try an app's loading states, or a client's parallelism, on one machine).",
        valueName: "ms"))
    var latency = 0

    @Option(
        name: .customLong("cors"),
        help: ArgumentHelp(
            "Also answer web pages of this origin (scheme://host:port; * for any). Pages served from localhost, 127.0.0.1 and [::1] are answered without it; any other page's request is refused.",
            valueName: "origin"))
    var corsOrigins: [String] = []

    @Option(
        name: .customLong("allow-host"),
        help: ArgumentHelp(
            "Also answer requests that reach the server under this host name (a container's service name, say). Loopback, IP addresses and --host are answered without it; other names are refused (DNS rebinding).",
            valueName: "name"))
    var allowedHosts: [String] = []

    @Option(help: ArgumentHelp(
        "Close a connection that sends nothing for this many seconds (a stalled request, or an idle client).", valueName: "seconds"))
    var idleTimeout = 60

    @Flag(inversion: .prefixedNo, help: "Log one line per request on standard error (default: when it is a terminal, unless --quiet).")
    var log: Bool?

    @Option(
        name: .customLong("import"),
        help: ArgumentHelp(
            "Serve the objects of a Firebase emulator export (a directory that firebase emulators:export or --export-on-exit wrote), under the export's bucket name; without --bucket, from a bucket file of its own (imports/NAME.bucket in the data directory). A bucket file that holds other objects is not replaced without --replace.",
            valueName: "dir"))
    var importDirectory: String?

    @Flag(help: "With --import: replace the objects the bucket file already holds, when they are not the export's.")
    var replace = false

    @Option(
        help: ArgumentHelp(
            "When the server stops, write the bucket as a Firebase emulator export to this directory, as firebase emulators:start --export-on-exit does: only its storage_export/ and the storage entry of firebase-export-metadata.json are written.",
            valueName: "dir"))
    var exportOnExit: String?

    func validate() throws {
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0…65535, not \(port).") }
        if config != nil && noConfig { throw ValidationError("--config names the firebase.json to read; --no-config reads none: give one of them.") }
        guard (1...4096).contains(maxObjectSize) else { throw ValidationError("--max-object-size must be 1…4096 MiB, not \(maxObjectSize).") }
        guard (1...3600).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be 1…3600 seconds, not \(idleTimeout).") }
        guard (0...60_000).contains(latency) else { throw ValidationError("--latency must be 0…60000 milliseconds, not \(latency).") }
        if let name, name.isEmpty || name.contains("/") { throw ValidationError("--name must be a bucket name, without '/'.") }
        for origin in corsOrigins where origin != "*" {
            guard let url = URLComponents(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host?.isEmpty == false,
                url.path.isEmpty, url.query == nil
            else {
                throw ValidationError("--cors takes an origin such as http://192.168.1.20:3000 (scheme, host and port only) or *, not '\(origin)'.")
            }
        }
        for host in allowedHosts where host.isEmpty || host.contains(":") || host.contains("/") {
            throw ValidationError("--allow-host takes a host name without a port, such as storage.test, not '\(host)'.")
        }
    }

    func run() async throws {
        var location = try bucketOptions.location()
        try location.refuseRemote(
            "storesh serve serves a local bucket file", instead: "Give --bucket a bucket file (it may be a new one).")
        let clock = try makeClock(flag: bucketOptions.clock)
        // The project's firebase.json, as the emulator reads it (the command line's options come first); read before
        // anything opens, so that a mistake in it starts nothing.
        let projectPath = noConfig ? nil : config ?? FirebaseProjectFile.find()
        let project = try projectPath.map { path throws(CommandLineError) in try FirebaseProjectFile.read(path) }
        let rulesTexts = try project?.checkedRulesTexts() ?? [:]
        // Read and checked before anything opens (each content's size and MD5, a piece at a time, not kept): a
        // damaged export starts nothing.
        let maximumObjectBytes = Int64(maxObjectSize) << 20
        let imported = try importDirectory.map { directory throws(StorageError) in
            try FirebaseEmulatorExport.read(directory: directory, maximumObjectBytes: maximumObjectBytes)
        }
        var nameForNewBucket = name
        if nameForNewBucket == nil, let imported {
            // A new bucket file takes the export's bucket name, as the emulator would serve it.
            nameForNewBucket = FirebaseExportImport.bucketName(of: imported)
        }
        if let importDirectory, location.unnamedSource != nil {
            // An export is served as its own bucket, never poured into the default (teaching) bucket or the one
            // $STORESH_BUCKET names: from a bucket file of its own, named after the export's bucket (rule V9).
            guard let bucketName = nameForNewBucket else {
                throw CommandLineError(
                    "\(importDirectory) holds no single bucket to serve; give --name with the bucket to serve (and --bucket FILE to choose its file).")
            }
            location = try FirebaseExportImport.ownLocation(forBucket: bucketName)
        }
        let host = self.host ?? project?.host ?? "127.0.0.1"
        var configuration = ServeConfiguration(
            host: host, port: port ?? project?.port ?? 9199, limits: ServeLimits(maximumObjectBytes: Int(maximumObjectBytes)),
            latency: .milliseconds(latency), originPolicy: OriginPolicy(origins: corsOrigins, hosts: allowedHosts))
        configuration.idleTimeout = .seconds(idleTimeout)
        // Nothing is written (no bucket file made, no import, no rules stored) until the server can listen.
        try await StorageServer.checkAddress(of: configuration)
        let existed = access(location.path, F_OK) == 0
        // With --import, what the bucket holds is the export's, and said so once (not that a new file was empty).
        let bucket = try location.open(clock: clock, quiet: bucketOptions.quiet || imported != nil, nameForNewBucket: nameForNewBucket)
        _ = OpenBuckets.shared.keep(bucket)
        if let imported, let importDirectory {
            let (objects, from) = try FirebaseExportImport.objects(of: imported, for: bucket.name, directory: importDirectory)
            let summary = try FirebaseExportImport.serve(objects, from: from, directory: importDirectory, in: bucket, replace: replace)
            if !bucketOptions.quiet {
                let made = existed ? "" : "created \(bucket.path); "
                Diagnostics.notice(made + summary, from: "storesh serve")
            }
        }
        if let name, bucket.name != name {
            throw CommandLineError(
                "The bucket file \(bucket.path) holds gs://\(bucket.name), not gs://\(name); serve it as gs://\(bucket.name), or give --bucket a new file to create gs://\(name).")
        }
        let rulesPath = project?.rulesPath(for: bucket.name)
        let rulesText = rulesPath.flatMap { rulesTexts[$0] }
        let server = try StorageServer(bucket: bucket, options: BucketLocation.options(clock: clock), configuration: configuration)
        var watchTask: Task<Void, Never>?
        if let rulesPath, let rulesText, let project {
            do {
                try await server.loadRules(source: rulesText, origin: rulesPath)
            } catch {
                let reason = (error as? StorageError)?.message ?? "\(error)"
                throw CommandLineError("\(project.path) names the rules \(rulesPath), which cannot be loaded: \(reason)")
            }
            if !bucketOptions.quiet {
                Diagnostics.notice(
                    "the rules of \(rulesPath) (named by \(project.path)) are in force, and again whenever the file changes",
                    from: "storesh serve")
            }
            let watch = RulesFileWatch(path: rulesPath, load: { text in try await server.loadRules(source: text, origin: rulesPath) })
            watchTask = Task { await watch.run(from: rulesText) }
        }
        defer { watchTask?.cancel() }
        if rulesText == nil, let problem = server.rulesProblem {
            Diagnostics.warning(
                "the bucket's security rules cannot be used (\(problem)); every v0 request they would decide is denied until rules are loaded (PUT /internal/setRules, or rules load in the shell)",
                from: "storesh serve")
        }
        let logs = log ?? (!bucketOptions.quiet && isatty(STDERR_FILENO) != 0)
        let loopback = host == "localhost" || host == "::1" || host.hasPrefix("127.")
        let greeting = Self.greeting(bucket: bucket.name, path: bucket.path, warnOfAddress: !loopback)
        let logLine: @Sendable (ServedRequest) -> Void = { request in
            let milliseconds = (request.seconds * 1000).formatted(.number.precision(.fractionLength(1)))
            Diagnostics.line("\(request.method) \(request.path) \(request.status) \(milliseconds) ms")
        }
        let served: (changes: Int, commits: Int)
        do {
            served = try await server.run(onListening: greeting, log: logs ? logLine : nil)
        } catch let error as ServeError {
            // A server that never listened leaves no bucket file it created.
            if !existed {
                bucket.close()
                for suffix in ["", "-wal", "-shm"] { unlink(bucket.path + suffix) }
            }
            throw error
        }
        let path = bucket.path
        Diagnostics.notice(
            "stopped after \(MessageText.counted(served.changes, "change")) by its clients in \(MessageText.counted(served.commits, "commit")); every answered change is in \(path).",
            from: "storesh serve")
        if let exportOnExit {
            // The server has closed the bucket: the export reads the file again, as it now is.
            let closed = try location.open(clock: clock, quiet: true)
            defer { closed.close() }
            try FirebaseEmulatorExport.write(closed, to: exportOnExit)
            Diagnostics.notice(
                "exported \(MessageText.counted(try closed.objectCount(), "object")) to \(exportOnExit) (the Firebase emulator's layout)",
                from: "storesh serve")
        }
    }

    /// What a client needs, once the server listens: where, and the lines that point the clients at it.
    static func greeting(bucket: String, path: String, warnOfAddress: Bool) -> @Sendable (String, Int) -> Void {
        { host, port in
            // Clients reach a server that listens on every interface at loopback too.
            let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
            let address = reachable.contains(":") ? "[\(reachable)]:\(port)" : "\(reachable):\(port)"
            var text = "storesh serve: gs://\(bucket) (\(path)) at http://\(address)\n"
            text += "  export STORAGE_EMULATOR_HOST=http://\(address)   # the Python, Go and Java clients\n"
            // The Node Admin SDK (firebase-admin) reads this one, host and port without a scheme.
            text += "  export FIREBASE_STORAGE_EMULATOR_HOST=\(address)   # firebase-admin (Node)\n"
            text += "  connectStorageEmulator(getStorage(app, \"gs://\(bucket)\"), \"\(reachable)\", \(port))   // Web SDK\n"
            text += "  Storage.storage(url: \"gs://\(bucket)\").useEmulator(withHost: \"\(reachable)\", port: \(port))   // Apple SDK\n"
            text += "  http://\(address)/ in a browser: the bucket, its folders and metadata\n"
            text += "Ctrl-C stops the server.\n"
            if warnOfAddress {
                text += "storesh serve: WARNING: listening on \(host), not loopback: anyone who can reach it can use `Bearer owner` and is the administrator of this bucket.\n"
            }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
