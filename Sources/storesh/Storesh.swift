import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

let storeshVersion = "0.1.0"

/// Options every command takes: argument-parser's declaration of them.
struct BucketOptions: ParsableArguments, BucketArguments {
    @Option(
        name: .long, help: ArgumentHelp(
            "The bucket: a local bucket file, gs://NAME (Google Cloud Storage, Firebase) or s3://NAME (S3-compatible) (default: $STORESH_BUCKET, else the default bucket).",
            valueName: "location"))
    var bucket: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Start the clock at this RFC 3339 time and advance 1 ms per change (default: $STORESH_CLOCK, else real time).",
            valueName: "rfc3339"))
    var clock: String?

    @Flag(name: .long, help: "Do not say which bucket is used when --bucket does not name it (storesh serve: and log no requests).")
    var quiet = false

    @Flag(
        name: .long,
        help: "On a real bucket, print each request sent on standard error: method, URL, status, time (credentials and tokens left out; also $STORESH_TRACE=1).")
    var trace = false
}

/// The values of the bucket options (`--bucket`, `--clock`, `--quiet`, `--trace`), however they were read: by
/// argument-parser (`BucketOptions`) or by the everyday root parse (`BucketArgumentValues`); and what they open.
protocol BucketArguments {
    var bucket: String? { get }
    var clock: String? { get }
    var quiet: Bool { get }
    var trace: Bool { get }
}

/// The bucket options as plain values.
struct BucketArgumentValues: BucketArguments, Equatable {
    var bucket: String?
    var clock: String?
    var quiet = false
    var trace = false
}

extension BucketArguments {
    /// Where the bucket is: a usage error (exit 2) for an empty or unknown location, before anything opens.
    func location() throws -> BucketLocation {
        if bucket?.isEmpty == true { throw CommandLineError("--bucket needs a bucket: \(BucketLocation.forms).") }
        return try BucketLocation.resolve(flag: bucket)
    }

    /// Opens the bucket of a shell or script session, whatever its kind (rule B1), creating a local one when
    /// missing, with the clock its changes and the session's rules share. With `--json` standard error holds JSON
    /// only, so the run does not say which bucket it uses.
    func open(json: Bool = false) async throws -> OpenedBucket {
        let clock = try makeClock(flag: clock)
        let location = try location()
        if case .file(let path) = location.kind {
            return OpenedBucket(
                bucket: OpenBuckets.shared.keep(try location.open(clock: clock, quiet: quiet || json)), clock: clock,
                given: path, isFile: true)
        }
        return OpenedBucket(
            bucket: OpenBuckets.shared.keep(try await location.openRemote(quiet: quiet || json, trace: trace)), clock: clock,
            given: location.displayed, isFile: false)
    }

    /// Opens a local bucket file, creating it when missing, for local-bucket features (archives): refused on a
    /// real bucket before anything runs (rule B3).
    /// `nameForNewBucket`: the name a bucket file this creates gets (default: the file's name).
    func openLocal(nameForNewBucket: String? = nil) throws -> LocalBucket {
        let location = try location()
        try location.refuseRemote(
            "export and import of whole archives work on local bucket files",
            instead: "Use a script of put and get for a real bucket's objects.")
        let bucket = try location.open(clock: try makeClock(flag: clock), quiet: quiet, nameForNewBucket: nameForNewBucket)
        _ = OpenBuckets.shared.keep(bucket)
        return bucket
    }

    /// Opens a local bucket file that must exist already (a check or a backup never creates one): these are
    /// local-bucket features, refused on a real bucket before anything runs (rule B3).
    func openExisting(json: Bool = false) throws -> LocalBucket {
        let location = try location()
        try location.refuseRemote(
            "check and backup verify and copy local bucket files",
            instead: "Cloud Storage keeps a real bucket's integrity itself.")
        var options = BucketLocation.options(clock: try makeClock(flag: clock))
        options.createIfMissing = false
        let bucket = try LocalBucket.open(at: location.path, options: options)
        _ = OpenBuckets.shared.keep(bucket)
        if !quiet && !json { location.announce(bucket) }
        return bucket
    }
}

