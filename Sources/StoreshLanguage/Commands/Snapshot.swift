import Foundation
import StoreshCore

/// What `explain` says of the `snapshot` commands: storesh's own, no request.
private let snapshotExplanation = Explainer.local(
    "a snapshot of the whole bucket file: storesh's own, no request",
    note: "Cloud Storage has no snapshots of a bucket; object versioning keeps old generations of each object instead.")

/// A snapshot's name, checked as it is read.
func snapshotName(_ arguments: inout CommandArguments) throws(Diagnostic) -> Word {
    let word = try arguments.required("a snapshot NAME")
    do {
        try SnapshotInfo.validate(name: word.text)
    } catch {
        throw Diagnostic.beforeRunning(error, at: word.location)
    }
    return word
}

extension Session {
    /// The bucket's snapshots, or the error of a bucket that keeps none.
    func requireSnapshots(_ here: SourceLocation) throws -> any SnapshotStore {
        guard let store = target.snapshotStore else {
            throw Diagnostic.running(.invalidArgument("This bucket keeps no snapshots."), at: here)
        }
        return store
    }
}

/// A snapshot command that names one snapshot (`snapshot save|restore|rm NAME`): read the same way, headed by its
/// name in a dry run.
package protocol NamedSnapshotCommand: LocalCommand {
    var snapshot: Word { get }
    init(_ snapshot: Word)
}

extension NamedSnapshotCommand {
    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        self.init(try snapshotName(&arguments))
        try arguments.expectEnd()
    }

    package var header: String { "\(name) \(snapshot.text)" }

    package static var explanation: ExplainedRequest { snapshotExplanation }
}

/// `snapshot save NAME`: the bucket's current state kept under NAME.
package struct SnapshotSaveCommand: NamedSnapshotCommand, Equatable {
    package var snapshot: Word

    package init(_ snapshot: Word) { self.snapshot = snapshot }

    package static let declaration = CommandDeclaration(
        "snapshot save", group: .snapshots, usage: "snapshot save NAME",
        summary: "keep the bucket's current state under NAME (cheap at any size)",
        details: [
            "NAME: 1 to 100 letters, digits, '.', '_' or '-'. Later changes never alter a snapshot.",
            "In a script, the snapshot is part of the script's transaction. `storesh run --snapshot",
            "NAME FILE` takes one before the script's first command. Rules do not apply to snapshots.",
        ], example: "snapshot save before-fix",
        changesBucket: true, requires: .snapshots, completion: .snapshotNames(count: 1))

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSnapshots(here)
        let info = try await session.located(snapshot.location) { try await store.saveSnapshot(named: snapshot.text) }
        session.deliver(.snapshotSaved(info, dryRun: session.options.dryRun))
        return .next
    }
}

/// `snapshot list`: the snapshots, oldest first.
package struct SnapshotListCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "snapshot list", group: .snapshots, usage: "snapshot list",
        summary: "the snapshots, oldest first, with their object counts",
        example: "snapshot list", requires: .snapshots)

    package static var explanation: ExplainedRequest { snapshotExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.snapshots(try await session.requireSnapshots(here).snapshots()))
        return .next
    }
}

/// `snapshot diff NAME [NAME2]`: what changed from one snapshot to another, or to the bucket as it is now.
package struct SnapshotDiffCommand: LocalCommand, Equatable {
    package var from: Word
    package var to: Word?

    package init(from: Word, to: Word?) {
        self.from = from
        self.to = to
    }

    package static let declaration = CommandDeclaration(
        "snapshot diff", group: .snapshots, usage: "snapshot diff NAME [NAME2]",
        summary: "what changed from snapshot NAME to NAME2 (default: to now)",
        details: [
            "Objects added (+), removed (-), and for each changed one, each property old → new,",
            "as in a dry-run plan; new content shows as generation, size and md5Hash.",
        ], example: "snapshot diff before-fix",
        requires: .snapshots, completion: .snapshotNames(count: 2))

    package static var explanation: ExplainedRequest { snapshotExplanation }

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        from = try snapshotName(&arguments)
        to = arguments.isAtEnd ? nil : try snapshotName(&arguments)
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSnapshots(here)
        // An unknown name is reported at its own word.
        let known = Set(try await store.snapshots().map(\.name))
        let unknown = [from, to].compactMap { $0 }.first { !known.contains($0.text) }
        let results = SnapshotChanges(session, activity: "comparing", shown: true)
        try await session.located(unknown?.location ?? from.location) {
            try await store.changes(from: .snapshot(from.text), to: to.map { .snapshot($0.text) } ?? .current) {
                results.add($0)
            }
        }
        results.finish(head: [("from", .string(from.text)), ("to", to.map { .string($0.text) } ?? .null)]) { counts in
            HumanRenderer.snapshotDiffSummary(from: from.text, to: to?.text, counts: counts)
        }
        return .next
    }
}

