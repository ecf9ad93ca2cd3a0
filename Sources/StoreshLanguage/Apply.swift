import Foundation
import StoreshCore

/// Where apply records what it did (rule X4): each applied change before the run reports it, so that a run
/// stopped anywhere (Ctrl-C, kill -9, a lost network) can be finished or undone.
public protocol ApplyJournal: AnyObject, Sendable {
    /// Where the journal is, for messages (`storesh run --resume PATH`).
    var location: String { get }
    /// The change numbered `index` landed, leaving the object as `result` (nil: deleted). `found` when a resumed
    /// run found it already applied (its first run applied it and stopped before recording it).
    func applied(_ index: Int, result: ObjectMetadata?, found: Bool) throws
    /// The change numbered `index` failed and was not applied.
    func failed(_ index: Int, _ error: StorageError) throws
    /// How the run ended.
    func ended(_ outcome: ApplyOutcome) throws
}

/// How far apply has come, for a progress line.
public struct ApplyProgress: Sendable {
    public var done: Int
    public var total: Int
    public var failed: Int
    public var started: ContinuousClock.Instant
}

/// How an apply ended.
public struct ApplyOutcome: Sendable {
    public enum End: String, Sendable {
        /// Every change was applied.
        case complete
        /// A change failed (without `--keep-going`): the rest were not sent.
        case stopped
        /// Ctrl-C: what was in flight finished; the rest were not sent.
        case interrupted
        /// With `--keep-going`: every change was tried; some failed.
        case finishedWithFailures = "finished-with-failures"
    }

    public var end: End
    /// Indexes of the changes applied, in this run or before it (a resumed run).
    public var applied: Set<Int>
    /// Changes that failed, with why.
    public var failures: [(index: Int, error: StorageError)]
    /// Changes not sent.
    public var notSent: [Int]
}

/// Sends a plan's changes to a bucket (rules X2–X5): each with the precondition of the state it was planned from
/// (G5), many at once but never two for one object together and never a command's before the previous
/// command's, recorded in the journal as each lands.
public final class PlanApplier: @unchecked Sendable {
    let bucket: any Bucket
    let changes: [PlannedChange]
    let parallel: Int
    let keepGoing: Bool
    let journal: (any ApplyJournal)?
    let isCancelled: @Sendable () -> Bool
    let progress: (@Sendable (ApplyProgress) -> Void)?

    private let lock = NSLock()
    /// The state each object was left in by a change of this run (or of the run a journal resumes): later
    /// changes of the same object are guarded by it, not by the plan's guess (a write's generation is the
    /// service's to choose).
    private var landed: [String: ObjectMetadata?] = [:]
    private var applied: Set<Int> = []
    private var failures: [(index: Int, error: StorageError)] = []

    public init(
        bucket: any Bucket, changes: [PlannedChange], parallel: Int, keepGoing: Bool, journal: (any ApplyJournal)?,
        alreadyApplied: [Int: ObjectMetadata?] = [:], isCancelled: @escaping @Sendable () -> Bool,
        progress: (@Sendable (ApplyProgress) -> Void)? = nil
    ) {
        self.bucket = bucket
        self.changes = changes
        self.parallel = max(1, parallel)
        self.keepGoing = keepGoing
        self.journal = journal
        self.isCancelled = isCancelled
        self.progress = progress
        for (index, result) in alreadyApplied.sorted(by: { $0.key < $1.key }) where changes.indices.contains(index) {
            applied.insert(index)
            landed[changes[index].object] = .some(result)
        }
    }

    /// In a resumed run a change may have landed before the journal heard of it (the first run was killed in
    /// between): a refused precondition is then checked against the planned state.
    private var checkForLanded = false