/// The process's entry: synchronous, so that a local script can run on the main thread alone
/// (`ThisThreadExecutor`); everything else waits for Swift's executors.
@main
enum StoreshProcess {
    static func main() { Storesh.start() }
}

struct Storesh: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storesh",
        abstract: "A scriptable shell for cloud-storage buckets with the semantics of Cloud Storage for Firebase.",
        // Written out: no subcommand is needed (a prompt, -c, standard input), which the generated usage would
        // show as a required <subcommand>.
        usage: """
            storesh [--bucket <location>] [--json] [--clock <rfc3339>] [--quiet] [--trace] [--dry-run] [--summary] [--keep-going]
            storesh [OPTIONS] -c <text>
            storesh [OPTIONS] run <file> [--echo] [--explain] [--snapshot <name>] [--resume <journal>]
            storesh [OPTIONS] --dry-run --plan <file> -c <text>      (then: storesh apply <file>)
            storesh <subcommand> [ARGUMENTS]      (see SUBCOMMANDS below; storesh help <subcommand>)
            """,
        discussion: """
            On a terminal storesh opens a prompt; with -c TEXT, `run FILE`, or a script on standard input, it runs \
            the script and exits. On a bucket file a script is one transaction: all its changes land, or none. On \
            gs://NAME (Google Cloud Storage, Firebase) a script is planned, then applied with preconditions, in \
            parallel, with a journal (run --resume JOURNAL finishes it, undo JOURNAL puts it back). A dry run's plan \
            can be kept (--dry-run --plan FILE) and applied later as reviewed (storesh apply FILE). Type `help` at \
            the prompt (or storesh -c help) for the commands; s3://NAME buckets work the same way.

            The default bucket lives in $XDG_DATA_HOME/storesh (or ~/.local/share/storesh) and starts as the \
            teaching sample. Exit status: 0 everything ran, 1 a command failed, 2 usage or syntax error \
            (nothing ran), 130 interrupted.
            """,
        version: "storesh \(storeshVersion)",
        subcommands: [Run.self, Apply.self, Undo.self, Copy.self, Reset.self, Serve.self, Check.self, Backup.self, Export.self, Import.self]
    )

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Option(name: .customShort("c"), help: ArgumentHelp("Run TEXT as a script, then exit.", valueName: "text"))
    var command: String?

    @OptionGroup var planOptions: PlanOptions

    func run() async throws {
        try await RootInvocation(self).run()
    }

    /// The bytes of the argument after `option` (`-c TEXT`) or joined to it (`-cTEXT`), as the system gave
    /// them; nil when the option is not there.
    static func rawValue(ofOption option: String) -> [UInt8]? {
        let arguments = (1..<Int(CommandLine.argc)).compactMap { index in
            CommandLine.unsafeArgv[index].map { Array(UnsafeBufferPointer(start: $0, count: strlen($0))).map { UInt8(bitPattern: $0) } }
        }
        let flag = Array(option.utf8)
        for (index, argument) in arguments.enumerated() {
            if argument == Array("--".utf8) { return nil }
            if argument == flag { return index + 1 < arguments.count ? arguments[index + 1] : nil }
            if argument.starts(with: flag) && argument.count > flag.count { return Array(argument.dropFirst(flag.count)) }
        }
        return nil
    }

    /// Every way out: the buckets this process opened are closed first, so that each is left as one file
    /// (SQLite folds the log into it and removes it) and no later process replays a log.
    static func leave(_ status: Int32) -> Never {
        OpenBuckets.shared.closeAll()
        Foundation.exit(status)
    }

    static func start() -> Never {
        // Large transient buffers (the chunks of a streamed upload or download) are mapped and given back when
        // freed, instead of glibc's moving threshold keeping them in the heap: memory stays near one chunk.
        storesh_map_large_buffers()
        // `storesh help listAll`, `storesh help meta set`: the language's help, where no subcommand has that name
        // (argument-parser's own `help` would print the overview and say nothing of the topic).
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count > 1, arguments[0] == "help", !configuration.subcommands.contains(where: { $0._commandName == arguments[1] }) {
            let topic = arguments.dropFirst().joined(separator: " ")
            guard let text = CommandCatalog.helpText(for: topic) else {
                leave(Diagnostics.report(CommandLineError(
                    "storesh help \(topic): no subcommand, command or topic has that name; storesh --help lists the subcommands, storesh -c help the commands.")))
            }
            print(text)
            leave(0)
        }
        if let everyday = EverydayInvocation.parse(arguments) {
            if everyday.runsOnThisThread {
                leave(ThisThreadExecutor.run { await exitStatus { try await everyday.run() } })
            }
            leave(waitingForSwiftsExecutors { await exitStatus { try await everyday.run() } })
        }
        leave(waitingForSwiftsExecutors {
            await exitStatus {
                var command = try parseAsRoot()
                if var asyncCommand = command as? AsyncParsableCommand {
                    try await asyncCommand.run()
                } else {
                    try command.run()
                }
            }
        })
    }

    /// The exit status of `body`: 0 when it returns, the status it throws, or its error's (reported).
    static func exitStatus(_ body: () async throws -> Void) async -> Int32 {
        do {
            try await body()
            return 0
        } catch let error as ExitCode {
            return error.rawValue
        } catch {
            return Diagnostics.report(error)
        }
    }
}

