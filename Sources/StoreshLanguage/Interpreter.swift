import Foundation
import StoreshCore

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

    let output: InterpreterOutput
    private let files: LocalFiles
    /// Whether an `exit` ran in the last script (the shell leaves only then).
    public internal(set) var exitRan = false
    private var lastListing: (reference: StoragePath, maxResults: Int?, long: Bool, nextPageToken: String?)?

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

    func emitNote(_ text: String) {
        if !options.json { output.result(text) }
    }

    public enum Flow: Sendable, Equatable {
        case next
        case exit
    }

    /// Runs one command. Storage errors come back as diagnostics located at the word they concern.
    public func execute(_ statement: Statement) async throws -> Flow {
        let here = statement.location
        if options.dryRun && !options.json && statement.command.changesBucket {
            output.result("# line \(here.line): \(Self.header(statement.command))")
        }
        switch statement.command {
        case .cd(let path):
            current = try path.map { try navigationPath($0, command: "cd") } ?? .root
        case .pwd:
            let url = current.url(bucket: target.name)
            emit(json: .object([("path", .string(url))]), human: [MessageText.oneLine(url)])
        case .ls(let list):
            try await runList(list, at: here)
        case .pageNext:
            try await runPageNext(at: here)
        case .metaGet(let path, let raw):
            let name = try objectName(path, raw: raw, at: here)
            let metadata = try await onTarget(path, name: name, at: here) { try await self.target.metadata(of: name) }
            emit(json: metadata.jsonDocument, human: Self.describe(metadata))
        case .metaSet(let command):
            try await runUpdate(command.update, targets: command.targets, at: here)
        case .metaUnset(let command):
            try await runUpdate(command.update, targets: command.targets, at: here)
        case .put(let command):
            try await runPut(command, at: here)
        case .get(let objectWord, let fileWord, let raw):
            let name = try objectName(objectWord, raw: raw, at: here)
            let content = try await onTarget(objectWord, name: name, at: here) { try await self.target.read(name) }
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
            if options.dryRun {
                emitNote("would save \(MessageText.oneLine(name.rawValue)) (\(Formatting.size(Int64(content.count)))) to \(file)")
            } else {
                try located(fileWord?.location ?? objectWord.location) { try self.files.write(content, to: file) }
                emit(
                    json: .object([("path", .string(name.rawValue)), ("file", .string(file)), ("size", .integer(Int64(content.count)))]),
                    human: ["saved \(MessageText.oneLine(name.rawValue)) (\(Formatting.size(Int64(content.count)))) to \(file)"])
            }
        case .cat(let objectWord, let raw):
            let name = try objectName(objectWord, raw: raw, at: here)
            let content = try await onTarget(objectWord, name: name, at: here) { try await self.target.read(name) }
            if options.json {
                let body: (String, JSONValue) =
                    String(data: content, encoding: .utf8).map { ("text", .string($0)) }
                    ?? ("base64", .string(content.base64EncodedString()))
                output.result(JSONValue.object([("path", .string(name.rawValue)), body]).serialized)
            } else {
                output.resultBytes(content)
            }
        case .rm(let targets, let raw):
            let objects = try await expand(targets, raw: raw, at: here)
            var deleted: [String] = []
            for object in objects {
                try checkCancelled(at: here)
                // An object a pattern found is deleted only as it was found (rule G5).
                let precondition = object.metadata.map { Precondition(generation: $0.generation) } ?? .none
                try await onTarget(object.word, name: object.name, at: here) {
                    try await self.target.delete(object.name, precondition: precondition)
                }
                deleted.append(object.name.rawValue)
                if options.dryRun && objects.count > 1 { emitNote("would delete \(MessageText.oneLine(object.name.rawValue))") }
            }
            let verb = options.dryRun ? "would delete" : "deleted"
            emit(
                json: .object([("deleted", .array(deleted.map { .string($0) }))] + dryRunMark),
                human: [deleted.count == 1 ? "\(verb) \(MessageText.oneLine(deleted[0]))" : "\(verb) \(MessageText.counted(deleted.count, "object"))"])
        case .echo(let words):
            let text = words.map(\.text).joined(separator: " ")
            emit(json: .object([("echo", .string(text))]), human: [text])
        case .help(let topic):
            let text: String
            if let topic {
                text = CommandCatalog.helps(for: topic.text).map(CommandCatalog.text(for:)).joined(separator: "\n\n")
            } else {
                text = CommandCatalog.overview
            }
            emit(json: .object([("help", .string(text))]), human: [text])
        case .exit:
            return .exit
        case .snapshot(let command):
            try await runSnapshot(command, at: here)
        case .rulesShow:
            let (source, origin) = try requireRules(here).currentRules()
            emit(json: .object([("origin", .string(origin)), ("source", .string(source))]), human: ["# rules from \(origin)", source])
        case .rulesLoad(let file):
            let data = try located(file.location) { try self.files.read(file.text) }
            guard let source = String(data: data, encoding: .utf8) else {
                throw Diagnostic.running(.invalidArgument("\(file.text) is not UTF-8 text."), at: file.location)
            }
            let rules = try requireRules(here)
            guard let store = target.rulesStore else {
                throw Diagnostic.running(.invalidArgument("gs://\(target.name) keeps no security rules that storesh may change."), at: here)
            }
            try located(file.location) { try rules.loadRules(source: source, origin: file.text, into: store) }
            emit(json: .object([("loaded", .string(file.text))]), human: ["loaded the rules of \(file.text)"])
        case .rulesWhy:
            let last = try requireRules(here).lastDecision
            let text = last.map { $0.decision.explanation(for: $0.request) } ?? "no request has been decided yet"
            emit(json: .object([("allowed", last.map { .bool($0.decision.allowed) } ?? .null), ("explanation", .string(text))]), human: [text])
        case .login(let uid, let claims):
            let rules = try requireRules(here)
            rules.identity = Identity(uid: uid.text, claims: Dictionary(claims.map { ($0.key.text, $0.value.text) }) { $1 })
            emit(json: .object([("uid", .string(uid.text))]), human: ["signed in as \(MessageText.oneLine(uid.text))"])
        case .logout:
            try requireRules(here).identity = nil
            emit(json: .object([("uid", .null)]), human: ["signed out: request.auth is null"])
        case .whoami:
            let identity = try requireRules(here).identity
            let claims = identity?.claims.sortedByKeyBytes.map { "\($0.key)=\($0.value)" }.joined(separator: " ") ?? ""
            let text =
                identity.map { "signed in as \(MessageText.oneLine($0.uid))" + (claims.isEmpty ? "" : " (claims: \(claims))") }
                ?? "not signed in: request.auth is null"
            emit(
                json: .object([
                    ("uid", identity.map { .string($0.uid) } ?? .null),
                    ("claims", .object(identity?.claims.sortedByKeyBytes.map { ($0.key, .string($0.value)) } ?? [])),
                ]), human: [text])
        }
        return .next
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
        try await render(page, of: reference, long: list.long, at: here)
    }

    private func runPageNext(at here: SourceLocation) async throws {
        guard let last = lastListing else {
            throw Diagnostic.running(.invalidArgument("There is no listing to continue: `page next` follows an ls."), at: here)
        }
        guard let token = last.nextPageToken else {
            throw Diagnostic.running(
                .invalidArgument("The last listing of \(last.reference.url(bucket: target.name)) has no more pages."), at: here)
        }
        let page = try await located(here) {
            try await self.target.list(
                last.reference, options: ListOptions(maxResults: last.maxResults, pageToken: token, includeMetadata: last.long))
        }
        lastListing?.nextPageToken = page.nextPageToken
        try await render(page, of: last.reference, long: last.long, at: here)
    }

    private func render(_ page: ListPage, of reference: StoragePath, long: Bool, at here: SourceLocation) async throws {
        // A page carries its items' metadata when asked (one request); a bucket that gives none is asked per item.
        var metadata = page.itemMetadata ?? []
        if long && page.itemMetadata == nil {
            for item in page.items {
                let name = try located(here) { try ObjectName(item) }
                metadata.append(try await located(here) { try await self.target.metadata(of: name) })
            }
        }
        if options.json {
            let items: [JSONValue] = long ? metadata.map(\.jsonDocument) : page.items.map { .string($0) }
            output.result(
                JSONValue.object([
                    ("prefixes", .array(page.prefixes.map { .string($0) })), ("items", .array(items)),
                    ("nextPageToken", page.nextPageToken.map { .string($0) } ?? .null),
                ]).serialized)
            return
        }
        // Names relative to the listed reference, as a shell shows them; prefixes end in /.
        let strip = reference.listingPrefix.utf8.count
        func relative(_ fullPath: String) -> String {
            MessageText.oneLine(String(Substring(fullPath.utf8.dropFirst(strip))))
        }
        // Folders in bold blue when colour is on, so they stand apart from objects at a glance.
        func folder(_ text: String) -> String { options.color ? "\u{1B}[1;34m\(text)\u{1B}[0m" : text }
        if long {
            var rows = page.prefixes.map { ["-", "-", "-", folder(relative($0) + "/")] }
            rows += metadata.map {
                [Formatting.size($0.size), Formatting.shortDate($0.updated), $0.contentType ?? "-", relative($0.fullPath)]
            }
            Formatting.columns(rows, rightAligned: [0]).forEach(output.result)
        } else {
            page.prefixes.forEach { output.result(folder(relative($0) + "/")) }
            page.items.forEach { output.result(relative($0)) }
        }
        if page.prefixes.isEmpty && page.items.isEmpty {
            var note = "(nothing under \(MessageText.oneLine(reference.url(bucket: target.name))))"
            rules?.recordsDecisions = false
            defer { rules?.recordsDecisions = true }
            if let name = try? reference.objectName(), (try? await target.metadata(of: name)) != nil {
                note += " — it is an object: meta get shows it (rule L5)"
            }
            output.result(note)
        }
        if let token = page.nextPageToken {
            // At the prompt (a screenful page) the token is noise: `page next` is what to type.
            output.result(options.defaultPageSize != nil ? "… more: page next" : "… more entries: `page next` shows them (token \(token))")
        }
    }

    /// meta set / meta unset over every target, with the plan (old → new per property) in a dry run.
    private func runUpdate(_ update: MetadataUpdate, targets: [Word], at here: SourceLocation) async throws {
        let objects = try await expand(targets, raw: false, at: here)
        var updated: [(name: String, differences: [PropertyDifference])] = []
        var unchanged: [String] = []
        for object in objects {
            try checkCancelled(at: here)
            // A named object is updated as it is (one `update` request, as the service makes it); one that a
            // pattern found must not have changed since.
            let result = try await onTarget(object.word, name: object.name, at: here) {
                try await self.target.updateMetadata(
                    of: object.name, update, precondition: Precondition(metageneration: object.metadata?.metageneration))
            }
            if result.changed {
                updated.append((object.name.rawValue, result.previous.differences(to: result.metadata)))
            } else {
                unchanged.append(object.name.rawValue)
            }
        }
        if options.json {
            let updatedDocuments: [JSONValue] = updated.map { Self.changedDocument(path: $0.name, $0.differences) }
            output.result(
                JSONValue.object(
                    [("updated", .array(updatedDocuments)), ("unchanged", .array(unchanged.map { .string($0) }))] + dryRunMark
                ).serialized)
            return
        }
        if options.dryRun {
            for entry in updated { emitPlan(name: entry.name, entry.differences) }
        }
        let verbPhrase = options.dryRun ? "would update" : "updated"
        let summary: String
        if objects.count == 1 {
            summary =
                updated.isEmpty
                ? "\(MessageText.oneLine(unchanged[0])): unchanged (already as asked)"
                : "\(verbPhrase) \(MessageText.oneLine(updated[0].name))"
        } else {
            summary = "\(verbPhrase) \(MessageText.counted(updated.count, "object")), \(unchanged.count) unchanged"
        }
        output.result(summary)
    }

    /// One changed object in a plan: its name, then each property old → new.
    private func emitPlan(name: String, _ differences: [PropertyDifference]) {
        output.result(MessageText.oneLine(name))
        let rows = differences.map { ["  " + $0.key, Formatting.planValue($0.old), "→", Formatting.planValue($0.new)] }
        Formatting.columns(rows).forEach(output.result)
    }

    /// `{"path": …, "changes": {KEY: {"old": …, "new": …}}}`: a changed object in JSON plans and diffs.
    static func changedDocument(path: String, _ differences: [PropertyDifference]) -> JSONValue {
        .object([
            ("path", .string(path)),
            (
                "changes",
                .object(differences.map { ($0.key, .object([("old", $0.old.map(JSONValue.string) ?? .null), ("new", $0.new.map(JSONValue.string) ?? .null)])) })
            ),
        ])
    }

    // MARK: Snapshots

    func runSnapshot(_ command: SnapshotCommand, at here: SourceLocation) async throws {
        guard let store = target.snapshotStore else {
            throw Diagnostic.running(.invalidArgument("This bucket keeps no snapshots."), at: here)
        }
        func document(_ info: SnapshotInfo) -> JSONValue {
            .object([("name", .string(info.name)), ("created", .string(info.created.rfc3339)), ("objects", .integer(Int64(info.objectCount)))])
        }
        switch command {
        case .save(let name):
            let info = try await located(name.location) { try await store.saveSnapshot(named: name.text) }
            emit(
                json: .object([("saved", document(info))] + dryRunMark),
                human: ["\(options.dryRun ? "would save" : "saved") snapshot \(info.name) (\(MessageText.counted(info.objectCount, "object")))"])
        case .list:
            let all = try await store.snapshots()
            let rows = all.map { [$0.name, Formatting.shortDate($0.created), MessageText.counted($0.objectCount, "object")] }
            emit(
                json: .object([("snapshots", .array(all.map(document)))]),
                human: all.isEmpty ? ["(no snapshots; snapshot save NAME takes one)"] : Formatting.columns(rows, rightAligned: [2]))
        case .diff(let from, let to):
            // An unknown name is reported at its own word.
            let known = Set(try await store.snapshots().map(\.name))
            let unknown = [from, to].compactMap { $0 }.first { !known.contains($0.text) }
            let changes = try await located(unknown?.location ?? from.location) {
                try await store.changes(from: .snapshot(from.text), to: to.map { .snapshot($0.text) } ?? .current)
            }
            let toText = to.map { "snapshot \($0.text)" } ?? "now"
            emitChanges(
                changes, json: [("from", .string(from.text)), ("to", to.map { .string($0.text) } ?? .null)],
                summary: changes.isEmpty
                    ? "no differences from snapshot \(from.text) to \(toText)"
                    : "\(MessageText.counted(changes.count, "object")) differ from snapshot \(from.text) to \(toText): \(Self.tally(changes))",
                plan: true)
        case .restore(let name):
            let changes = try await located(name.location) { try await store.restoreSnapshot(named: name.text) }
            emitChanges(
                changes, json: [("restored", .string(name.text))] + dryRunMark,
                summary: changes.isEmpty
                    ? "the bucket is already as in snapshot \(name.text); nothing to restore"
                    : "\(options.dryRun ? "would restore" : "restored") snapshot \(name.text): \(Self.tally(changes))",
                plan: options.dryRun)
        case .remove(let name):
            let info = try await located(name.location) { try await store.removeSnapshot(named: name.text) }
            emit(
                json: .object([("removedSnapshot", .string(info.name))] + dryRunMark),
                human: ["\(options.dryRun ? "would remove" : "removed") snapshot \(info.name)"])
        }
    }

    /// Object changes as a plan (people) or one document (JSON): added and removed paths, and each changed
    /// object's properties old → new.
    private func emitChanges(_ changes: [ObjectChange], json: [(String, JSONValue)], summary: String, plan: Bool) {
        if options.json {
            let paths = { (kind: ObjectChange.Kind) -> JSONValue in
                .array(changes.filter { $0.kind == kind }.map { .string($0.name) })
            }
            let changed = changes.filter { $0.kind == .changed }.map { Self.changedDocument(path: $0.name, $0.differences) }
            output.result(
                JSONValue.object(json + [("added", paths(.added)), ("removed", paths(.removed)), ("changed", .array(changed))]).serialized)
            return
        }
        if plan {
            for change in changes {
                switch change.kind {
                case .added:
                    let type = change.metadata.contentType.flatMap { $0.isEmpty ? nil : $0 } ?? "no content type"
                    output.result("\(MessageText.oneLine(change.name)) (added: \(Formatting.size(change.metadata.size)), \(type))")
                case .removed:
                    output.result("\(MessageText.oneLine(change.name)) (removed)")
                case .changed:
                    emitPlan(name: change.name, change.differences)
                }
            }
        }
        output.result(summary)
    }

    /// "1 added, 2 removed, 3 changed".
    static func tally(_ changes: [ObjectChange]) -> String {
        ObjectChange.Kind.allCases.map { kind in "\(changes.filter { $0.kind == kind }.count) \(kind.rawValue)" }
            .joined(separator: ", ")
    }

    private func runPut(_ command: PutCommand, at here: SourceLocation) async throws {
        let content: Data
        let defaultName: String?
        switch command.source {
        case .file(let word):
            content = try located(word.location) { try self.files.read(word.text) }
            defaultName = URL(fileURLWithPath: word.text).lastPathComponent
        case .data(let word):
            content = Data(word.text.utf8)
            defaultName = nil
        }
        let destination: ObjectName
        if let word = command.destination {
            if command.raw {
                destination = try located(word.location) { try ObjectName(word.text) }
            } else if word.text.hasSuffix("/"), let defaultName {
                // Like cp: DEST/ is a folder, and the file keeps its name in it.
                let folder = try resolve(word)
                destination = try located(word.location) { try folder.child(defaultName).objectName() }
            } else {
                destination = try objectName(word, raw: false, at: here)
            }
        } else if let defaultName {
            destination = try located(here) { try self.current.child(defaultName).objectName() }
        } else {
            destination = try located(here) { try self.current.objectName() }
        }
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
            try await self.target.write(content, to: destination, options: writeOptions)
        }
        let description =
            "\(MessageText.oneLine(destination.rawValue)) (\(Formatting.size(metadata.size)), \(metadata.contentType.flatMap { $0.isEmpty ? nil : $0 } ?? "no content type"))"
        emit(json: metadata.jsonDocument, human: [(options.dryRun ? "would write " : "wrote ") + description])
    }

    // MARK: Targets

    /// The objects that targets name, in order: each path as given (it must be a valid name), each
    /// pattern expanded to its matches in name order. No target means the current reference.
    private func expand(_ targets: [Word], raw: Bool, at here: SourceLocation) async throws -> [(name: ObjectName, metadata: ObjectMetadata?, word: Word?)] {
        guard !targets.isEmpty else {
            return [(try located(here) { try self.current.objectName() }, nil, nil)]
        }
        var objects: [(name: ObjectName, metadata: ObjectMetadata?, word: Word?)] = []
        var seen = Set<ObjectName>()
        for word in targets {
            if !raw && ObjectPattern.isPattern(word) {
                let pattern = try located(word.location) {
                    try ObjectPattern(resolving: word, from: self.current, bucket: self.target.name)
                }
                var after: String?
                var matched = 0
                repeat {
                    try checkCancelled(at: here)
                    let page = try await located(word.location) {
                        try await self.target.scan(prefix: pattern.literalPrefix, after: after, limit: Self.scanPageSize)
                    }
                    for metadata in page.objects where pattern.matches(metadata.fullPath) {
                        let name = try located(word.location) { try ObjectName(metadata.fullPath) }
                        matched += 1
                        if seen.insert(name).inserted { objects.append((name, metadata, word)) }
                    }
                    after = page.resumeAfter
                } while after != nil
                if matched == 0 {
                    throw Diagnostic.running(
                        StorageError(.objectNotFound, "No object matches the pattern \(pattern.text)."), at: word.location)
                }
            } else {
                let name = try objectName(word, raw: raw, at: here)
                if seen.insert(name).inserted { objects.append((name, nil, word)) }
            }
        }
        return objects
    }

    /// Runs a bucket call on one target. An object-not-found gets a hint when the likely mistake is known:
    /// quoted wildcards (literal), a name that normalising changed (rule P1), or a folder (a prefix).
    private func onTarget<T>(_ word: Word?, name: ObjectName, at here: SourceLocation, _ body: () async throws -> T)
        async throws -> T
    {
        do {
            return try await body()
        } catch var error as StorageError {
            if error.code == .objectNotFound, let word { error.message += await notFoundHint(word, name: name) }
            throw Diagnostic.running(error, at: word?.location ?? here)
        }
    }

    private func notFoundHint(_ word: Word, name: ObjectName) async -> String {
        // The hint's own requests are not the user's: `rules why` keeps explaining the failed one.
        rules?.recordsDecisions = false
        defer { rules?.recordsDecisions = true }
        if zip(word.text.unicodeScalars, word.literal).contains(where: { $1 && ($0 == "*" || $0 == "?" || $0 == "[") }) {
            return " Its wildcards are quoted, so they are literal; unquote them to match a pattern."
        }
        let typed = word.text.hasPrefix("/") ? String(word.text.dropFirst()) : word.text
        if word.text.contains("//") || (typed.hasSuffix("/") && typed.count > 1) {
            if (try? await target.metadata(of: ObjectName(typed))) != nil {
                return " Paths are normalised (rule P1); to name '\(typed)' exactly, use --raw."
            }
        }
        if let page = try? await target.list(StoragePath(normalizing: name.rawValue), options: ListOptions(maxResults: 1)),
            !page.prefixes.isEmpty || !page.items.isEmpty
        {
            return " \(name.rawValue) is a folder (a prefix), not an object; to change the objects in it, use \(name.rawValue)/* or \(name.rawValue)/**."
        }
        return ""
    }

    // MARK: Helpers

    private func resolve(_ word: Word) throws -> StoragePath {
        try located(word.location) { try StoragePath.resolve(word.text, from: self.current, bucket: self.target.name) }
    }

    /// The object a path word names (or, without one, the current reference); with `raw`, the word exactly.
    private func objectName(_ word: Word?, raw: Bool = false, at here: SourceLocation) throws -> ObjectName {
        if raw, let word { return try located(word.location) { try ObjectName(word.text) } }
        let path = try word.map(resolve) ?? current
        return try located(word?.location ?? here) { try path.objectName() }
    }

    /// A path for cd and ls, which take no patterns.
    private func navigationPath(_ word: Word, command: String) throws -> StoragePath {
        if ObjectPattern.isPattern(word) {
            throw Diagnostic.running(
                .invalidArgument(
                    "`\(command)` takes a path, not a pattern; patterns work in meta set, meta unset and rm (quote * ? [ to use them literally)."),
                at: word.location)
        }
        return try resolve(word)
    }

    private func checkCancelled(at location: SourceLocation) throws {
        if isCancelled() { throw Diagnostic.running(Self.interruption, at: location) }
    }

    private func located<T>(_ location: SourceLocation, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: location)
        }
    }

    private func located<T>(_ location: SourceLocation, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StorageError {
            throw Diagnostic.running(error, at: location)
        }
    }

    /// `"dryRun": true` in the JSON results of commands that change things, during a dry run.
    private var dryRunMark: [(String, JSONValue)] { options.dryRun ? [("dryRun", .bool(true))] : [] }

    /// A dry run's header for a command: its words, and the snapshot it names.
    static func header(_ command: Command) -> String {
        switch command {
        case .snapshot(.save(let name)), .snapshot(.restore(let name)), .snapshot(.remove(let name)): "\(command.name) \(name.text)"
        case .rulesLoad(let file): "rules load \(file.text)"
        default: command.name
        }
    }

    private func emit(json: JSONValue, human: [String]) {
        if options.json {
            output.result(json.serialized)
        } else {
            human.forEach(output.result)
        }
    }

    /// `meta get` for people: one aligned line per property, custom keys as custom.NAME.
    static func describe(_ metadata: ObjectMetadata) -> [String] {
        var rows: [[String]] = [
            ["bucket", metadata.bucket],
            ["fullPath", metadata.fullPath],
            ["name", metadata.name],
            ["size", "\(metadata.size) (\(Formatting.size(metadata.size)))"],
        ]
        for property in WritableProperty.allCases {
            if let value = metadata[property] { rows.append([property.rawValue, value]) }
        }
        for (key, value) in metadata.customMetadata.sortedByKeyBytes { rows.append(["custom." + key, value]) }
        rows += [
            ["timeCreated", metadata.timeCreated.rfc3339],
            ["updated", metadata.updated.rfc3339],
            ["generation", String(metadata.generation)],
            ["metageneration", String(metadata.metageneration)],
            ["md5Hash", metadata.md5Hash],
        ]
        return Formatting.columns(rows.map { $0.map(MessageText.oneLine) })
    }
}