    /// Applies every change not applied yet, wave by wave: a wave holds changes of one command, each object once,
    /// sent at most `parallel` at a time.
    public func apply(resumed: Bool = false) async -> ApplyOutcome {
        checkForLanded = resumed
        let started = ContinuousClock.now
        var pending = changes.indices.filter { !applied.contains($0) }
        var stopped = false
        var interrupted = false
        while !pending.isEmpty && !stopped && !interrupted {
            var wave: [Int] = []
            var objects: Set<String> = []
            let step = changes[pending[0]].step
            while let next = pending.first, changes[next].step == step, !objects.contains(changes[next].object) {
                wave.append(next)
                objects.insert(changes[next].object)
                pending.removeFirst()
            }
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for index in wave {
                    if running == parallel {
                        await group.next()
                        running -= 1
                    }
                    if isCancelled() { interrupted = true }
                    if lock.withLock({ !failures.isEmpty }) && !keepGoing { stopped = true }
                    if interrupted || stopped {
                        pending.insert(contentsOf: wave.drop(while: { $0 != index }), at: 0)
                        break
                    }
                    group.addTask { await self.send(index, started: started) }
                    running += 1
                }
                await group.waitForAll()
            }
            if lock.withLock({ !failures.isEmpty }) && !keepGoing { stopped = true }
        }
        let outcome = lock.withLock {
            ApplyOutcome(
                end: interrupted ? .interrupted : stopped ? .stopped : failures.isEmpty ? .complete : .finishedWithFailures,
                applied: applied, failures: failures.sorted { $0.index < $1.index },
                notSent: changes.indices.filter { index in !applied.contains(index) && !failures.contains { $0.index == index } })
        }
        try? journal?.ended(outcome)
        return outcome
    }

    private func send(_ index: Int, started: ContinuousClock.Instant) async {
        let change = changes[index]
        let current: ObjectMetadata? = lock.withLock { landed[change.object] ?? change.before }
        do {
            let result = try await perform(change, from: current)
            try record(index, result: result, found: false)
        } catch let error as StorageError {
            if checkForLanded, error.code == .preconditionFailed || error.code == .objectNotFound,
                let now = try? await bucket.metadataIfPresent(of: ObjectName(change.object)), Self.isAsPlanned(now, change)
            {
                try? record(index, result: now, found: true)
            } else {
                lock.withLock { failures.append((index, error)) }
                try? journal?.failed(index, error)
            }
        } catch {
            let failure = StorageError.internalError("\(error)")
            lock.withLock { failures.append((index, failure)) }
            try? journal?.failed(index, failure)
        }
        if let progress {
            let snapshot = lock.withLock {
                ApplyProgress(done: applied.count + failures.count, total: changes.count, failed: failures.count, started: started)
            }
            progress(snapshot)
        }
    }

    private func record(_ index: Int, result: ObjectMetadata?, found: Bool) throws {
        // Journal first: a change is reported only once it is recorded (rule X4).
        try journal?.applied(index, result: result, found: found)
        lock.withLock {
            applied.insert(index)
            landed[changes[index].object] = .some(result)
        }
    }

    /// One change, guarded by the state it goes from (rule G5).
    private func perform(_ change: PlannedChange, from current: ObjectMetadata?) async throws -> ObjectMetadata? {
        let name = try ObjectName(change.object)
        guard let after = change.after else {
            guard let current else { throw StorageError.objectNotFound(change.object) }
            try await bucket.delete(name, precondition: .sameContent(as: current))
            return nil
        }
        if change.writesContent {
            var options = WriteOptions(customMetadata: after.customMetadata, expectedMD5: after.md5Hash)
            for property in WritableProperty.allCases { if let value = after[property] { options.properties[property] = value } }
            let precondition = current.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
            if let source = change.source {
                return try await bucket.write(from: source, to: name, options: options, precondition: precondition)
            }
            guard let content = change.content else {
                throw StorageError.invalidArgument("The content of \(change.object) (\(change.contentOrigin ?? "a file")) is not at hand; nothing was written.")
            }
            return try await bucket.write(content, to: name, options: options, precondition: precondition)
        }
        guard let current else { throw StorageError.objectNotFound(change.object) }
        return try await bucket.applyMetadata(of: name, from: current, to: after)
    }

    /// Whether the object is as the change would leave it (a resumed run's change that had landed unrecorded).
    static func isAsPlanned(_ object: ObjectMetadata?, _ change: PlannedChange) -> Bool {
        guard let after = change.after else { return object == nil }
        guard let object else { return false }
        if change.writesContent && object.md5Hash != after.md5Hash { return false }
        return object.differences(to: after).isEmpty
    }
}

// MARK: The journal's records