/// What the root command was asked (the prompt, or a script from -c or standard input, with the root's options),
/// as plain values: argument-parser's `Storesh` and the everyday parse (`EverydayInvocation`) both make one, and
/// this runs it.
struct RootInvocation: Equatable {
    var bucket = BucketArgumentValues()
    var json = false
    var apply = ApplyArgumentValues()
    var command: String?
    var dryRun = false
    var summary = false
    var keepGoing = false
    var plan: String?

    init() {}

    init(_ root: Storesh) {
        bucket = BucketArgumentValues(
            bucket: root.bucketOptions.bucket, clock: root.bucketOptions.clock, quiet: root.bucketOptions.quiet,
            trace: root.bucketOptions.trace)
        json = root.outputOptions.json
        apply = ApplyArgumentValues(parallel: root.applyOptions.parallel, journal: root.applyOptions.journal)
        command = root.command
        dryRun = root.planOptions.dryRun
        summary = root.planOptions.summary
        keepGoing = root.planOptions.keepGoing
        plan = root.planOptions.plan
    }

    /// A script (`-c`, standard input) on a local bucket file: it awaits nothing but SQLite, and runs on the main
    /// thread alone (`ThisThreadExecutor`).
    var runsOnThisThread: Bool {
        guard command != nil || isatty(STDIN_FILENO) == 0,
            let location = try? BucketLocation.resolve(flag: bucket.bucket), case .file = location.kind
        else { return false }
        return true
    }

    func run() async throws {
        var options = RunOptions(json: json, dryRun: dryRun, keepGoing: keepGoing)
        options.summaryOnly = summary
        if let command {
            // Swift's arguments replace invalid UTF-8 with U+FFFD: decode the bytes as given instead, so that a
            // bad byte is a positioned error, as it is in a script file.
            let source = try decodeScript(name: "-c", bytes: Storesh.rawValue(ofOption: "-c") ?? Array(command.utf8), json: json)
            throw ExitCode(try await runScript(source, options: options, applyOptions: apply, keepingPlanIn: plan) { try await bucket.open(json: json) })
        }
        if isatty(STDIN_FILENO) == 0 {
            let source = try decodeScript(name: "-", bytes: FileHandle.standardInput.readDataToEndOfFile(), json: json)
            throw ExitCode(try await runScript(source, options: options, applyOptions: apply, keepingPlanIn: plan) { try await bucket.open(json: json) })
        }
        if plan != nil {
            throw CommandLineError("--plan keeps the plan of a script (-c TEXT, run FILE or standard input), not of the prompt's lines.")
        }
        let shell = Shell(opened: try await bucket.open(json: json), json: json, historyPath: BucketLocation.historyPath())
        shell.interpreter.options.dryRun = dryRun
        shell.interpreter.options.summaryOnly = summary
        shell.interpreter.options.keepGoing = keepGoing
        try shell.enforceRules()
        apply.configure(shell.interpreter, source: "the prompt", json: json)
        throw ExitCode(await shell.run())
    }
}

