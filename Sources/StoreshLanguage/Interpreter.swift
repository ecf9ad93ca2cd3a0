import Foundation
import StoreshCore
import StoreshExecution

/// Where the interpreter's results and errors go.
public protocol InterpreterOutput: AnyObject {
    /// One line of results for standard output (no trailing newline).
    func result(_ line: String)
    /// Raw content for standard output (`cat`).
    func resultBytes(_ bytes: Data)
    /// An error, for standard error.
    func error(_ diagnostic: Diagnostic)
    /// A remark about the run as a whole (what was saved), for standard error.
    func notice(_ text: String)
}

/// The local files that `put` reads and `get` writes; the command-line layer gives the real ones.
public protocol LocalFiles: Sendable {
    func read(_ path: String) throws(StorageError) -> Data
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
public protocol FileSink: ContentSink {
    func commit() throws(StorageError)
    /// Leaves nothing behind.
    func discard()
}

extension LocalFiles {
    public func source(_ path: String) throws(StorageError) -> (any ContentSource)? { nil }

    public func sink(writingTo path: String) throws(StorageError) -> any FileSink { WholeFileSink(files: self, path: path) }
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
public struct RunOptions: Sendable {
    /// Print one JSON document per result (NDJSON) and errors as JSON.
    public var json: Bool
    /// Run without saving anything, and print the plan.
    public var dryRun: Bool
    /// Report each failure and keep the changes of the commands that succeeded.
    public var keepGoing: Bool
    /// Colour in human output (prefixes); only on a terminal, never with NO_COLOR.
    public var color: Bool
    /// The page size of `ls` without `-n`: at the prompt, a screenful, so that a listing never floods the
    /// screen without saying how to see more; nil is the contract's 1000.
    public var defaultPageSize: Int?
    /// `run --snapshot NAME`: save a snapshot first, inside the script's transaction.
    public var snapshotBefore: String?
    /// Lines typed at the prompt, not a script: messages speak of the line.
    public var atPrompt = false
    /// On a bucket without transactions: how many planned changes are sent at once (rule X2).
    public var parallel = ApplySettings.defaultParallel
    /// `run --explain`: each command is explained (SDK call, REST requests, rules method), none is run.
    public var explainOnly = false
    /// `--summary`: bulk changes print their summary by change, not each object.
    public var summaryOnly = false
    /// `run --echo`: each command is printed, after a prompt of the current reference, before its output, so
    /// that a lesson's script is its own transcript.
    public var echo = false

    public init(json: Bool = false, dryRun: Bool = false, keepGoing: Bool = false, color: Bool = false, defaultPageSize: Int? = nil) {
        self.json = json
        self.dryRun = dryRun
        self.keepGoing = keepGoing
        self.color = color
        self.defaultPageSize = defaultPageSize
    }
}

/// Runs commands against a bucket: the one path from AST to bucket that scripts and the shell share.
///
/// It keeps the session's state: the current reference and the last paginated listing for `page next`.
public final class Interpreter {
    /// The session's bucket, as opened: no rules, no transaction.
    public let bucket: any Bucket
    public private(set) var current: StoragePath = .root
    public var options: RunOptions
    /// Checked between commands and between the objects of a bulk command; true stops the run (Ctrl-C).
    public var isCancelled: @Sendable () -> Bool = { false }
    /// The session's security rules, for `rules`, `login`, `logout` and `whoami`; they decide every request
    /// the commands make.
    public var rules: RulesControl? {
        didSet { target = guarded(bucket) }
    }
    /// Where planned changes get their times (the bucket's clock, so a dry run shows what the run would make).
    let clock: any StorageClock
    /// The bucket commands work on: the session's bucket, or during a script its transaction or its plan, with
    /// the session's rules around it.
    var target: any Bucket

    public let output: InterpreterOutput
    private let files: LocalFiles
    /// How a plan is applied to a bucket without transactions: its journal and its progress line (rules X2, X4).
    public var applySettings = ApplySettings()
    /// Whether an `exit` ran in the last script (the shell leaves only then).
    public internal(set) var exitRan = false
    /// Objects the current run reported as updated, written or deleted (not in a dry run).
    var reportedChanges = 0
    var lastListing: (reference: StoragePath, maxResults: Int?, long: Bool, nextPageToken: String?)?