/// The journal's lines (rule X4), one JSON document each: a header, the whole plan, then one line per change
/// applied or failed, and how the run ended. Content of planned writes is kept (base64) so that a resumed run
/// can send it; no credential is ever written.
public enum JournalRecord {
    public static let format = "storesh-journal"
    public static let version = 1

    public static func header(bucket: String, source: String, changes: Int, created: Timestamp) -> String {
        JSONValue.object([
            ("format", .string(format)), ("version", .integer(Int64(version))), ("bucket", .string(bucket)),
            ("source", .string(source)), ("created", .string(created.rfc3339)), ("changes", .integer(Int64(changes))),
        ]).serialized
    }

    public static func change(_ index: Int, _ change: PlannedChange) -> String {
        var members: [(String, JSONValue)] = [
            ("change", .integer(Int64(index))), ("step", .integer(Int64(change.step))), ("object", .string(change.object)),
            ("before", change.before?.jsonDocument ?? .null), ("after", change.after?.jsonDocument ?? .null),
        ]
        if let content = change.content { members.append(("content", .string(content.base64EncodedString()))) }
        // A large file is named, not copied: a resumed run reads it again (and checks it is unchanged).
        if let origin = change.contentOrigin { members.append(("contentFrom", .string(origin))) }
        return JSONValue.object(members).serialized
    }

    public static func applied(_ index: Int, result: ObjectMetadata?, found: Bool) -> String {
        var members: [(String, JSONValue)] = [("applied", .integer(Int64(index))), ("result", result?.jsonDocument ?? .null)]
        if found { members.append(("found", .bool(true))) }
        return JSONValue.object(members).serialized
    }

    public static func failed(_ index: Int, _ error: StorageError) -> String {
        JSONValue.object([
            ("failed", .integer(Int64(index))), ("code", .string(error.code.name)), ("message", .string(error.message)),
        ]).serialized
    }

    public static func ended(_ outcome: ApplyOutcome) -> String {
        JSONValue.object([
            ("end", .string(outcome.end.rawValue)), ("applied", .integer(Int64(outcome.applied.count))),
            ("failed", .integer(Int64(outcome.failures.count))), ("notSent", .integer(Int64(outcome.notSent.count))),
        ]).serialized
    }

    /// A journal read back: its bucket, its plan, and what was applied (with the state each applied change left).
    public struct Contents: Sendable {
        public var bucket: String
        public var source: String
        public var changes: [PlannedChange]
        public var applied: [Int: ObjectMetadata?]
        /// How the last run on it ended; nil when it never said (kill -9, a lost machine).
        public var end: String?
    }