/// `--json`, which every command that prints takes.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print each result as one JSON document per line (NDJSON), and errors as JSON.")
    var json = false
}

/// `--dry-run` and `--summary`, for a script however it is given (`-c`, standard input, `run FILE`) and for the
/// prompt. One group that the root command and `run` both declare, so that each reads its own.
struct PlanOptions: ParsableArguments {
    @Flag(help: "Run without saving anything, and print the plan: each object, each property old → new.")
    var dryRun = false

    @Flag(help: "A bulk change prints its summary by change (property: old → new: N objects), not each object.")
    var summary = false

    @Flag(help: "Report each failing command and keep the changes of those that succeeded (exit 1 if any failed).")
    var keepGoing = false

    @Option(
        help: ArgumentHelp(
            "With --dry-run: keep the plan in this file, to review and apply later as it is (storesh apply FILE); an object changed meanwhile is refused.",
            valueName: "file"))
    var plan: String?

    func validate() throws { try Self.check(plan: plan, dryRun: dryRun) }

    /// What the declaration cannot say: `--plan` needs `--dry-run`, and a file name.
    static func check(plan: String?, dryRun: Bool) throws {
        if plan != nil && !dryRun {
            throw ValidationError("--plan keeps the plan of a dry run: add --dry-run (storesh --dry-run --plan FILE -c '…'), then storesh apply FILE.")
        }
        if plan?.isEmpty == true { throw ValidationError("--plan needs a file name.") }
    }

    /// `--plan` is for a script's run: refused by the commands that have plans of their own (undo, copy).
    func refusePlan(_ command: String) throws {
        if plan != nil { throw CommandLineError("--plan keeps the plan of a script; \(command) --dry-run prints its plan, which is applied by running \(command) without --dry-run.") }
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a .store script: all of it lands, or (when a command fails) none of it.",
        discussion: """
            The script is parsed whole first: a syntax error anywhere runs nothing (exit 2). A script file may \
            start with #!/usr/bin/env -S storesh run.
            """)

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The script; - for standard input.", valueName: "file"))
    var file: String?

    @Option(
        help: ArgumentHelp(
            "Finish a run on a real bucket that was interrupted, from its journal: the changes not applied yet are sent, none twice.",
            valueName: "journal"))
    var resume: String?

    @OptionGroup var planOptions: PlanOptions

    @Flag(help: "Run nothing: explain each command, with the Firebase SDK call, the REST requests and the rules method it stands for.")
    var explain = false


    @Flag(help: "Print each command, after the prompt the shell would show, before its output: a lesson's script as its own transcript.")
    var echo = false

    @Option(
        help: ArgumentHelp(
            "Save a snapshot of the bucket under this name just before the script's first command (in the same transaction).",
            valueName: "name"))
    var snapshot: String?

    func validate() throws {
        if let snapshot {
            do {
                try SnapshotInfo.validate(name: snapshot)
            } catch {
                throw ValidationError("--snapshot: \(error.message)")
            }
        }
    }

