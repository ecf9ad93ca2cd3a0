import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import StoreshLocal
import StoreshRules
import Synchronization

/// What one run of the command line was asked, as plain values, whichever parser read them (argument-parser's
/// option groups, `init(bucket:output:apply:plan:)`, or the everyday root parse); and the one place where a run
/// opens its bucket (`open`) and assembles its session of the language (`session`), for the prompt, scripts,
/// `apply`, `undo`, `run --resume` and `copy` alike.
struct RunContext: Equatable {
    // --bucket, --clock, --quiet, --trace
    var bucket: String?
    var clock: String?
    var quiet = false
    var trace = false
    // --json
    var json = false
    // --parallel, --rate, --batch, --journal
    var parallel: Int?
    var rate: Int?
    var batch: Int?
    var journal: String?
    // --dry-run, --summary, --keep-going, --plan
    var dryRun = false
    var summary = false
    var keepGoing = false
    var plan: String?

    init() {}

    /// The values of the groups a subcommand declares; a group it does not declare keeps its defaults.
    init(
        bucket: BucketOptions? = nil, output: OutputOptions? = nil, apply: ApplyOptions? = nil, plan: PlanOptions? = nil
    ) {
        if let bucket { (self.bucket, clock, quiet, trace) = (bucket.bucket, bucket.clock, bucket.quiet, bucket.trace) }
        json = output?.json ?? false
        if let apply { (parallel, rate, batch, journal) = (apply.parallel, apply.rate, apply.batch, apply.journal) }
        if let plan { (dryRun, summary, keepGoing, self.plan) = (plan.dryRun, plan.summary, plan.keepGoing, plan.plan) }
    }

    /// `--plan` is for a script's run: refused by the commands that have plans of their own (apply, undo, copy).
    func refusePlan(_ command: String) throws {
        if plan != nil {
            throw UsageError(
                "--plan keeps the plan of a script; \(command) --dry-run prints its plan, which is applied by running \(command) without --dry-run."
            )
        }
    }

    /// Whether the run says nothing about which bucket it uses: `--quiet`, or `--json` (standard error then holds
    /// JSON only).
    var silent: Bool { quiet || json }

    /// `--clock`, else `$STORESH_CLOCK`, else the real clock.
    func makeClock() throws(UsageError) -> any StorageClock { try storesh.makeClock(flag: clock) }

    // MARK: Opening the bucket

    /// Where `--bucket` says the bucket is: a usage error (exit 2) for an empty or unknown location, before
    /// anything opens.
    func location() throws -> BucketLocation {
        if bucket?.isEmpty == true { throw UsageError("--bucket needs a bucket: \(BucketLocation.forms).") }
        return try BucketLocation.resolve(flag: bucket)
    }

    /// Opens the run's bucket (`--bucket`), whatever its kind (rule B1), creating a local one when missing.
    func open() async throws -> OpenedBucket { try await open(try location()) }

    /// Opens the bucket at `location` for a session, whatever its kind (rule B1), creating a local one when missing
    /// (named `nameForNewBucket`, else after its file), with `clock` (default: the run's) for its changes and for the
    /// session's rules.
    func open(
        _ location: BucketLocation, clock given: (any StorageClock)? = nil, nameForNewBucket: String? = nil
    ) async throws
        -> OpenedBucket
    {
        let clock = try given ?? makeClock()
        if case .file(let path) = location.kind {
            let bucket = try location.open(clock: clock, quiet: silent, nameForNewBucket: nameForNewBucket)
            return OpenedBucket(bucket: OpenBuckets.shared.keep(bucket), clock: clock, given: path, isFile: true)
        }
        let bucket = try await location.openRemote(
            quiet: silent, trace: trace, pacing: (rate.map(Double.init), parallel ?? ApplySettings.defaultParallel))
        return OpenedBucket(
            bucket: OpenBuckets.shared.keep(bucket), clock: clock, given: location.displayed, isFile: false)
    }

    /// Opens a local bucket file, creating it when missing, for local-bucket features (archives): refused on a
    /// real bucket before anything runs (rule B3).
    /// `nameForNewBucket`: the name a bucket file this creates gets (default: the file's name).
    func openLocal(nameForNewBucket: String? = nil) throws -> LocalBucket {
        let location = try location()
        try location.refuseRemote(
            "export and import of whole archives work on local bucket files",
            instead: "Use a script of put and get for a real bucket's objects.")
        let bucket = try location.open(clock: try makeClock(), quiet: quiet, nameForNewBucket: nameForNewBucket)
        _ = OpenBuckets.shared.keep(bucket)
        return bucket
    }

    /// Opens a local bucket file that must exist already (a check or a backup never creates one): these are
    /// local-bucket features, refused on a real bucket before anything runs (rule B3).
    func openExisting() throws -> LocalBucket {
        let location = try location()
        try location.refuseRemote(
            "check and backup verify and copy local bucket files",
            instead: "Cloud Storage keeps a real bucket's integrity itself.")
        var options = BucketLocation.options(clock: try makeClock())
        options.createIfMissing = false
        let bucket = try LocalBucket.open(at: location.path, options: options)
        _ = OpenBuckets.shared.keep(bucket)
        if !silent { location.announce(bucket) }
        return bucket
    }