    /// Reads a journal; anything that is not one is invalid-argument naming the line. A last line cut short (the
    /// run was killed while writing it) is ignored: its change is then checked against the bucket on resume.
    /// `reopen` opens the large files a plan names, for a run that will send them (nil: they are not needed, as in
    /// an undo, which sends no content).
    public static func parse(
        _ data: Data, source: String, reopen: ((String) throws(StorageError) -> any ContentSource)? = nil
    ) throws(StorageError) -> Contents {
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        func document(_ index: Int) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(lines[index]))) as? [String: Any]
        }
        guard !lines.isEmpty, let header = document(0), header["format"] as? String == format,
            let bucket = header["bucket"] as? String, let count = (header["changes"] as? NSNumber)?.intValue
        else {
            throw .invalidArgument("\(source) is not a storesh journal (its first line is not a journal header).")
        }
        guard (header["version"] as? NSNumber)?.intValue == version else {
            throw .invalidArgument("\(source) is a journal of another version of storesh; this one reads version \(version).")
        }
        var contents = Contents(bucket: bucket, source: header["source"] as? String ?? "", changes: [], applied: [:])
        for number in 1..<lines.count {
            guard let line = document(number) else {
                if number == lines.count - 1 && data.last != UInt8(ascii: "\n") { break }
                throw .invalidArgument("\(source):\(number + 1): not a journal record.")
            }
            func metadata(_ key: String) throws(StorageError) -> ObjectMetadata? {
                guard let value = line[key], !(value is NSNull) else { return nil }
                guard let document = value as? [String: Any], let metadata = ObjectMetadata(jsonDocument: document) else {
                    throw .invalidArgument("\(source):\(number + 1): '\(key)' is not a metadata document.")
                }
                return metadata
            }
            if let end = line["end"] as? String {
                contents.end = end
            } else if let index = (line["change"] as? NSNumber)?.intValue {
                guard index == contents.changes.count, let object = line["object"] as? String else {
                    throw .invalidArgument("\(source):\(number + 1): change \(index) is out of order.")
                }
                var content: Data?
                if let text = line["content"] as? String {
                    guard let data = Data(base64Encoded: text) else { throw .invalidArgument("\(source):\(number + 1): bad content.") }
                    content = data
                }
                var reopened: (any ContentSource)?
                let origin = line["contentFrom"] as? String
                if let origin, let reopen { reopened = try reopen(origin) }
                let after = try metadata("after")
                if let reopened, let after, reopened.md5Base64 != after.md5Hash || reopened.size != after.size {
                    throw .invalidArgument("\(origin ?? "The file") changed since the run was planned (its MD5 is no longer \(after.md5Hash)); it is not uploaded.")
                }
                var change = PlannedChange(
                    object: object, before: try metadata("before"), after: after, content: content, source: reopened,
                    step: (line["step"] as? NSNumber)?.intValue ?? 0)
                change.contentOrigin = origin
                contents.changes.append(change)
            } else if let index = (line["applied"] as? NSNumber)?.intValue {
                guard contents.changes.indices.contains(index) else {
                    throw .invalidArgument("\(source):\(number + 1): no change \(index) in the plan.")
                }
                contents.applied[index] = .some(try metadata("result"))
            }
        }
        guard contents.changes.count == count else {
            throw .invalidArgument("\(source): the plan holds \(contents.changes.count) of its \(count) changes; the journal was cut short before its run began.")
        }
        return contents
    }

    /// The changes that put back what `journal`'s applied changes changed (rule X4), newest first, each guarded
    /// by the state the change left; and the applied changes that cannot be undone, with why.
    public static func undo(_ journal: Contents) -> (changes: [PlannedChange], impossible: [(object: String, reason: String)]) {
        var changes: [PlannedChange] = []
        var impossible: [(String, String)] = []
        var seen: Set<String> = []
        // Newest first; an object changed several times goes back to its state before the first change.
        for index in journal.applied.keys.sorted(by: >) {
            let change = journal.changes[index]
            guard let result = journal.applied[index] else { continue }
            let firstIndex = journal.applied.keys.filter { journal.changes[$0].object == change.object }.min() ?? index
            guard !seen.contains(change.object) else { continue }
            seen.insert(change.object)
            let original = journal.changes[firstIndex].before
            let step = changes.count
            switch (original, result) {
            case (nil, nil):
                continue
            case (nil, let now?):
                changes.append(PlannedChange(object: change.object, before: now, after: nil, step: step))
            case (let old?, let now?) where old.generation == now.generation:
                var restored = now
                for property in WritableProperty.allCases { restored[property] = old[property] }
                restored.customMetadata = old.customMetadata
                changes.append(PlannedChange(object: change.object, before: now, after: restored, step: step))
            case (_?, _):
                impossible.append((change.object, "its old content was replaced or deleted, and the journal keeps only metadata"))
            }
        }
        // Undo runs as one command: every object at most once.
        return (changes.map { var change = $0; change.step = 0; return change }, impossible)
    }
}

/// What the program around the interpreter gives apply: where the journal goes and how progress is shown.
public struct ApplySettings {
    /// At a typical round trip of 30 ms, 32 changes in flight are about the 1,000 writes a second that Cloud Storage
    /// takes from a bucket before it ramps up: enough to keep a remote service busy without tripping its limits
    /// (a 429 is retried after its Retry-After anyway). Over HTTP/2 they share one connection.
    public static let defaultParallel = 32

    /// Opens the journal of a run about to apply `changes` (the program chooses the file and writes the plan).
    public var openJournal: (([PlannedChange]) throws -> any ApplyJournal)?
    /// Called as changes land (from any thread); nil shows nothing.
    public var progress: (@Sendable (ApplyProgress) -> Void)?
    /// Called once apply ends, to clear a progress line.
    public var progressEnded: (() -> Void)?

    public init() {}
}
