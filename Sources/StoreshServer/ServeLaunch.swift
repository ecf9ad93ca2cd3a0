import Foundation
import StoreshCore
import StoreshLocal

/// Where `storesh serve` says what happened while it starts, runs and stops; the command line writes it on standard
/// error.
package struct ServeReport: Sendable {
    package var notice: @Sendable (String) -> Void
    package var warning: @Sendable (String) -> Void

    package init(notice: @escaping @Sendable (String) -> Void, warning: @escaping @Sendable (String) -> Void) {
        self.notice = notice
        self.warning = warning
    }
}

/// What `storesh serve` was asked for: its options as given (their ranges checked by the command line).
package struct ServeSettings: Sendable {
    /// Which firebase.json to read.
    package enum ProjectFile: Sendable {
        /// The one of the project the current directory is in, if any (`FirebaseProjectFile.find`).
        case find
        case file(String)
        case none
    }

    package var host: String?
    package var port: Int?
    package var projectFile = ProjectFile.find
    /// The name of the bucket when the bucket file is created; the bucket file must hold it.
    package var name: String?
    /// The directory of the other buckets clients name; nil: the bucket file's.
    package var otherBuckets: String?
    package var maximumObjectMiB = 256
    package var latencyMilliseconds = 0
    package var writesPerSecond: Int?
    package var readsPerSecond: Int?
    package var corsOrigins: [String] = []
    package var allowedHosts: [String] = []
    package var idleTimeoutSeconds = 60
    /// A service account's key file, which V4 signed URLs must be signed with.
    package var signingKey: String?
    package var createsBucketsOnEveryWrite = false
    /// A Firebase emulator export to serve (`--import`), and whether it replaces what the bucket files hold.
    package var importDirectory: String?
    package var replace = false
    /// Where the buckets are exported when the server stops; "": to the import directory.
    package var exportOnExit: String?
    /// Say nothing but warnings and the stop.
    package var quiet = false

    package init() {}
}

/// What the clients need once the server listens, for the command line's greeting.
package struct ServeGreeting: Sendable {
    package var bucket: String
    package var path: String
    package var otherBuckets: String
    /// The server listens on an address others can reach, where `Bearer owner` is the administrator.
    package var notLoopback: Bool
    package var everyWriteCreates: Bool
}

