import Foundation
import StoreshCore
import StoreshExecution

/// Where a session's results and errors go.
package protocol SessionOutput: AnyObject {
    /// One line of results for standard output (no trailing newline).
    func result(_ line: String)
    /// Raw content for standard output (`cat`).
    func resultBytes(_ bytes: Data)
    /// An error, for standard error.
    func error(_ diagnostic: Diagnostic)
    /// A remark about the run as a whole (what was saved), for standard error.
    func notice(_ text: String)
}

/// Content printed as it arrives: each piece to the session's output, in order.
final class ResultBytesSink: ContentSink, @unchecked Sendable {
    private let output: SessionOutput

    init(_ output: SessionOutput) { self.output = output }

    func write(_ bytes: Data) throws { output.resultBytes(bytes) }
}

/// The local files that `put` reads and `get` writes; the command-line layer gives the real ones.
package protocol LocalFiles: Sendable {
    func read(_ path: String) throws(StorageError) -> Data
    /// A document storesh reads whole (a rules file): a regular file only (a pipe, a FIFO or a device is refused,
    /// never waited on or read without end), of bounded size.
    func readDocument(_ path: String) throws(StorageError) -> Data
    /// Writes the whole file or, on failure, leaves nothing.
    func write(_ data: Data, to path: String) throws(StorageError)
    /// Whether the path is an existing directory (`get OBJECT DIR` saves into it).
    func isDirectory(_ path: String) -> Bool
    /// A large regular file as content read a piece at a time (`put` never holds it whole); nil for a small file,
    /// a pipe or a device, which are read whole.
    func source(_ path: String) throws(StorageError) -> (any ContentSource)?
    /// A file written a piece at a time (`get` of a large object), whole or not at all.
    func sink(writingTo path: String) throws(StorageError) -> any FileSink
}

/// A file being written a piece at a time: it appears at its path only when committed.
package protocol FileSink: ContentSink {
    func commit() throws(StorageError)
    /// Leaves nothing behind.
    func discard()
}

extension LocalFiles {
    package func source(_ path: String) throws(StorageError) -> (any ContentSource)? { nil }

    package func sink(writingTo path: String) throws(StorageError) -> any FileSink {
        WholeFileSink(files: self, path: path)
    }
}

/// A sink that gathers the content and writes the file whole at the end.
final class WholeFileSink: FileSink, @unchecked Sendable {
    let files: any LocalFiles
    let path: String
    private var data = Data()

    init(files: any LocalFiles, path: String) {
        self.files = files
        self.path = path
    }

    func write(_ bytes: Data) throws { data += bytes }
    func commit() throws(StorageError) { try files.write(data, to: path) }
    func discard() { data = Data() }
}

/// How a script runs (contract, Invocation and Scripts).
package struct RunOptions: Sendable {
    /// Print one JSON document per result (NDJSON) and errors as JSON.
    package var json: Bool
    /// Run without saving anything, and print the plan.
    package var dryRun: Bool
    /// Report each failure and keep the changes of the commands that succeeded.
    package var keepGoing: Bool
    /// Colour in human output (prefixes); only on a terminal, never with NO_COLOR.
    package var color: Bool
    /// The page size of `ls` without `-n`: at the prompt, a screenful, so that a listing never floods the
    /// screen without saying how to see more; nil is the contract's 1000.
    package var defaultPageSize: Int?
    /// The terminal's width in cells when results go to one (sentences are wrapped to it); nil otherwise.
    package var terminalWidth: Int?
    /// `run --snapshot NAME`: save a snapshot first, inside the script's transaction.
    package var snapshotBefore: String?
    /// Lines typed at the prompt, not a script: messages speak of the line.
    package var atPrompt = false
    /// On a bucket without transactions: how many planned changes are sent at once (rule X2).
    package var parallel = ApplySettings.defaultParallel
    /// On a bucket that takes batches: the most changes sent in one request (rule Q2); 1 sends each alone.
    package var batchSize = ApplySettings.defaultBatchSize
    /// `run --explain`: each command is explained (SDK call, REST requests, rules method), none is run.
    package var explainOnly = false
    /// `--summary`: bulk changes print their summary by change, not each object.
    package var summaryOnly = false
    /// `run --echo`: each command is printed, after a prompt of the current reference, before its output, so
    /// that a lesson's script is its own transcript.
    package var echo = false

    /// Whether results print a line or a few for each object on a terminal (not `--summary`, not JSON, not a
    /// file): they are then their own progress, and no progress line is drawn among them.
    var printsEachObjectOnTerminal: Bool { terminalWidth != nil && !summaryOnly && !json }

    package init(
        json: Bool = false, dryRun: Bool = false, keepGoing: Bool = false, color: Bool = false,
        defaultPageSize: Int? = nil
    ) {
        self.json = json
        self.dryRun = dryRun
        self.keepGoing = keepGoing
        self.color = color
        self.defaultPageSize = defaultPageSize
    }
}