    func run() async throws {
        if CommandLine.arguments.contains("-c") {
            throw CommandLineError("-c TEXT and run FILE each give the script; use one of them.")
        }
        if let resume {
            try planOptions.refusePlan("run --resume")
            guard file == nil else { throw CommandLineError("run --resume JOURNAL finishes the journal's own plan; give no script with it.") }
            throw ExitCode(try await resumeRun(resume))
        }
        guard let file else { throw CommandLineError("run needs a script file: storesh run FILE (or storesh run --resume JOURNAL).") }
        let source = try decodeScript(name: file, bytes: try readInputFile(file), json: outputOptions.json)
        var options = RunOptions(json: outputOptions.json, dryRun: planOptions.dryRun, keepGoing: planOptions.keepGoing)
        options.snapshotBefore = snapshot
        options.explainOnly = explain
        options.summaryOnly = planOptions.summary
        options.echo = echo
        if explain { try planOptions.refusePlan("run --explain") }
        throw ExitCode(
            try await runScript(source, options: options, applyOptions: applyOptions, keepingPlanIn: planOptions.plan) {
                let opened = try await bucketOptions.open(json: outputOptions.json)
                // A taken name, or a bucket without snapshots (rule B3), is a mistake in the command line: say so
                // before anything runs.
                if let snapshot {
                    guard let store = opened.bucket.snapshotStore else {
                        throw CommandLineError("--snapshot \(snapshot): \(opened.bucket.url) keeps no snapshots.")
                    }
                    if try await store.snapshots().contains(where: { $0.name == snapshot }) {
                        throw CommandLineError(
                            "--snapshot \(snapshot): the bucket has a snapshot of that name already; choose another name, or remove it with storesh -c 'snapshot rm \(snapshot)'.")
                    }
                }
                return opened
            })
    }
}

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Verify a bucket file and report what was found (exit 0 sound, 1 damaged or unreadable).",
        discussion: """
            Checks SQLite's structure of the file, every stored row against its checksum, every object's \
            content (and every version kept for snapshots) against its MD5, and the links between them. \
            It only reads: a damaged file is never changed.
            """)

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions

    func run() async throws {
        let location = try bucketOptions.location().path
        // A bucket that cannot be opened is for Diagnostics to say (as JSON with --json, exit 1).
        let bucket = try bucketOptions.openExisting(json: outputOptions.json)
        let report = try bucket.verify()
        // Rules that cannot be used (kept before storesh bounded them) leave every rules-decided request denied:
        // said here, since only `rules load` or `rules reset` mends them. Read as every session reads them.
        let rulesProblem = report.isSound
            ? (try? RulesSession(store: bucket).problem).map { "the stored security rules cannot be used: \($0)" } : nil
        if outputOptions.json {
            let document = JSONValue.object([
                ("bucket", .string(location)), ("sound", .bool(report.isSound)), ("objects", .integer(Int64(report.objects))),
                ("snapshots", .integer(Int64(report.snapshots))), ("keptVersions", .integer(Int64(report.keptVersions))),
                ("contentBytes", .integer(report.contentBytes)),
                ("problems", .array(report.problems.map { .string($0) })), ("unlistedProblems", .integer(Int64(report.unlistedProblems))),
                ("rulesProblem", rulesProblem.map(JSONValue.string) ?? .null),
                ("nameNotes", .array(report.nameNotes.map { .string($0) })),
            ])
            print(document.serialized)
        } else {
            let counts =
                "\(MessageText.counted(report.objects, "object")), \(MessageText.counted(report.snapshots, "snapshot")), \(MessageText.counted(report.keptVersions, "version")) kept for snapshots, \(MessageText.grouped(Int(report.contentBytes))) bytes of content checked"
            if report.isSound, let rulesProblem {
                print("\(location): RULES UNUSABLE (\(counts))\n  - \(rulesProblem)")
                print("Every request the rules would decide is denied. Replace them: storesh --bucket \(location) -c 'rules reset' (or rules load FILE).")
            } else if report.isSound {
                print("\(location): sound (\(counts))")
            } else {
                var lines = ["\(location): DAMAGED (\(counts))"] + report.problems.map { "  - " + $0 }
                if report.unlistedProblems > 0 { lines.append("  … and \(report.unlistedProblems) more") }
                lines.append("storesh will not write to it: restore a copy (storesh backup --bucket COPY \(location)), or export what can still be read.")
                print(lines.joined(separator: "\n"))
            }
            if !report.nameNotes.isEmpty {
                print((["Names that Cloud Storage refuses or advises against (rule P7):"] + report.nameNotes.map { "  - " + $0 }).joined(separator: "\n"))
            }
        }
        throw ExitCode(report.isSound && rulesProblem == nil ? 0 : 1)
    }
}

struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Write a consistent copy of a bucket file (objects, snapshots and rules), even while it is in use.",
        discussion: """
            SQLite itself makes the copy, from one state of the bucket, while shells, scripts or servers may go on \
            writing to it. The copy is built beside FILE and renamed into place: FILE is the old file or the whole \
            copy. An existing FILE must be a storesh bucket that nothing has open. To restore a copy, back it up \
            over the bucket: storesh backup --bucket copy.bucket my.bucket. (Copying a bucket file with cp is safe \
            only when no storesh has it open.)
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Argument(help: ArgumentHelp("Where to write the copy.", valueName: "file"))
    var file: String

    func run() async throws {
        let bucket = try bucketOptions.openExisting()
        try bucket.backup(to: file)
        Diagnostics.notice("backed up gs://\(bucket.name) (\(MessageText.counted(try bucket.objectCount(), "object"))) from \(bucket.path) to \(file)")
    }
}

/// The layouts `storesh export` writes and `storesh import` reads.
enum ArchiveFormat: String, ExpressibleByArgument, CaseIterable {
    /// storesh's own archive: one JSON file, one object per line.
    case json
    /// The Firebase Storage emulator's export directory (firebase-tools' `--import DIR`, `--export-on-exit DIR`).
    case firebase
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the whole bucket, metadata and content, as readable JSON or as a Firebase emulator export.",
        discussion: """
            json (the default): one object per line, in name order; the file is written whole or not at all.             firebase: a directory as `firebase emulators:export` writes it (firebase-export-metadata.json,             storage_export/ with buckets.json, blobs/ and metadata/), for `firebase emulators:start --import DIR`;             only storage_export/ and the storage entry of firebase-export-metadata.json are written (rule V9): the             other emulators' exports and any other file in the directory are left as they are.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp("json, or firebase for the Firebase emulator's export directory.", valueName: "format"))
    var format = ArchiveFormat.json

    @Argument(help: ArgumentHelp("Where to write; - or nothing for standard output (json only).", valueName: "file"))
    var file: String?

    func validate() throws {
        if format == .firebase, file == nil || file == "-" {
            throw ValidationError("--format firebase writes a directory: give it, e.g. storesh export --format firebase ./emulator-data")
        }
    }

    func run() async throws {
        let bucket = try bucketOptions.openLocal()
        if format == .firebase, let file {
            try FirebaseEmulatorExport.write(bucket, to: file)
            Diagnostics.line(
                "exported \(MessageText.counted(try bucket.objectCount(), "object")) of gs://\(bucket.name) to \(file) (firebase emulators:start --only storage --import \(file) reads it)")
            return
        }
        guard let file, file != "-" else {
            let output = CheckedOutput(descriptor: STDOUT_FILENO, name: "standard output")
            try BucketArchive.export(bucket) { try output.write($0) }
            try output.flush()
            return
        }
        try writeFileAtomically(file) { output in try BucketArchive.export(bucket) { try output.write($0) } }
        Diagnostics.line("exported \(MessageText.counted(try bucket.objectCount(), "object")) to \(file)")
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Add the objects of a JSON archive, or of a Firebase emulator export, to the bucket, all of them or none.",
        discussion: """
            Objects already in the bucket with the same names are replaced; with --replace, the bucket holds             exactly the archive's objects afterwards. The archive is checked whole before anything is written.             --format firebase reads a directory that `firebase emulators:export` (or --export-on-exit) wrote:             contents, metadata, custom metadata, download tokens, generations and times.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Option(help: ArgumentHelp("json, or firebase for the Firebase emulator's export directory.", valueName: "format"))
    var format = ArchiveFormat.json

    @Argument(help: ArgumentHelp("The archive to read (- for standard input), or with --format firebase the export's directory.", valueName: "file"))
    var file: String

    @Flag(help: "Remove every object that is not in the archive.")
    var replace = false

    func run() async throws {
        if format == .firebase {
            let contents = try FirebaseEmulatorExport.read(directory: file)
            // A new bucket file is named after the export's bucket, as the emulator served it.
            let bucket = try bucketOptions.openLocal(nameForNewBucket: FirebaseExportImport.bucketName(of: contents))
            let (objects, from) = try FirebaseExportImport.objects(of: contents, for: bucket.name, directory: file)
            try FirebaseExportImport.load(objects, into: bucket, replacingEverything: replace)
            Diagnostics.line(FirebaseExportImport.summary(count: objects.count, from: from, into: bucket.name, replace: replace))
            return
        }
        let archive = try BucketArchive.parse(try readInputFile(file), source: file)
        let bucket = try bucketOptions.openLocal()
        try bucket.importObjects(archive.objects, replacingEverything: replace)
        let objects = MessageText.counted(archive.objects.count, "object")
        let summary =
            replace ? "gs://\(bucket.name) now holds exactly the archive's \(objects)" : "imported \(objects) into gs://\(bucket.name)"
        Diagnostics.line(summary)
    }
}

/// Which of an emulator export's objects go into a local bucket (it holds one bucket; an export may list several).
enum FirebaseExportImport {
    /// The objects of the export's bucket named as the local one; or, when there is no such bucket and the export
    /// holds one bucket's objects only, those (the emulator's default bucket, imported under the local name).
    static func objects(of contents: FirebaseEmulatorExport.Contents, for bucket: String, directory: String) throws
        -> (objects: [FirebaseEmulatorExport.Entry], from: String)
    {
        let named = Set(contents.objects.map(\.bucket))
        if named.contains(bucket) || named.isEmpty { return (contents.objects.filter { $0.bucket == bucket }, bucket) }
        if named.count == 1, let only = named.first { return (contents.objects, only) }
        throw CommandLineError(
            "\(directory) holds objects of \(named.sorted().map { "gs://\($0)" }.joined(separator: ", ")), none of gs://\(bucket): import it into a bucket named as one of them (storesh import --bucket NEW.bucket … names a new bucket after none, so give serve --name).")
    }

    /// Imports the export's objects in one transaction, reading each one's content in its turn.
    static func load(_ objects: [FirebaseEmulatorExport.Entry], into bucket: LocalBucket, replacingEverything: Bool) throws {
        try bucket.importObjects(count: objects.count, replacingEverything: replacingEverything) { index throws(StorageError) in
            try objects[index].withContentSource()
        }
    }

    /// The bucket an export is of, when it is of one: the one its objects name, else the one it lists.
    static func bucketName(of contents: FirebaseEmulatorExport.Contents) -> String? {
        let named = Set(contents.objects.map(\.bucket))
        return named.count == 1 ? named.first : named.isEmpty && contents.buckets.count == 1 ? contents.buckets.first : nil
    }

    /// The bucket `storesh serve --import` serves first: the export's only one, else the first its bucket list names
    /// (then the first its objects name).
    static func firstBucket(of contents: FirebaseEmulatorExport.Contents) -> String? {
        bucketName(of: contents) ?? contents.buckets.first ?? contents.objects.map(\.bucket).min { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    /// Puts each bucket of the export in the bucket file `storesh serve` serves it from (rule V6): the export's
    /// bucket named as `first` (or, when the export holds one bucket, that one) into `first`, every other into
    /// `NAME.bucket` in `others`, made if missing; each as `serve(_:from:directory:in:replace:)` decides. Returns
    /// what was done, a sentence per bucket.
    static func serve(
        _ contents: FirebaseEmulatorExport.Contents, directory: String, first: LocalBucket, others: String, clock: any StorageClock,
        replace: Bool
    ) throws -> [String] {
        var names = contents.buckets
        for object in contents.objects where !names.contains(object.bucket) { names.append(object.bucket) }
        if names.count <= 1 || !names.contains(first.name) && bucketName(of: contents) != nil {
            let (objects, from) = try objects(of: contents, for: first.name, directory: directory)
            return [try serve(objects, from: from, directory: directory, in: first, replace: replace)]
        }
        var summaries: [String] = []
        for name in names {
            let objects = contents.objects.filter { $0.bucket == name }
            if name == first.name {
                summaries.append(try serve(objects, from: name, directory: directory, in: first, replace: replace))
                continue
            }
            let path = (others as NSString).appendingPathComponent(name + ".bucket")
            var options = BucketLocation.options(clock: clock)
            options.nameForNewBucket = name
            let bucket = try LocalBucket.open(at: path, options: options)
            defer { bucket.close() }
            guard bucket.name == name else {
                throw CommandLineError(
                    "\(path) holds gs://\(bucket.name), not gs://\(name) of \(directory); move it away (or give --buckets another directory). Nothing more was imported.")
            }
            summaries.append(try serve(objects, from: name, directory: directory, in: bucket, replace: replace))
        }
        return summaries
    }

    /// Where `storesh serve --import` keeps an export's bucket when no --bucket names a file: a bucket file of its
    /// own, named after the bucket, in the data directory's `imports` folder.
    static func ownLocation(forBucket bucket: String) throws -> BucketLocation {
        let folder = BucketLocation.defaultDataDirectory(environment: Environment()) + "/imports"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return BucketLocation(kind: .file(path: folder + "/" + bucket + ".bucket"), isDefault: false)
    }

    /// Puts the export's objects in the bucket `storesh serve` serves, and says what it did. A bucket that holds
    /// nothing takes them; one that holds exactly them (the same names, generations, metagenerations and MD5s: an
    /// earlier serve of this export, exported on exit) is served as it is; one that holds anything else is not
    /// replaced unless `replace` (rule V9).
    static func serve(
        _ objects: [FirebaseEmulatorExport.Entry], from: String, directory: String, in bucket: LocalBucket, replace: Bool
    ) throws -> String {
        let held = try bucket.objectCount()
        if held == 0 || replace {
            try load(objects, into: bucket, replacingEverything: true)
            return summary(count: objects.count, from: from, into: bucket.name, replace: true) + " from \(directory)"
        }
        if try holdsExactly(objects, bucket) {
            return "gs://\(bucket.name) (\(bucket.path)) already holds the \(MessageText.counted(objects.count, "object")) of \(directory); served as they are"
        }
        throw CommandLineError(
            "\(bucket.path) already holds \(MessageText.counted(held, "object")) of gs://\(bucket.name) that are not the export's; storesh will not replace them. Give --replace to serve exactly the export's objects (the file's are then gone; storesh backup keeps a copy first), or --bucket NEW.bucket to serve the export from a new file.")
    }

    /// Whether `bucket` holds exactly `objects`: the same names (as bytes), generations, metagenerations and content.
    static func holdsExactly(_ objects: [FirebaseEmulatorExport.Entry], _ bucket: LocalBucket) throws -> Bool {
        var expected = objects.makeIterator()
        var after: String?
        repeat {
            let page = try bucket.scanPage(prefix: "", after: after, limit: 1000)
            for held in page.objects {
                guard let entry = expected.next(), NameBytes.sameBytes(entry.object.name.rawValue, held.fullPath),
                    entry.object.generation == held.generation, entry.object.metageneration.map({ $0 == held.metageneration }) ?? true,
                    entry.md5 == held.md5Hash
                else { return false }
            }
            after = page.resumeAfter
        } while after != nil
        return expected.next() == nil
    }

    static func summary(count: Int, from: String, into bucket: String, replace: Bool) -> String {
        let objects = MessageText.counted(count, "object")
        let source = from == bucket ? "" : " (gs://\(from) in the export)"
        return replace ? "gs://\(bucket) now holds exactly the export's \(objects)\(source)" : "imported \(objects)\(source) into gs://\(bucket)"
    }
}