/// One run of `storesh serve`, from its settings to its stop. `prepare` reads and checks, before anything is written,
/// everything that needs no bucket file (firebase.json and the rules it names, an export to import, a signing key,
/// the address); the command line then opens the bucket file, and `run` checks it against `--name` and the export
/// (a file that holds other objects is not replaced), imports the export, puts the project's rules in force, serves
/// until stopped, and exports on exit.
package struct ServeLaunch: Sendable {
    package let settings: ServeSettings
    let report: ServeReport
    let project: FirebaseProjectFile?
    /// The text of each rules file the project names, by path, each checked.
    let rulesTexts: [String: String]
    /// The export to import, read and checked (each content's size and MD5, a piece at a time, not kept).
    package let imported: FirebaseEmulatorExport.Contents?
    /// The name a new bucket file takes: `--name`, else the export's (first) bucket.
    package let nameForNewBucket: String?
    let configuration: ServeConfiguration

    /// What needs no bucket file, read and checked in that order before anything is written; the address listened on
    /// once.
    package static func prepare(_ settings: ServeSettings, report: ServeReport) async throws -> ServeLaunch {
        // The project's firebase.json, as the emulator reads it (the command line's options come first); read before
        // anything opens, so that a mistake in it starts nothing.
        let projectPath: String? =
            switch settings.projectFile {
            case .find: FirebaseProjectFile.find()
            case .file(let path): path
            case .none: nil
            }
        let project = try projectPath.map { path throws(UsageError) in try FirebaseProjectFile.read(path) }
        let rulesTexts = try project?.checkedRulesTexts() ?? [:]
        // A bucket file holds objects up to SQLite's largest value: a larger limit would take a whole body and then
        // fail to store it (500 "string or blob too big"), so the limit is that, and said once.
        var maximumObjectBytes = Int64(settings.maximumObjectMiB) << 20
        if maximumObjectBytes > LocalBucket.largestObjectBytes {
            maximumObjectBytes = LocalBucket.largestObjectBytes
            report.warning(
                "--max-object-size \(settings.maximumObjectMiB) MiB is more than a bucket file holds: objects of up to \(MessageText.grouped(maximumObjectBytes)) bytes are taken, larger ones refused (413) before their bytes are read"
            )
        }
        // Read and checked before anything opens: a damaged export starts nothing. A directory that does not exist
        // yet is where the first export will go, as firebase emulators:start --import DIR --export-on-exit starts
        // empty the first time.
        let imported = try settings.importDirectory.flatMap { directory throws(StorageError) in
            access(directory, F_OK) == 0
                ? try FirebaseEmulatorExport.read(directory: directory, maximumObjectBytes: maximumObjectBytes) : nil
        }
        // A new bucket file takes the export's (first) bucket name, as the emulator would serve it.
        let nameForNewBucket = settings.name ?? imported.flatMap(FirebaseExportImport.firstBucket(of:))
        if let otherBuckets = settings.otherBuckets {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: otherBuckets, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw UsageError("--buckets \(otherBuckets): there is no such directory; create it first.")
            }
        }
        var limits = ServeLimits(maximumObjectBytes: Int(maximumObjectBytes))
        (limits.writesPerSecond, limits.readsPerSecond) = (settings.writesPerSecond, settings.readsPerSecond)
        var configuration = ServeConfiguration(
            host: settings.host ?? project?.host ?? "127.0.0.1", port: settings.port ?? project?.port ?? 9199,
            limits: limits, latency: .milliseconds(settings.latencyMilliseconds),
            originPolicy: OriginPolicy(origins: settings.corsOrigins, hosts: settings.allowedHosts))
        configuration.idleTimeout = .seconds(settings.idleTimeoutSeconds)
        configuration.createsBucketsOnEveryWrite = settings.createsBucketsOnEveryWrite
        if let signingKey = settings.signingKey {
            do {
                configuration.signingKey = try SignedURLKey(
                    serviceAccountFile: signingKey,
                    contents: try RegularFile.read(
                        signingKey, maximumBytes: RegularFile.maximumDocumentBytes, what: "a service account key"))
            } catch {
                throw UsageError("--signing-key: \(error.message)")
            }
        }
        // Nothing is written (no bucket file made, no import, no rules stored) until the server can listen.
        try await StorageServer.checkAddress(of: configuration)
        return ServeLaunch(
            settings: settings, report: report, project: project, rulesTexts: rulesTexts, imported: imported,
            nameForNewBucket: nameForNewBucket, configuration: configuration)
    }

    /// Serves `bucket` (opened by the caller; `existed` says whether its file did before) until the server is
    /// stopped: the export imported into the bucket files first, the project's rules in force (and again whenever a
    /// file changes), each request given to `log`, and every bucket exported on exit when asked. A server that
    /// never listened leaves no bucket file it created. What it did is said, the changes its clients made first.
    package func run(
        bucket: LocalBucket, existed: Bool, options: LocalBucketOptions, counting: (any WorkCounter)?,
        greeting: @escaping (ServeGreeting) -> @Sendable (String, Int) -> Void,
        log: (@Sendable (ServedRequest) -> Void)?
    ) async throws {
        if let name = settings.name, bucket.name != name {
            throw UsageError(
                "The bucket file \(bucket.path) holds gs://\(bucket.name), not gs://\(name); serve it as gs://\(bucket.name), or give --bucket a new file to create gs://\(name)."
            )
        }
        let otherBuckets =
            settings.otherBuckets ?? (URL(fileURLWithPath: bucket.path).deletingLastPathComponent().path)
        if let directory = settings.importDirectory {
            if let imported {
                for summary in try FirebaseExportImport.serve(
                    imported, directory: directory, first: bucket, others: otherBuckets, options: options,
                    replace: settings.replace)
                where !settings.quiet {
                    report.notice((existed ? "" : "created \(bucket.path); ") + summary)
                }
            } else if !settings.quiet {
                report.notice(
                    "\(directory) does not exist yet: serving gs://\(bucket.name) (\(bucket.path)) as it is\(settings.exportOnExit != nil ? "; it is exported there when the server stops" : "")"
                )
            }
        }
        let server = try StorageServer(
            bucket: bucket, otherBuckets: otherBuckets, options: options, configuration: configuration,
            onCreate: { [quiet = settings.quiet, report] name, path in
                if !quiet {
                    report.notice(
                        "created gs://\(name) at \(path), as a client asked (buckets.insert, or a first write to it)")
                }
            })
        let watches = try await loadProjectRules(into: server, first: bucket.name)
        defer { for watch in watches { watch.cancel() } }
        let host = configuration.host
        let listening = greeting(
            ServeGreeting(
                bucket: bucket.name, path: bucket.path, otherBuckets: otherBuckets,
                notLoopback: !(host == "localhost" || host == "::1" || host.hasPrefix("127.")),
                everyWriteCreates: settings.createsBucketsOnEveryWrite))
        let served: (changes: Int, commits: Int)
        do {
            served = try await server.run(onListening: listening, log: log)
        } catch let error as ServeError {
            // A server that never listened leaves no bucket file it created.
            if !existed {
                bucket.close()
                for suffix in ["", "-wal", "-shm"] { unlink(bucket.path + suffix) }
            }
            throw error
        }
        report.notice(
            "stopped after \(MessageText.counted(served.changes, "change")) by its clients in \(MessageText.counted(served.commits, "commit")); every answered change is in \(bucket.path)\(server.servedBuckets.count > 1 ? " and the other buckets' files in \(otherBuckets)" : "")."
        )
        if let exportOnExit = settings.exportOnExit {
            try export(server.servedBuckets, to: exportOnExit, options: options, counting: counting)
        }
    }

    /// Every bucket the server served, written as a Firebase emulator export (the server has closed them: the export
    /// reads their files again, as they now are).
    private func export(
        _ buckets: [(name: String, path: String)], to exportOnExit: String, options: LocalBucketOptions,
        counting: (any WorkCounter)?
    ) throws {
        let directory = exportOnExit.isEmpty ? settings.importDirectory ?? exportOnExit : exportOnExit
        let exported = try FirebaseEmulatorExport.write(
            files: buckets, to: directory, options: options, counting: counting)
        let names =
            exported.buckets.count == 1 ? "" : " of \(exported.buckets.map { "gs://\($0)" }.joined(separator: ", "))"
        report.notice(
            "exported \(MessageText.counted(exported.objects, "object"))\(names) to \(directory) (the Firebase emulator's layout)"
        )
        if let said = exported.leftOut.described { report.warning(said) }
        for file in exported.skipped {
            report.warning("not exported: \(file), which is not a bucket file storesh serve can read")
        }
    }

    /// Puts the project's rules in force, as the emulator does: one `storage.rules` for every bucket; a `storage`
    /// list, each file for the bucket it names (the first file for the served bucket when the list names it not).
    /// Each file is watched and loaded again when it changes. Returns the watches, to cancel when the server stops.
    private func loadProjectRules(into server: StorageServer, first: String) async throws -> [Task<Void, Never>] {
        guard let project, !project.rules.isEmpty else {
            if let problem = server.rulesProblem {
                report.warning(
                    "the bucket's security rules cannot be used (\(problem)); every v0 request they would decide is denied until rules are loaded (PUT /internal/setRules, or rules load in the shell)"
                )
            }
            return []
        }
        // Which buckets each file is for; nil: every bucket.
        var targets: [(path: String, buckets: [String]?)] = []
        if project.rules.count == 1, project.rules[0].bucket == nil {
            targets = [(project.rules[0].path, nil)]
        } else {
            for (bucket, path) in project.rules {
                let name = bucket ?? first
                if let index = targets.firstIndex(where: { $0.path == path }) {
                    targets[index].buckets?.append(name)
                } else {
                    targets.append((path, [name]))
                }
            }
            if !project.rules.contains(where: { ($0.bucket ?? first) == first }) { targets[0].buckets?.append(first) }
        }
        var watches: [Task<Void, Never>] = []
        for (path, buckets) in targets {
            guard let text = rulesTexts[path] else { continue }
            let load: @Sendable (String) async throws -> Void = { text in
                if let buckets {
                    for bucket in buckets { try await server.loadRules(source: text, origin: path, bucket: bucket) }
                } else {
                    try await server.loadRules(source: text, origin: path)
                }
            }
            do {
                try await load(text)
            } catch {
                let reason = (error as? StorageError)?.message ?? "\(error)"
                throw UsageError("\(project.path) names the rules \(path), which cannot be loaded: \(reason)")
            }
            if !settings.quiet {
                let scope = buckets.map { "gs://" + $0.joined(separator: ", gs://") } ?? "every bucket"
                report.notice(
                    "the rules of \(path) (named by \(project.path)) are in force for \(scope), and again whenever the file changes"
                )
            }
            let watch = RulesFileWatch(path: path, load: load, report: report)
            watches.append(Task { await watch.run(from: text) })
        }
        return watches
    }
}