    // MARK: The session

    /// Where long work shows how far it has come: a line on standard error when it is a terminal; nil with
    /// `--quiet` or `--json`, or when standard error is not a terminal.
    var progressLine: ProgressLine? { !silent && isatty(STDERR_FILENO) != 0 ? ProgressLine() : nil }

    /// Counts long work outside a session (reading a journal, import, export, check) on `progressLine`.
    var progressMeter: ProgressMeter? {
        progressLine.map { line in ProgressMeter(show: { line.show($0) }, clear: { line.clear() }) }
    }

    /// The session of the language this run's commands and changes go through, on `opened`: the run's options
    /// (`--json`, `--dry-run`, `--summary`, `--keep-going`, `--parallel`, and `adjust` for what only the caller
    /// knows), the host's files, Ctrl-C, the bucket's security rules (`underRules`; copy is administration, as import
    /// is, and bypasses them), a journal for a plan applied to a real bucket (`--journal`, named after `journalSource`)
    /// with a progress line on a terminal, and `--plan`'s file for a dry run's plan.
    func session(
        on opened: OpenedBucket, output: ConsoleOutput, journalSource: String, underRules: Bool = true,
        adjust: (inout RunOptions) -> Void = { _ in }
    ) throws -> Session {
        if opened.isFile, let journal {
            // A journal would be promised and never written: a bucket file's run lands whole or not at all.
            throw UsageError(
                "--journal \(journal) keeps the journal of a run on a real bucket (gs://, s3://); a script on the bucket file \(opened.given) lands whole or not at all, and snapshot save and snapshot restore put a bucket file back. Nothing was run."
            )
        }
        var options = RunOptions(json: json, dryRun: dryRun, keepGoing: keepGoing)
        options.summaryOnly = summary
        options.parallel = parallel ?? ApplySettings.defaultParallel
        options.batchSize = batch ?? ApplySettings.defaultBatchSize
        // On a terminal, what people read wraps to its width between words (the prompt measures it again per line).
        let columns = storesh_terminal_columns(STDOUT_FILENO)
        if !json && columns > 0 { options.terminalWidth = Int(columns) }
        adjust(&options)
        let session = Session(
            bucket: opened.bucket, output: output, files: HostFiles(), options: options, clock: opened.clock)
        session.isCancelled = { storesh_interrupt_pending() != 0 }
        if opened.isFile { session.bucketLocation = "the bucket file \(opened.given)" }
        if underRules { session.rules = try rulesSession(for: opened) }
        let bucket = opened.bucket
        let journal = self.journal
        session.applySettings.openJournal = { plan in
            try JournalFile(
                creating: journal ?? JournalFile.defaultPath(bucket: bucket.name), bucket: bucket.url,
                source: journalSource, plan: plan, clock: SystemClock())
        }
        // Long work says how far it has come on a terminal (standard error), unless --quiet or --json.
        if let line = progressLine {
            session.applySettings.progress = { line.show(WorkProgress(applying: $0)) }
            session.applySettings.progressEnded = { line.clear() }
            session.progress = ProgressMeter(show: { line.show($0) }, clear: { line.clear() })
        }
        if let planPath = plan {
            let clock = opened.clock
            let location = opened.location
            session.applySettings.keepPlan = { plan in
                try JournalFile.keepPlan(plan, at: planPath, bucket: location, source: journalSource, clock: clock)
                return planPath
            }
        }
        return session
    }

    /// The security rules of a session: the bucket's own rules, deciding every request the session's commands
    /// make (export, import, check, backup and copy are administration and bypass them).
    private func rulesSession(for opened: OpenedBucket) throws -> RulesSession {
        let session = try RulesSession(store: opened.bucket.rulesStore, clock: opened.clock)
        if let problem = session.problem {
            Diagnostics.warning(
                "the bucket's security rules cannot be used (\(problem)); every request they would decide is denied until `rules load FILE` or `rules reset` replaces them"
            )
        }
        return session
    }
}

/// A session's bucket and the clock its changes and its rules' `request.time` share.
struct OpenedBucket {
    var bucket: any Bucket
    var clock: any StorageClock
    /// The bucket file as given, or a real bucket's URL.
    var given: String
    var isFile: Bool

    /// Where it is, as a kept plan names it: a local bucket file's absolute path, else its URL. Made when asked:
    /// Foundation's URL standardising was a measurable part of every cold run (issue 23).
    var location: String { isFile ? URL(fileURLWithPath: given).standardizedFileURL.path : given }
}

/// Every bucket this process opened, so that every way out of storesh closes them (`Storesh.leave`).
final class OpenBuckets: Sendable {
    static let shared = OpenBuckets()
    private let buckets = Mutex<[any Bucket]>([])

    func keep(_ bucket: any Bucket) -> any Bucket {
        buckets.withLock { $0.append(bucket) }
        return bucket
    }

    func closeAll() {
        for bucket in buckets.withLock({ $0 }) { bucket.close() }
    }
}