    /// How many objects a pattern scan reads at a time.
    static let scanPageSize = 1000

    public init(
        bucket: any Bucket, output: InterpreterOutput, files: LocalFiles, options: RunOptions = RunOptions(),
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
    public enum Status: Int32, Sendable {
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

    /// Prints a result: for people, or as JSON with `--json`.
    func deliver(_ result: CommandResult) {
        if !options.dryRun {
            // What the run has reported as changed so far: undone, and then said so, if the run fails. (Bulk
            // commands count their objects as `BulkResults` prints them.)
            switch result {
            case .written: reportedChanges += 1
            // The rules in force and the snapshots are part of the bucket: undone with the rest.
            case .rulesLoaded, .rulesReset, .snapshotSaved, .snapshotRemoved: reportedChanges += 1
            case .snapshotRestored(_, let changes, _): reportedChanges += max(changes.count, 1)
            default: break
            }
        }
        let renderer: any ResultRenderer =
            options.json
            ? JSONRenderer()
            : HumanRenderer(color: options.color, screenfulPages: options.defaultPageSize != nil)
        renderer.render(result, to: output)
    }

    public enum Flow: Sendable, Equatable {
        case next
        case exit
    }

    /// Runs one command. Storage errors come back as diagnostics located at the word they concern.
    public func execute(_ statement: Statement) async throws -> Flow {
        let here = statement.location
        if options.echo && !statement.text.isEmpty {
            deliver(.command(statement.text, prompt: current.url(bucket: target.name, scheme: target.scheme)))
        }
        if options.dryRun && statement.command.changesBucket {
            deliver(.planHeader(line: here.line, command: Self.header(statement.command)))
        }
        switch statement.command {
        case .cd(let path):
            current = try path.map { try navigationPath($0, command: "cd") } ?? .root
            if path != nil, !current.isRoot, let note = await emptyReferenceNote(current) { deliver(.note(note)) }
        case .pwd:
            deliver(.path(current.url(bucket: target.name, scheme: target.scheme)))
        case .ls(let list):
            try await runList(list, at: here)
        case .pageToken(let word):
            guard let token = word?.text ?? lastListing?.nextPageToken else {
                throw Diagnostic.running(
                    .invalidArgument(
                        lastListing == nil
                            ? "There is no page token to show: no listing yet. List a page first (ls -n 2), or give one: page token TOKEN."
                            : "There is no page token to show: the last listing had no more pages. Give one: page token TOKEN."),
                    at: here)
            }
            let (bucket, position) = try located(word?.location ?? here) { try self.target.pageTokens.contents(of: token) }
            deliver(.pageToken(token: token, bucket: bucket, position: position, scheme: target.scheme))
        case .pageNext:
            try await runPageNext(at: here)
        case .metaGet(let targets, let raw, let filters):
            var shown = 0
            try await forEachTarget(targets, raw: raw, filters: filters, at: here) { object in
                let metadata = try await self.metadata(of: object, at: here)
                // Several objects: a blank line between them, for people (JSON has one document each).
                if shown > 0 && !options.json { deliver(.echo("")) }
                shown += 1
                // Rule G7: download tokens are credentials of a kind; shown only when asked for with --raw.
                deliver(.metadata(raw ? metadata : metadata.withoutDownloadTokens))
            }
        case .metaSet(let command):
            try await runUpdate(command.update, targets: command.targets, filters: command.filters, at: here)
        case .metaUnset(let command):
            try await runUpdate(command.update, targets: command.targets, filters: command.filters, at: here)
        case .metaRename(let command):
            try await runRename(command, at: here)
        case .put(let command):
            try await runPut(command, at: here)
        case .get(let objectWord, let fileWord, let raw):
            let name = try objectName(objectWord, raw: raw, at: here)
            // Like cp: a destination ending in / or naming a directory gets the object's own name.
            var file = fileWord?.text ?? name.lastSegment
            if let given = fileWord?.text, given.hasSuffix("/") || files.isDirectory(given) {
                file = (given.hasSuffix("/") ? given : given + "/") + name.lastSegment
            }
            guard !file.isEmpty, !file.hasSuffix("/") else {
                throw Diagnostic.running(
                    .invalidArgument("Object \(name) has no last segment to name a local file after; give LOCAL_FILE."),
                    at: objectWord.location)
            }
            let size: Int64
            if options.dryRun {
                size = try await onTarget(objectWord, name: name, at: here) { try await self.target.metadata(of: name) }.size
            } else {
                // Written a piece at a time, and into place only once whole.
                let sink = try located(fileWord?.location ?? objectWord.location) { try self.files.sink(writingTo: file) }
                do {
                    size = try await onTarget(objectWord, name: name, at: here) { try await self.target.read(name, into: sink) }
                    try located(fileWord?.location ?? objectWord.location) { try sink.commit() }
                } catch {
                    sink.discard()
                    throw error
                }
            }
            deliver(.saved(object: name.rawValue, file: file, size: size, dryRun: options.dryRun))
        case .cat(let objectWord, let raw):
            let name = try objectName(objectWord, raw: raw, at: here)
            let content = try await onTarget(objectWord, name: name, at: here) { try await self.target.read(name) }
            deliver(.content(object: name.rawValue, content))
        case .rm(let targets, let raw, let filters):
            let results = BulkResults(.deletions, output: output, options: options)
            try await forEachTarget(targets, raw: raw, filters: filters, at: here) { object in
                // An object a pattern found is deleted only as it was found (rule G5).
                let precondition = object.metadata.map { Precondition.sameContent(as: $0) } ?? .none
                try await onTarget(object.word, name: object.name, at: here) {
                    try await self.target.delete(object.name, precondition: precondition)
                }
                results.deleted(object.name.rawValue)
            }
            if !options.dryRun { reportedChanges += results.deletedCount }
            results.finish(single: true)
        case .echo(let words):
            deliver(.echo(words.map(\.text).joined(separator: " ")))
        case .help(let topic):
            deliver(.help(topic.map { CommandCatalog.helpText(for: $0.text) ?? "" } ?? CommandCatalog.overview))
        case .exit:
            return .exit
        case .dryRun(let inner):
            // Taken off before a script runs (ScriptRun); a statement run on its own runs its command.
            var unwrapped = statement
            unwrapped.command = inner
            return try await execute(unwrapped)
        case .explain(let inner, let text):
            var explanation = try await explanation(of: inner, at: here)
            explanation.command = text
            deliver(.explanation(explanation))
        case .snapshot(let command):
            try await runSnapshot(command, at: here)
        case .rulesShow:
            let (source, origin) = try requireRules(here).currentRules()
            deliver(.rules(source: source, origin: origin))
        case .rulesLoad(let file):
            let data = try located(file.location) { try self.files.read(file.text) }
            guard let source = String(data: data, encoding: .utf8) else {
                throw Diagnostic.running(.invalidArgument("\(file.text) is not UTF-8 text."), at: file.location)
            }
            try loadRules(source, origin: file.text, at: file.location)
            deliver(.rulesLoaded(file: file.text, dryRun: options.dryRun))
        case .rulesLoadSample(let sample):
            let samples = try requireRules(here).samples
            guard let source = samples.first(where: { $0.name == sample.text })?.source else {
                var message = "There are no sample rules named \(sample.text); the samples are \(samples.map(\.name).joined(separator: ", "))"
                if let near = Suggestion.nearest(to: sample.text, among: samples.map(\.name)) { message += " (did you mean \(near)?)" }
                throw Diagnostic.running(.invalidArgument(message + "."), at: sample.location)
            }
            // Named as the file it is built from, so that `rules show` and `rules why` (FILE:LINE) read naturally.
            let origin = "samples/rules/\(sample.text).rules"
            try loadRules(source, origin: origin, at: sample.location)
            deliver(.rulesLoaded(file: origin + " (the sample built into storesh)", dryRun: options.dryRun))
        case .rulesReset:
            let open = try requireRules(here).openRules
            try loadRules(open.source, origin: open.origin, at: here)
            deliver(.rulesReset(dryRun: options.dryRun))
        case .rulesWhy:
            let last = try requireRules(here).lastDecision
            let text = last.map { $0.decision.explanation(for: $0.request) } ?? "no request has been decided yet"
            deliver(.decision(allowed: last?.decision.allowed, explanation: text))
        case .login(let uid, let claims):
            if let signIn = bucket.endUserSignIn {
                let claimValues = Dictionary(claims.map { ($0.key.text, $0.value.text) }) { $1 }
                let who = try located(uid.location) { try signIn.signIn(uid: uid.text, claims: claimValues) }
                deliver(.access(Self.signedInThroughFirebase(who)))
                return .next
            }
            let rules = try requireRules(here)
            rules.identity = Identity(uid: uid.text, claims: Dictionary(claims.map { ($0.key.text, ClaimValue(text: $0.value.text)) }) { $1 })
            deliver(.signedIn(uid: uid.text))
        case .loginToken(let token):
            guard let signIn = bucket.endUserSignIn else {
                throw Diagnostic.running(
                    .invalidArgument("login --id-token signs in to a real bucket (gs://); a local bucket's rules take login UID."),
                    at: token.location)
            }
            let who = try located(token.location) { try signIn.signIn(idToken: token.text) }
            deliver(.access(Self.signedInThroughFirebase(who)))
        case .logout:
            if let signIn = bucket.endUserSignIn {
                signIn.signOut()
                deliver(.access("signed out: requests go through the Cloud Storage JSON API again (whoami says as whom)"))
                return .next
            }
            try requireRules(here).identity = nil
            deliver(.signedOut)
        case .whoami:
            if let access = bucket.accessDescription {
                deliver(.access(access))
            } else {
                deliver(.identity(try requireRules(here).identity))
            }
        }
        return .next
    }

    static func signedInThroughFirebase(_ who: String) -> String {
        "signed in as \(who): requests now go through the Firebase Storage API, where the project's security rules decide (logout goes back)"
    }

    private func requireRules(_ here: SourceLocation) throws -> RulesControl {
        guard let rules else {
            throw Diagnostic.running(.invalidArgument("This bucket has no security rules to show or change."), at: here)
        }
        return rules
    }

    // MARK: Commands

    private func runList(_ list: ListCommand, at here: SourceLocation) async throws {
        let reference = try list.path.map { try navigationPath($0, command: "ls") } ?? current
        let maxResults = list.maxResults?.value ?? (list.all ? nil : options.defaultPageSize)
        let errorLocation = list.maxResults?.location ?? list.pageToken?.location ?? list.path?.location ?? here
        var page: ListPage
        if list.all {
            page = ListPage()
            var token: String?
            repeat {
                try checkCancelled(at: here)
                let next = try await located(errorLocation) {
                    try await self.target.list(
                        reference, options: ListOptions(maxResults: maxResults, pageToken: token, includeMetadata: list.long))
                }
                page.prefixes += next.prefixes
                page.items += next.items
                if let metadata = next.itemMetadata { page.itemMetadata = (page.itemMetadata ?? []) + metadata }
                token = next.nextPageToken
            } while token != nil
            lastListing = nil
        } else {
            page = try await located(errorLocation) {
                try await self.target.list(
                    reference,
                    options: ListOptions(maxResults: maxResults, pageToken: list.pageToken?.text, includeMetadata: list.long))
            }
            lastListing = (reference, maxResults, list.long, page.nextPageToken)
        }
        try await deliverPage(page, of: reference, long: list.long, at: here)
    }

    /// The listing `page next` continues and the token it sends; an error when there is none (`explain page next`
    /// says the same).
    func continuedListing(at here: SourceLocation) throws -> (reference: StoragePath, maxResults: Int?, long: Bool, token: String) {
        guard let last = lastListing else {
            throw Diagnostic.running(.invalidArgument("There is no listing to continue: `page next` follows an ls."), at: here)
        }
        guard let token = last.nextPageToken else {
            throw Diagnostic.running(
                .invalidArgument("The last listing of \(last.reference.url(bucket: target.name, scheme: target.scheme)) has no more pages."), at: here)
        }
        return (last.reference, last.maxResults, last.long, token)
    }

    private func runPageNext(at here: SourceLocation) async throws {
        let last = try continuedListing(at: here)
        let page = try await located(here) {
            try await self.target.list(
                last.reference, options: ListOptions(maxResults: last.maxResults, pageToken: last.token, includeMetadata: last.long))
        }
        lastListing?.nextPageToken = page.nextPageToken
        try await deliverPage(page, of: last.reference, long: last.long, at: here)
    }

    /// A page as a result: with `-l`, each item's metadata (from the page, or asked per item of a bucket whose
    /// pages carry none); for an empty page, whether the reference is an object.
    private func deliverPage(_ page: ListPage, of reference: StoragePath, long: Bool, at here: SourceLocation) async throws {
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

    /// meta set / meta unset over every target, with the plan (old → new per property) in a dry run.
    /// `meta rename custom.OLD custom.NEW`: on each target that has OLD, NEW takes its value and OLD goes, in one
    /// update; an object whose NEW already holds another value is an error rather than a silent overwrite.
    private func runRename(_ command: MetaRenameCommand, at here: SourceLocation) async throws {
        let results = BulkResults(.updates, output: output, options: options)
        try await forEachTarget(command.targets, raw: false, filters: command.filters, at: here) { object in
            let metadata = try await self.metadata(of: object, at: here)
            guard let value = metadata.customMetadata[command.old.text] else {
                results.unchanged(object.name.rawValue)
                return
            }
            if let existing = metadata.customMetadata[command.new.text], existing != value {
                throw Diagnostic.running(
                    .invalidArgument(
                        "\(object.name.rawValue) has custom.\(command.new.text) already (\(existing.debugDescription)); renaming custom.\(command.old.text) would overwrite it. Unset one first."),
                    at: object.word?.location ?? here)
            }
            var update = MetadataUpdate()
            update.customMetadata[command.new.text] = .set(value)
            update.customMetadata[command.old.text] = .unset
            let result = try await onTarget(object.word, name: object.name, at: here) {
                try await self.target.updateMetadata(of: object.name, update, precondition: .matches(metadata))
            }
            results.updated(object.name.rawValue, result.previous.differences(to: result.metadata))
        }
        if !options.dryRun { reportedChanges += results.updatedCount }
        results.finish(single: command.targets.count == 1 && !ObjectPattern.isPattern(command.targets[0]))
    }

    private func runUpdate(_ update: MetadataUpdate, targets: [Word], filters: [MetadataFilter] = [], at here: SourceLocation) async throws {
        let results = BulkResults(.updates, output: output, options: options)
        try await forEachTarget(targets, raw: false, filters: filters, at: here) { object in
            let update = try await keepingDownloadTokens(update, of: object, at: here)
            // A named object is updated as it is (one `update` request, as the service makes it); one that a
            // pattern found must not have changed since.
            let result = try await onTarget(object.word, name: object.name, at: here) {
                try await self.target.updateMetadata(
                    of: object.name, update,
                    precondition: object.metadata.map { $0.hasGenerations ? Precondition(metageneration: $0.metageneration) : .matches($0) } ?? .none)
            }
            if result.changed {
                results.updated(object.name.rawValue, result.previous.differences(to: result.metadata))
            } else {
                results.unchanged(object.name.rawValue)
            }
        }
        if !options.dryRun { reportedChanges += results.updatedCount }
        results.finish(single: true)
    }

    /// Rule G7: `meta unset custom` clears the custom metadata but keeps the download tokens (the object's
    /// download URLs go on working); unsetting the key by name removes it.
    private func keepingDownloadTokens(
        _ update: MetadataUpdate, of object: ExpandedTarget, at here: SourceLocation
    ) async throws -> MetadataUpdate {
        guard update.clearsCustomMetadata, update.customMetadata[ObjectMetadata.downloadTokensKey] == nil else { return update }
        return Self.keepingDownloadTokens(update, of: try await metadataIfPresent(of: object, at: here))
    }

    /// The update sent to an object in `state` (rule G7, above); `explain` shows the same.
    static func keepingDownloadTokens(_ update: MetadataUpdate, of state: ObjectMetadata?) -> MetadataUpdate {
        let key = ObjectMetadata.downloadTokensKey
        guard update.clearsCustomMetadata, update.customMetadata[key] == nil, let tokens = state?.customMetadata[key] else { return update }
        var kept = update
        kept.customMetadata[key] = .set(tokens)
        return kept
    }

    // MARK: Snapshots

    func runSnapshot(_ command: SnapshotCommand, at here: SourceLocation) async throws {
        guard let store = target.snapshotStore else {
            throw Diagnostic.running(.invalidArgument("This bucket keeps no snapshots."), at: here)
        }
        switch command {
        case .save(let name):
            let info = try await located(name.location) { try await store.saveSnapshot(named: name.text) }
            deliver(.snapshotSaved(info, dryRun: options.dryRun))
        case .list:
            deliver(.snapshots(try await store.snapshots()))
        case .diff(let from, let to):
            // An unknown name is reported at its own word.
            let known = Set(try await store.snapshots().map(\.name))
            let unknown = [from, to].compactMap { $0 }.first { !known.contains($0.text) }
            let changes = try await located(unknown?.location ?? from.location) {
                try await store.changes(from: .snapshot(from.text), to: to.map { .snapshot($0.text) } ?? .current)
            }
            deliver(.snapshotDiff(from: from.text, to: to?.text, changes: changes))
        case .restore(let name):
            let changes = try await located(name.location) { try await store.restoreSnapshot(named: name.text) }
            deliver(.snapshotRestored(name: name.text, changes: changes, dryRun: options.dryRun))
        case .remove(let name):
            let info = try await located(name.location) { try await store.removeSnapshot(named: name.text) }
            deliver(.snapshotRemoved(info, dryRun: options.dryRun))
        }
    }

    /// Where `put` writes: DEST as given, DEST/ with the file's name, or the file's name here.
    func putDestination(_ command: PutCommand, defaultName: String?, at here: SourceLocation) throws -> ObjectName {
        if let word = command.destination {
            if command.raw { return try located(word.location) { try ObjectName(word.text) } }
            try refusePattern(word)
            if word.text.hasSuffix("/"), let defaultName {
                // Like cp: DEST/ is a folder, and the file keeps its name in it.
                let folder = try resolve(word)
                return try located(word.location) { try folder.child(defaultName).objectName() }
            }
            return try objectName(word, raw: false, at: here)
        }
        if let defaultName { return try located(here) { try self.current.child(defaultName).objectName() } }
        return try located(here) { try self.current.objectName() }
    }

    private func runPut(_ command: PutCommand, at here: SourceLocation) async throws {
        var content = Data()
        var source: (any ContentSource)?
        let defaultName: String?
        switch command.source {
        case .file(let word):
            source = try located(word.location) { try self.files.source(word.text) }
            if source == nil { content = try located(word.location) { try self.files.read(word.text) } }
            defaultName = URL(fileURLWithPath: word.text).lastPathComponent
        case .data(let word):
            content = Data(word.text.utf8)
            defaultName = nil
        }
        let destination = try putDestination(command, defaultName: defaultName, at: here)
        var writeOptions = WriteOptions()
        if let type = command.contentType { writeOptions.properties[.contentType] = type.text }
        if let md5 = command.md5 {
            guard ContentHash.isMD5Base64(md5.text) else {
                throw Diagnostic.running(
                    .invalidArgument("--md5 takes the base64 of a 16-byte MD5 digest, such as XUFAKrxLKna5cZ2REBfFkg=="),
                    at: md5.location)
            }
            writeOptions.expectedMD5 = md5.text
        }
        let metadata = try await located(command.destination?.location ?? here) {
            if let source {
                return try await self.target.write(from: source, to: destination, options: writeOptions, precondition: .none)
            }
            return try await self.target.write(content, to: destination, options: writeOptions)
        }
        deliver(.written(metadata, dryRun: options.dryRun))
    }

    /// A dry run's header for a command: its words, and the snapshot it names.
    /// After `cd`: a reference need not exist, but a class (or a typo) deserves to hear that nothing is there, and
    /// which folder beside it was likely meant. Nil when something is there (or the rules hide it). The reads are
    /// hints, not the user's requests.
    private func emptyReferenceNote(_ reference: StoragePath) async -> String? {
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

    /// Checks rules and puts them in force in the bucket (`rules load`, `rules reset`).
    private func loadRules(_ source: String, origin: String, at location: SourceLocation) throws {
        let rules = try requireRules(location)
        guard let store = target.rulesStore else {
            throw Diagnostic.running(.invalidArgument("\(target.url) keeps no security rules that storesh may change."), at: location)
        }
        try located(location) { try rules.loadRules(source: source, origin: origin, into: store) }
    }

    static func header(_ command: Command) -> String {
        switch command {
        case .snapshot(.save(let name)), .snapshot(.restore(let name)), .snapshot(.remove(let name)): "\(command.name) \(name.text)"
        case .rulesLoad(let file): "rules load \(file.text)"
        case .rulesLoadSample(let sample): "rules load --sample \(sample.text)"
        default: command.name
        }
    }
}