/// `snapshot restore NAME`: the bucket exactly as it was in the snapshot.
package struct SnapshotRestoreCommand: NamedSnapshotCommand, Equatable {
    package var snapshot: Word

    package init(_ snapshot: Word) { self.snapshot = snapshot }

    package static let declaration = CommandDeclaration(
        "snapshot restore", group: .snapshots, usage: "snapshot restore NAME",
        summary: "make the bucket exactly as it was in snapshot NAME",
        details: [
            "Objects made since are deleted; changed and deleted ones come back with their content,",
            "metadata and generations. The snapshot is kept. With --dry-run, prints what it would change.",
        ], example: "snapshot restore before-fix",
        changesBucket: true, requires: .snapshots, completion: .snapshotNames(count: 1))

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSnapshots(here)
        let dryRun = session.options.dryRun
        let results = SnapshotChanges(session, activity: dryRun ? "planning" : "restoring", shown: dryRun)
        try await session.located(snapshot.location) {
            try await store.restoreSnapshot(named: snapshot.text) { results.add($0) }
        }
        if !dryRun { session.reportedChanges += max(results.count, 1) }
        results.finish(head: [("restored", .string(snapshot.text))] + (dryRun ? [("dryRun", .bool(true))] : [])) {
            counts in
            HumanRenderer.snapshotRestoreSummary(snapshot.text, counts: counts, dryRun: dryRun)
        }
        return .next
    }
}

/// `snapshot rm NAME`: forgets a snapshot and what only it kept.
package struct SnapshotRemoveCommand: NamedSnapshotCommand, Equatable {
    package var snapshot: Word

    package init(_ snapshot: Word) { self.snapshot = snapshot }

    package static let declaration = CommandDeclaration(
        "snapshot rm", group: .snapshots, usage: "snapshot rm NAME",
        summary: "forget snapshot NAME and what only it kept",
        example: "snapshot rm before-fix",
        changesBucket: true, requires: .snapshots, completion: .snapshotNames(count: 1))

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let store = try session.requireSnapshots(here)
        let info = try await session.located(snapshot.location) { try await store.removeSnapshot(named: snapshot.text) }
        session.deliver(.snapshotRemoved(info, dryRun: session.options.dryRun))
        return .next
    }
}

/// The changes of a snapshot diff or restore, printed as they come for people (each object's lines, then the
/// tally; `--summary` the tally alone), so that a million differences cost no memory. As JSON, the command's one
/// document (`{…, "added": […], "removed": […], "changed": […]}`) is written at the end from three spools
/// (`SpooledText`), each kind's elements in the order they came: bounded memory too.
final class SnapshotChanges {
    private let session: Session
    /// Whether each change is printed (a diff, a restore's dry run), or only the tally (a restore).
    private let shown: Bool
    private var counts: [ObjectChange.Kind: Int] = [:]
    private(set) var count = 0
    /// As JSON: each kind's elements, serialized, comma-separated.
    private let spools: [ObjectChange.Kind: SpooledText]

    init(_ session: Session, activity: String, shown: Bool) {
        self.session = session
        self.shown = shown && !session.options.summaryOnly
        spools = session.options.json ? [.added: SpooledText(), .removed: SpooledText(), .changed: SpooledText()] : [:]
        if !(self.shown && session.options.printsEachObjectOnTerminal) { session.progress?.begin(activity) }
    }

    func add(_ change: ObjectChange) {
        count += 1
        counts[change.kind, default: 0] += 1
        session.progress?.advance()
        if let spool = spools[change.kind] {
            let element =
                change.kind == .changed
                ? JSONRenderer.changedDocument(path: change.name, change.differences) : .string(change.name)
            return spool.append(Data((((counts[change.kind] ?? 0) > 1 ? "," : "") + element.serialized).utf8))
        }
        if shown { HumanRenderer.changes([change]).forEach(say) }
    }

    /// The last line, `summary` of how many changed by kind; as JSON, the document whose first members are `head`.
    func finish(head: [(String, JSONValue)], summary: ([ObjectChange.Kind: Int]) -> String) {
        session.progress?.end()
        guard !spools.isEmpty else { return say(summary(counts)) }
        if let failure = spools.values.compactMap(\.failure).first {
            session.output.notice(
                "the JSON document of the changes could not be held to be written whole (\(failure)); it is not written"
            )
            return
        }
        // The head's members, then each kind's array, as JSONRenderer writes a document: compact, on one line.
        var text = String(JSONValue.object(head).serialized.dropLast())
        for (key, kind) in [("added", ObjectChange.Kind.added), ("removed", .removed), ("changed", .changed)] {
            text += (text.hasSuffix("{") ? "" : ",") + JSONValue.quoted(key) + ":["
            session.output.resultBytes(Data(text.utf8))
            spools[kind]?.drain { session.output.resultBytes($0) }
            text = "]"
        }
        session.output.resultBytes(Data("]}\n".utf8))
    }

    private func say(_ line: String) { session.output.result(line, wrappedTo: session.options.terminalWidth) }
}