/// A session of the language on a bucket: what the commands run against (`LanguageCommand.run(in:at:)`), the one path
/// from statements to bucket that scripts, the shell and the command line share.
///
/// It holds the session's state: the bucket and the one commands work on now (a transaction, a plan, the rules
/// around it), the current reference, the last paginated listing for `page next`, the rules and who is signed in,
/// the run's options and where results go.
package final class Session {
    /// The session's bucket, as opened: no rules, no transaction.
    package let bucket: any Bucket
    package internal(set) var current: StoragePath = .root
    package var options: RunOptions
    /// Checked between commands and between the objects of a bulk command; true stops the run (Ctrl-C).
    package var isCancelled: @Sendable () -> Bool = { false }
    /// The session's security rules, for `rules`, `login`, `logout` and `whoami`; they decide every request
    /// the commands make.
    package var rules: RulesControl? {
        didSet { target = guarded(bucket) }
    }
    /// Where planned changes get their times (the bucket's clock, so a dry run shows what the run would make).
    let clock: any StorageClock
    /// The bucket commands work on: the session's bucket, or during a script its transaction or its plan, with
    /// the session's rules around it.
    var target: any Bucket

    /// Where results, errors and notices go; while a script is planned on a bucket without transactions, its
    /// results are held there until the plan has landed (`HeldResults`).
    package internal(set) var output: SessionOutput
    let files: LocalFiles
    /// The bucket as messages about what landed name it: a local bucket file by its path (its `gs://NAME` is
    /// the name inside the file, not where the changes went), a real bucket by its URL.
    package lazy var bucketLocation: String = bucket.url
    /// Where long commands say how far they have come (a progress line on a terminal); nil says nothing.
    package var progress: ProgressMeter?
    /// How a plan is applied to a bucket without transactions: its journal and its progress line (rules X2, X4).
    package var applySettings = ApplySettings()
    /// Whether an `exit` ran in the last script (the shell leaves only then).
    package internal(set) var exitRan = false
    /// Objects the current run reported as updated, written or deleted (not in a dry run).
    var reportedChanges = 0
    /// The plan the script being run is made into, when it is (a dry run, or a bucket without transactions): its
    /// `login` and `logout` are the plan's, not the bucket's.
    var planned: PlannedBucket?
    var lastListing: (reference: StoragePath, maxResults: Int?, long: Bool, nextPageToken: String?)?

    /// How many objects a pattern scan reads at a time.
    static let scanPageSize = 1000

    package init(
        bucket: any Bucket, output: SessionOutput, files: LocalFiles, options: RunOptions = RunOptions(),
        clock: any StorageClock = SystemClock()
    ) {
        self.bucket = bucket
        self.target = bucket
        self.output = output
        self.files = files
        self.options = options
        self.clock = clock
    }

    /// `base` with the session's rules deciding every request made through it.
    func guarded(_ base: any Bucket) -> any Bucket { rules?.guarding(base) ?? base }

    /// The exit status of a run (contract, Exit status).
    package enum Status: Int32, Sendable {
        case success = 0
        case failed = 1
        case usage = 2
        case interrupted = 130
    }

    static let interruption = StorageError(.cancelled, "Interrupted; nothing of this run was saved.")

    /// Reports an error from running a command, located at the command unless it carries its own place.
    @discardableResult
    func report(_ error: Error, at location: SourceLocation) -> Diagnostic {
        let diagnostic: Diagnostic
        switch error {
        case let located as Diagnostic: diagnostic = located
        case let storage as StorageError: diagnostic = .running(storage, at: location)
        default: diagnostic = .running(.internalError("\(error)"), at: location)
        }
        output.error(diagnostic)
        return diagnostic
    }

    /// The bucket's generations (rules B5, B6), or why this bucket gives none here.
    func generations(at here: SourceLocation) throws -> any ObjectVersions {
        if let versions = target.objectVersions { return versions }
        let why: String
        switch target.scheme {
        case "s3": why = "this bucket gives none"
        default:
            why =
                target.accessDescription == nil
                ? "a bucket file's generations are its administrator's, reached with the open rules (these rules name objects, not generations: rules show)"
                : "the Firebase Storage API names no generations (a gs:// bucket reached with Cloud Storage credentials does)"
        }
        throw Diagnostic.running(
            .invalidArgument("\(target.url) gives no generations here (rule B5): \(why)."), at: here)
    }

    /// The generation `word` names in `versions`' bucket, or why it names none there (its generations are numbers).
    func generation(_ word: GenerationWord, in versions: any ObjectVersions) throws -> ObjectGeneration {
        guard let generation = versions.generation(named: word.generation) else {
            throw Diagnostic.running(
                .invalidArgument(
                    "'\(word.word.text)' names no generation: \(target.url) numbers its generations, so the part after the # is a whole number (ls -a and ls --soft-deleted list them)."
                ),
                at: word.word.location)
        }
        return generation
    }

    /// The bucket's moves (`mv`), or why this bucket has none.
    func objectMoves(at here: SourceLocation) throws -> any ObjectMoves {
        if let moves = target.objectMoves { return moves }
        throw Diagnostic.running(
            .invalidArgument(
                "\(target.url) moves no objects here: the Firebase Storage API has no move (a gs:// bucket reached with Cloud Storage credentials has objects.move)."
            ),
            at: here)
    }

    /// What a plan of `count` deletes says of undoing them (rules B5, B6): how the bucket keeps deleted objects, as
    /// its settings say now.
    func deletionsNote(count: Int) async -> String {
        let url = bucket.url
        guard let versions = bucket.objectVersions else {
            return
                "storesh cannot undo \(count == 1 ? "this delete" : "these deletes"): it restores no deleted object on \(url) (its API gives none back), and a journal keeps only metadata"
        }
        let keeping: DeletionKeeping
        do {
            keeping = try await versions.deletionsKept()
        } catch {
            keeping = .unknown((error as? StorageError)?.message ?? "\(error)")
        }
        return keeping.planNote(count: count, bucket: url)
    }

    /// Prints a result: for people, or as JSON with `--json`.
    func deliver(_ result: CommandResult) {
        if !options.dryRun {
            // What the run has reported as changed so far: undone, and then said so, if the run fails. (Bulk
            // commands count their objects as `BulkResults` prints them.)
            switch result {
            case .written, .restored, .moved: reportedChanges += 1
            // The rules in force and the snapshots are part of the bucket: undone with the rest.
            case .rulesLoaded, .rulesReset, .snapshotSaved, .snapshotRemoved: reportedChanges += 1
            case .bucketSettingsChanged(_, let differences, _) where !differences.isEmpty: reportedChanges += 1
            default: break
            }
        }
        let renderer: any ResultRenderer =
            options.json
            ? JSONRenderer()
            : HumanRenderer(
                color: options.color, screenfulPages: options.defaultPageSize != nil, width: options.terminalWidth)
        renderer.render(result, to: output)
    }

    package enum Flow: Sendable, Equatable {
        case next
        case exit
    }

    /// An object's content as a result (`cat`): printed as it arrives, a piece at a time, so that a large object
    /// is never held whole; with `--json`, one document that holds it whole (its text, or its base64).
    func deliverContent(of object: ObjectName) async throws {
        guard !options.json else {
            deliver(.content(object: object.rawValue, try await target.read(object)))
            return
        }
        _ = try await target.read(object, into: ResultBytesSink(output))
    }

    /// Runs one command. Storage errors come back as diagnostics located at the word they concern.
    package func execute(_ statement: Statement) async throws -> Flow {
        if options.echo && !statement.text.isEmpty {
            deliver(.command(statement.text, prompt: current.url(bucket: target.name, scheme: target.scheme)))
        }
        if options.dryRun && statement.command.changesBucket {
            deliver(.planHeader(line: statement.location.line, command: statement.command.header))
        }
        return try await statement.command.run(in: self, at: statement.location)
    }

    /// The listing `page next` continues and the token it sends; an error when there is none (`explain page next`
    /// says the same).
    func continuedListing(
        at here: SourceLocation
    ) throws -> (reference: StoragePath, maxResults: Int?, long: Bool, token: String) {
        guard let last = lastListing else {
            throw Diagnostic.running(
                .invalidArgument("There is no listing to continue: `page next` follows an ls."), at: here)
        }
        guard let token = last.nextPageToken else {
            throw Diagnostic.running(
                .invalidArgument(
                    "The last listing of \(last.reference.url(bucket: target.name, scheme: target.scheme)) has no more pages."
                ), at: here)
        }
        return (last.reference, last.maxResults, last.long, token)
    }

    /// A page as a result: with `-l`, each item's metadata (from the page, or asked per item of a bucket whose
    /// pages carry none); for an empty page, whether the reference is an object.
    func deliverPage(_ page: ListPage, of reference: StoragePath, long: Bool, at here: SourceLocation) async throws {
        var metadata = page.itemMetadata ?? []
        if long && page.itemMetadata == nil {
            for item in page.items {
                let name = try located(here) { try ObjectName(item) }
                metadata.append(try await located(here) { try await self.target.metadata(of: name) })
            }
        }
        var referenceIsObject = false
        var suggestion: String?
        var hidden: String?
        if page.prefixes.isEmpty && page.items.isEmpty, let name = try? reference.objectName() {
            // The hint's request is not the user's: `rules why` keeps explaining the listing.
            rules?.recordsDecisions = false
            defer { rules?.recordsDecisions = true }
            referenceIsObject = (try? await target.metadata(of: name)) != nil
            if !referenceIsObject {
                hidden = await hiddenName(under: reference)
                if hidden == nil { suggestion = await nearestSibling(of: reference, items: false) }
            }
        }
        deliver(
            .listing(
                ListingResult(
                    // Rule G7: download tokens are credentials of a kind; a listing never shows them (meta get --raw does).
                    page: page, reference: reference, bucket: target.name, scheme: target.scheme, long: long,
                    metadata: metadata.map(\.withoutDownloadTokens),
                    referenceIsObject: referenceIsObject, suggestion: suggestion, hiddenName: hidden)))
    }

    /// After `cd`: a reference need not exist, but a class (or a typo) deserves to hear that nothing is there, and
    /// which folder beside it was likely meant. Nil when something is there (or the rules hide it). The reads are
    /// hints, not the user's requests.
    func emptyReferenceNote(_ reference: StoragePath) async -> String? {
        rules?.recordsDecisions = false
        defer { rules?.recordsDecisions = true }
        guard let page = try? await target.list(reference, options: ListOptions(maxResults: 1)), page.prefixes.isEmpty,
            page.items.isEmpty
        else { return nil }
        let url = reference.url(bucket: target.name, scheme: target.scheme)
        if let name = try? reference.objectName(), (try? await target.metadata(of: name)) != nil {
            return "(\(url) is an object, not a folder: nothing is under it)"
        }
        if let hidden = await hiddenName(under: reference) {
            return "(nothing under \(url) that a listing shows: \(MessageText.hiddenName(hidden)))"
        }
        var note = "(nothing under \(url) yet"
        if let near = await nearestSibling(of: reference, items: false) { note += "; did you mean \(near)?" }
        return note + ")"
    }
}
