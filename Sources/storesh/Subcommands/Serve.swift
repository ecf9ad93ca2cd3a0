import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshServer

struct Serve: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Serve a local bucket over HTTP with the Firebase Storage emulator's API, for the official clients and SDKs.",
        discussion: """
            The Cloud Storage JSON API (at /storage/v1 and at /, with /upload and /download) and the Firebase v0 API \
            (/v0/b/BUCKET/o…), over the same durable bucket file the shell and scripts use, which they may use at the \
            same time. Point a client at it with the lines it prints (export STORAGE_EMULATOR_HOST=…, or the SDKs' \
            connectStorageEmulator). The bucket is served under its own name (storesh serve --name NAME sets it when \
            the file is created); any other bucket a client names is served too, each from NAME.bucket in the \
            --buckets directory (default: the bucket file's), made by buckets.insert (gcloud storage buckets create) \
            or, as the Firebase emulator makes one, by the first write on the Firebase v0 API; elsewhere a write to \
            a bucket that does not exist is a 404, as on Cloud Storage.

            On the Cloud Storage JSON API and with `Bearer owner` or `Firebase owner`, requests are the \
            administrator's; other v0 requests are decided by the bucket's security rules, with request.auth read \
            from the (unsigned) emulator ID token. PUT /internal/setRules loads rules; POST /internal/reset empties \
            the bucket.

            In a Firebase project, firebase.json (here or in a directory above; --config FILE, --no-config) gives \
            the host and port (emulators.storage) and the rules file (storage.rules, for every bucket; or a storage \
            list, a rules file for each bucket it names), which is loaded at start and again whenever it changes, as \
            firebase emulators:start does; --host and --port come first.

            Every answered change is durable. Ctrl-C or SIGTERM stops the server once the requests in progress are \
            answered. Each request is logged on standard error when it is a terminal and --quiet is not given (--log, \
            --no-log to choose).
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(
        help: ArgumentHelp(
            "The address to listen on (default: firebase.json's emulators.storage.host, else 127.0.0.1); anything but loopback lets others in as the administrator.",
            valueName: "address"))
    var host: String?

    @Option(
        help: ArgumentHelp(
            "The port to listen on (default: firebase.json's emulators.storage.port, else 9199); 0 picks a free one.",
            valueName: "port"))
    var port: Int?

    @Option(
        help: ArgumentHelp(
            "The Firebase project file to read, as firebase emulators:start does: emulators.storage.host and .port, and storage.rules, loaded at start and again whenever the file changes (default: firebase.json here or in a directory above).",
            valueName: "firebase.json"))
    var config: String?

    @Flag(name: .customLong("no-config"), help: "Read no firebase.json.")
    var noConfig = false

    @Option(
        help: ArgumentHelp(
            "The bucket's name, when storesh serve creates the bucket file (e.g. demo-project.appspot.com).",
            valueName: "name"))
    var name: String?

    @Option(
        name: .customLong("buckets"),
        help: ArgumentHelp(
            "The directory of the other buckets clients name, a NAME.bucket file each, made by buckets.insert or a first write on the Firebase v0 API (default: the directory of the bucket file).",
            valueName: "dir"))
    var otherBuckets: String?

    @Option(
        help: ArgumentHelp(
            "The largest object an upload may make, in MiB (its bytes wait in a file beside the bucket until the upload lands).",
            valueName: "mib"))
    var maxObjectSize = 256

    @Option(
        help: ArgumentHelp(
            "Wait this many milliseconds before each answer, as a distant service's round trip would (to try an app's loading states, or a client's parallelism, on one machine).",
            valueName: "ms"))
    var latency = 0

    @Option(
        help: ArgumentHelp(
            "Answer 429 with Retry-After to writes above this many a second, as a service's rate limit would (a batch's calls count one by one), to try a client's pacing.",
            valueName: "n"))
    var writeRate: Int?

    @Option(help: ArgumentHelp("Answer 429 with Retry-After to reads above this many a second.", valueName: "n"))
    var readRate: Int?

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

    @Option(
        help: ArgumentHelp(
            "Close a connection that sends nothing for this many seconds (a stalled request, or an idle client).",
            valueName: "seconds"))
    var idleTimeout = 60

    @Option(
        help: ArgumentHelp(
            "A service account's JSON key file: V4 signed URLs (blob.generate_signed_url(version=\"v4\")) must be signed with it. Without one, a signed URL's form and expiry are checked, not its signature.",
            valueName: "file"))
    var signingKey: String?

    @Flag(
        help:
            "Make a bucket that does not exist when a write to it comes on any API, as the Firebase emulator does (by default only on the Firebase API; on the JSON and XML APIs it is a 404, as on Cloud Storage)."
    )
    var createBucketsOnWrite = false

    @Flag(
        inversion: .prefixedNo,
        help: "Log one line per request on standard error (default: when it is a terminal, unless --quiet).")
    var log: Bool?

    @Option(
        name: .customLong("import"),
        help: ArgumentHelp(
            "Serve the objects of a Firebase emulator export (a directory that firebase emulators:export or --export-on-exit wrote), each bucket under its name and from a bucket file of its own (without --bucket, imports/NAME.bucket in the data directory, and its other buckets beside it). A bucket file that holds other objects is not replaced without --replace. A directory that does not exist yet starts the server empty.",
            valueName: "dir"))
    var importDirectory: String?

    @Flag(help: "With --import: replace the objects the bucket file already holds, when they are not the export's.")
    var replace = false

    @Option(
        defaultAsFlag: "",
        help: ArgumentHelp(
            "When the server stops, write every bucket it served as a Firebase emulator export to this directory (without one, to the --import directory), as firebase emulators:start --export-on-exit does: only its storage_export/ and the storage entry of firebase-export-metadata.json are written.",
            valueName: "dir"))
    var exportOnExit: String?

    func validate() throws {
        if let port, !(0...65535).contains(port) { throw ValidationError("--port must be 0…65535, not \(port).") }
        if config != nil && noConfig {
            throw ValidationError("--config names the firebase.json to read; --no-config reads none: give one of them.")
        }
        guard (1...4096).contains(maxObjectSize) else {
            throw ValidationError("--max-object-size must be 1…4096 MiB, not \(maxObjectSize).")
        }
        guard (1...3600).contains(idleTimeout) else {
            throw ValidationError("--idle-timeout must be 1…3600 seconds, not \(idleTimeout).")
        }
        guard (0...60_000).contains(latency) else {
            throw ValidationError("--latency must be 0…60000 milliseconds, not \(latency).")
        }
        for (option, rate) in [("--write-rate", writeRate), ("--read-rate", readRate)] {
            if let rate, !(1...10_000_000).contains(rate) {
                throw ValidationError("\(option) must be 1…10000000 requests a second, not \(rate).")
            }
        }
        if let name, name.isEmpty || name.contains("/") {
            throw ValidationError("--name must be a bucket name, without '/'.")
        }
        if exportOnExit == "" && importDirectory == nil {
            throw ValidationError(
                "--export-on-exit without a directory exports to the --import directory: give --import DIR, or --export-on-exit DIR."
            )
        }
        if otherBuckets?.isEmpty == true { throw ValidationError("--buckets names a directory.") }
        for origin in corsOrigins where origin != "*" {
            guard let url = URLComponents(string: origin), ["http", "https"].contains(url.scheme ?? ""),
                url.host?.isEmpty == false,
                url.path.isEmpty, url.query == nil
            else {
                throw ValidationError(
                    "--cors takes an origin such as http://192.168.1.20:3000 (scheme, host and port only) or *, not '\(origin)'."
                )
            }
        }
        for host in allowedHosts where host.isEmpty || host.contains(":") || host.contains("/") {
            throw ValidationError("--allow-host takes a host name without a port, such as storage.test, not '\(host)'.")
        }
    }

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions)
        var location = try context.location()
        try location.refuseRemote(
            "storesh serve serves a local bucket file", instead: "Give --bucket a bucket file (it may be a new one).")
        let clock = try context.makeClock()
        var settings = ServeSettings()
        (settings.host, settings.port, settings.name, settings.otherBuckets) = (host, port, name, otherBuckets)
        settings.projectFile = noConfig ? .none : config.map { .file($0) } ?? .find
        (settings.maximumObjectMiB, settings.latencyMilliseconds) = (maxObjectSize, latency)
        (settings.writesPerSecond, settings.readsPerSecond) = (writeRate, readRate)
        (settings.corsOrigins, settings.allowedHosts) = (corsOrigins, allowedHosts)
        (settings.idleTimeoutSeconds, settings.signingKey) = (idleTimeout, signingKey)
        settings.createsBucketsOnEveryWrite = createBucketsOnWrite
        (settings.importDirectory, settings.replace, settings.exportOnExit) = (importDirectory, replace, exportOnExit)
        settings.quiet = context.quiet
        let report = ServeReport(
            notice: { Diagnostics.notice($0, from: "storesh serve") },
            warning: { Diagnostics.warning($0, from: "storesh serve") })
        let launch = try await ServeLaunch.prepare(settings, report: report)
        var nameForNewBucket = launch.nameForNewBucket
        if let importDirectory, location.unnamedSource != nil {
            // An export is served as its own buckets, never poured into the default (teaching) bucket or the one
            // $STORESH_BUCKET names: from bucket files of their own, named after the export's buckets (rule V9).
            let bucketName = nameForNewBucket ?? LocalBucket.defaultName(forFile: importDirectory)
            nameForNewBucket = bucketName
            location = try BucketLocation.imported(bucket: bucketName)
        }
        let existed = access(location.path, F_OK) == 0
        // With --import, what the bucket holds is the export's, and said so once (not that a new file was empty).
        let bucket = try location.open(
            clock: clock, quiet: context.quiet || importDirectory != nil, nameForNewBucket: nameForNewBucket)
        _ = OpenBuckets.shared.keep(bucket)
        let logLine: @Sendable (ServedRequest) -> Void = { request in
            let milliseconds = (request.seconds * 1000).formatted(.number.precision(.fractionLength(1)))
            Diagnostics.line("\(request.method) \(request.path) \(request.status) \(milliseconds) ms")
        }
        let logs = log ?? (!context.quiet && isatty(STDERR_FILENO) != 0)
        try await launch.run(
            bucket: bucket, existed: existed, options: BucketLocation.options(clock: clock),
            counting: context.progressMeter, greeting: Self.greeting, log: logs ? logLine : nil)
        return .success
    }

    /// What a client needs, once the server listens: where, and the lines that point the clients at it.
    static func greeting(_ served: ServeGreeting) -> @Sendable (String, Int) -> Void {
        let (bucket, path, others) = (served.bucket, served.path, served.otherBuckets)
        let (warnOfAddress, everyWriteCreates) = (served.notLoopback, served.everyWriteCreates)
        return { host, port in
            // Clients reach a server that listens on every interface at loopback too.
            let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" ? "::1" : host
            let address = reachable.contains(":") ? "[\(reachable)]:\(port)" : "\(reachable):\(port)"
            let columns = Int(storesh_terminal_columns(STDOUT_FILENO))
            // A line to paste, with its comment after it, or above it when both do not fit the terminal: a comment
            // wrapped onto a line of its own below would be pasted as a command.
            func code(_ code: String, _ comment: String) -> String {
                let line = "  \(code)   \(comment)"
                return columns > 0 && TerminalCells.width(of: line) > columns
                    ? "  \(comment)\n  \(code)\n" : line + "\n"
            }
            var text = "storesh serve: gs://\(bucket) (\(path)) at http://\(address)\n"
            text +=
                everyWriteCreates
                ? "  and any other bucket a client names, from NAME.bucket in \(others) (made when a write to it lands)\n"
                : "  and other buckets, from NAME.bucket in \(others), made by buckets.insert or by a write on the Firebase API; on the JSON and XML APIs a write to a bucket that does not exist is a 404, as on Cloud Storage\n"
            text += code("export STORAGE_EMULATOR_HOST=http://\(address)", "# the Python, Go and Java clients")
            // The Node Admin SDK (firebase-admin) reads this one, host and port without a scheme.
            text += code("export FIREBASE_STORAGE_EMULATOR_HOST=\(address)", "# firebase-admin (Node)")
            text += code(
                "connectStorageEmulator(getStorage(app, \"gs://\(bucket)\"), \"\(reachable)\", \(port))", "// Web SDK")
            text += code(
                "Storage.storage(url: \"gs://\(bucket)\").useEmulator(withHost: \"\(reachable)\", port: \(port))",
                "// Apple SDK")
            text += "  http://\(address)/ in a browser: the bucket, its folders and metadata\n"
            text += "Ctrl-C stops the server.\n"
            if warnOfAddress {
                text +=
                    "storesh serve: WARNING: listening on \(host), not loopback: anyone who can reach it can use `Bearer owner` and is the administrator of this bucket.\n"
            }
            // On a terminal, wrapped between words to its width, as everything storesh says there (a code line's
            // comment goes to a line of its own; the code stays whole).
            if columns > 0 {
                text = TerminalCells.wrap(String(text.dropLast()), toCells: columns).joined(separator: "\n") + "\n"
            }
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
