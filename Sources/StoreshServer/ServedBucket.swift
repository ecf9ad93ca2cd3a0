import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules

/// The bucket file a server serves, shared by every request: reads run in parallel on connections of their own,
/// and changes are serialised by one writer that commits the changes waiting at the same moment together
/// (group commit). Each change is still answered only once its commit is durable (rule V4), but concurrent clients
/// share one disk flush instead of queueing for one each.
///
/// A bucket a client names for the first time has no file yet (rule V6): it is *pending*. Its reads are those of
/// an empty bucket, its rules those the project gives it (else a new bucket's), and its file is made by the
/// writer, in the step that commits its first changes, and only kept when one of them landed: a request that is
/// refused (no name, 412, 413, a checksum that does not match, the rules) leaves no bucket file behind.
final class ServedBucket: @unchecked Sendable {
    /// The most changes one commit carries.
    static let maximumGroup = 256

    let name: String
    /// The bucket file (there once the bucket is no longer pending).
    let path: String
    private let options: LocalBucketOptions
    private let readerCount: Int
    /// The file's connections; nil while the bucket is pending.
    private var files: Files?
    /// While pending: an empty bucket's reads (shared by every pending bucket of the server), and where the
    /// project's rules for it wait to be stored in its file.
    private let pending: PendingReads?
    private let pendingRules = MemoryRulesStore()
    /// Where a pending bucket takes its place among the open buckets when its file is made.
    private let budget: OpenBucketBudget?
    /// Told once the file of a pending bucket is made (for the terminal's log).
    private let onCreate: @Sendable (_ bucket: String, _ path: String) -> Void
    /// The writer of a file made for a pending bucket that holds landed changes, while its readers could not be
    /// opened yet (they are tried again after each commit): never removed again.
    private var keptWriter: LocalBucket?
    /// The bucket's security rules, reloaded when another process (the shell, `rules load`) changed them.
    private let rules: RulesSession
    private var rulesReadAt: Int64?
    private let rulesLock = NSLock()

    private let lock = NSLock()
    private var nextReader = 0
    private var waiting: [PendingChange] = []
    private var committing = false
    private var closed = false
    private var commitCount = 0
    private var committedChangeCount = 0
    /// Commits that carried clients' changes so far, and those changes (concurrent changes share commits).
    var commits: Int { lock.withLock { commitCount } }
    var committedChanges: Int { lock.withLock { committedChangeCount } }

    /// The connections to the bucket file.
    private struct Files {
        let writer: LocalBucket
        let readers: [LocalBucket]
        /// Changes to the file by anyone, for the live page.
        let watch: BucketWatch
        /// A connection of its own, whose `data_version` says when anyone committed to the file since the rules
        /// were last read: only then are the stored rules read again, not on every request.
        let rulesReader: LocalBucket

        init(_ writer: LocalBucket, options: LocalBucketOptions, readerCount: Int) throws(StorageError) {
            var readOptions = options
            readOptions.createIfMissing = false
            self.writer = writer
            readers = try (0..<max(1, readerCount)).map { _ throws(StorageError) in try LocalBucket.open(at: writer.path, options: readOptions) }
            watch = BucketWatch(try LocalBucket.open(at: writer.path, options: readOptions))
            rulesReader = try LocalBucket.open(at: writer.path, options: readOptions)
        }

        func close() {
            watch.close()
            rulesReader.close()
            for reader in readers { reader.close() }
            writer.close()
        }
    }

    /// Serves `bucket` (a local bucket file, open), with `readerCount` further connections for reads.
    init(_ bucket: LocalBucket, options: LocalBucketOptions, readerCount: Int) throws {
        name = bucket.name
        path = bucket.path
        self.options = options
        self.readerCount = readerCount
        let files = try Files(bucket, options: options, readerCount: readerCount)
        self.files = files
        pending = nil
        budget = nil
        onCreate = { _, _ in }
        rules = try RulesSession(store: bucket, clock: options.clock)
        rulesReadAt = try files.rulesReader.changeCounter()
    }

    /// A bucket that has no file yet, to be made at `path` when its first change lands.
    init(
        pendingAt path: String, name: String, reads: PendingReads, options: LocalBucketOptions, readerCount: Int,
        budget: OpenBucketBudget, onCreate: @escaping @Sendable (String, String) -> Void
    ) throws {
        self.budget = budget
        self.name = name
        self.path = path
        self.options = options
        self.readerCount = readerCount
        pending = reads
        self.onCreate = onCreate
        rules = try RulesSession(store: nil, clock: options.clock)
    }

    /// Whether the bucket has no file yet (no change of it has landed).
    var isPending: Bool { lock.withLock { files == nil } }

    func close() {
        let (open, kept): (Files?, LocalBucket?) = lock.withLock {
            closed = true
            return (files, keptWriter)
        }
        open?.close()
        if open == nil { kept?.close() }
    }

    /// A connection for reads, taken in turn; an empty bucket's while the bucket is pending.
    var reader: LocalBucket {
        lock.withLock {
            guard let files else { return pending!.reader }
            nextReader = (nextReader + 1) % files.readers.count
            return files.readers[nextReader]
        }
    }

    /// Changes to the file by anyone, for the live page; nil while the bucket is pending (no page shows it).
    var watch: BucketWatch? { lock.withLock { files?.watch } }

    // MARK: Rules

    /// The rules in force for a request made as `identity` (nil: signed out), as the bucket keeps them now. Its
    /// decisions go to the request's log entry (`RequestTrace`), wherever the request's change runs.
    func rulesSession(as identity: Identity?) throws -> RulesSession {
        try reloadRulesIfChanged()
        guard let trace = RequestTrace.current else { return rules.session(as: identity) }
        return rules.session(as: identity, observer: { request, decision in trace.decided(request, decision) })
    }

    /// Loads security rules into the bucket (checked first: a ruleset with an error changes nothing). A pending
    /// bucket's file is made for them: they are a change that lands.
    func loadRules(source: String, origin: String) async throws {
        // Not one of the clients' changes (`storesh serve`'s rules file, or the tests' setRules, put them in force).
        try await change(counted: false) { transaction -> Void in
            guard let store = transaction.rulesStore else { throw StorageError.internalError("The bucket keeps no rules.") }
            try self.rules.loadRules(source: source, origin: origin, into: store)
        }
        try reloadRulesIfChanged()
    }

    /// Puts the project's rules in force in a bucket no request can reach yet (one just opened, or pending),
    /// without the writer's queue: in its file, or, while it has none, until its file is made.
    func loadRulesNow(_ rules: ServedBuckets.ProjectRules) throws {
        let store: any RulesStore = lock.withLock { files?.writer } ?? pendingRules
        try self.rules.loadRules(source: rules.source, origin: rules.origin, into: store)
    }

    /// Reads the stored rules again when the file changed since they were last read (by this server's writer, or
    /// by another process: the shell's `rules load`). The check is one question to SQLite, under a lock that
    /// keeps the connection to one request at a time. A pending bucket's rules are only this server's.
    private func reloadRulesIfChanged() throws {
        guard let rulesReader = lock.withLock({ files?.rulesReader }) else { return }
        try rulesLock.withLock {
            let now = try rulesReader.changeCounter()
            guard now != rulesReadAt else { return }
            try rules.reloadRules(from: rulesReader)
            rulesReadAt = now
        }
    }

    // MARK: Changes

    /// Runs `body` as one change of the bucket, in a commit shared with the changes waiting beside it; returns
    /// once that commit is durable. A change that fails is undone alone (a savepoint); the others still land.
    /// `counted`: whether `committedChanges` counts it (the clients' changes).
    func change<Value: Sendable>(
        counted: Bool = true, _ body: @escaping @Sendable (any BucketTransaction) async throws -> Value
    ) async throws -> Value {
        let result: Result<any Sendable, any Error> = await withCheckedContinuation { continuation in
            let pending = PendingChange(run: { try await body($0) }, finish: { continuation.resume(returning: $0) }, counted: counted)
            let starts = lock.withLock {
                waiting.append(pending)
                if committing { return false }
                committing = true
                return true
            }
            if starts { Task { await self.commitWaitingChanges() } }
        }
        return try result.get() as! Value
    }

    /// Makes the bucket's file now, if it has none (a bucket a client creates, or that the project names).
    func materialize() async throws {
        guard isPending else { return }
        try await change(counted: false) { _ in }
    }

    /// Commits the waiting changes a group at a time until none wait.
    private func commitWaitingChanges() async {
        // Bounded: each round takes at least one change, and ends when none wait.
        while true {
            let group: [PendingChange] = lock.withLock {
                let group = Array(waiting.prefix(Self.maximumGroup))
                waiting.removeFirst(group.count)
                if group.isEmpty { committing = false }
                return group
            }
            if group.isEmpty { return }
            let writer: LocalBucket
            let made: Bool
            do {
                (writer, made) = try openWriter()
            } catch {
                for change in group { change.finish(.failure(error)) }
                continue
            }
            var results: [Result<any Sendable, any Error>] = []
            results.reserveCapacity(group.count)
            do {
                try await writer.withTransaction(forWriting: true) { transaction in
                    for change in group {
                        do {
                            results.append(.success(try await transaction.withSavepoint { try await change.run(transaction) }))
                        } catch {
                            results.append(.failure(error))
                        }
                    }
                    return .commit(())
                }
                let landed = zip(group, results).filter { change, result in
                    if case .success = result { change.counted } else { false }
                }.count
                // The commits that carried the clients' changes (not those of rules alone, or of failures only).
                if landed > 0 { lock.withLock { (commitCount, committedChangeCount) = (commitCount + 1, committedChangeCount + landed) } }
            } catch {
                // The commit failed (a busy or full disk): nothing of the group landed.
                results = group.map { _ in .failure(error) }
            }
            if lock.withLock({ files == nil }) {
                settleFile(writer, made: made, landed: results.contains { if case .success = $0 { true } else { false } })
            }
            for (change, result) in zip(group, results) { change.finish(result) }
        }
    }

    /// The writer: the file's; for a pending bucket, a new file's (made whole, then linked into place), which no
    /// other connection of this server has opened yet (`made`), or the file someone else made meanwhile.
    private func openWriter() throws -> (writer: LocalBucket, made: Bool) {
        if let writer = lock.withLock({ files?.writer ?? keptWriter }) { return (writer, false) }
        if lock.withLock({ closed }) { throw StorageError(.unavailable, "storesh serve is stopping; try again.") }
        try budget?.take(for: name)
        var fileOptions = options
        fileOptions.nameForNewBucket = name
        fileOptions.createIfMissing = false
        let made: LocalBucket?
        let writer: LocalBucket
        do {
            made = try LocalBucket.create(newAt: path, name: name, options: fileOptions)
            writer = try made ?? LocalBucket.open(at: path, options: fileOptions)
        } catch {
            budget?.give()
            throw error
        }
        guard writer.name == name else {
            writer.close()
            budget?.give()
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(name) cannot be served: \(path) holds gs://\(writer.name) (made by someone else meanwhile). Move that file away.")
        }
        do {
            if let stored = try pendingRules.storedRules() {
                try rules.loadRules(source: stored.source, origin: stored.origin, into: writer)
            }
        } catch {
            if made != nil { writer.removeIfEmpty() } else { writer.close() }
            budget?.give()
            throw error
        }
        return (writer, made != nil)
    }

    /// After a commit of a pending bucket: when a change landed (or the file was someone else's), the file is the
    /// bucket's from now on and its readers open; when none landed in a file made for it, the file goes again,
    /// made and removed within the writer's one step, before any other connection of this server opened it.
    private func settleFile(_ writer: LocalBucket, made: Bool, landed: Bool) {
        guard !made || landed || lock.withLock({ keptWriter }) != nil else {
            writer.removeIfEmpty()
            budget?.give()
            return
        }
        do {
            let files = try Files(writer, options: options, readerCount: readerCount)
            lock.withLock {
                self.files = files
                keptWriter = nil
            }
            rulesLock.withLock { rulesReadAt = nil }
            try? reloadRulesIfChanged()
            if made { onCreate(name, path) }
        } catch {
            // The file holds what landed: its writer keeps it, and its readers are opened after the next commit
            // (reads go on as an empty bucket's meanwhile).
            lock.withLock { keptWriter = writer }
        }
    }
}

/// What a pending bucket reads: an empty bucket of the server's own, in a private temporary directory, made when
/// the first pending bucket needs it and removed when the server stops.
final class PendingReads: @unchecked Sendable {
    let reader: LocalBucket
    private let directory: String

    init(options: LocalBucketOptions) throws {
        var template = Array((NSTemporaryDirectory() + "/storesh-serve-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw StorageError.internalError("Cannot make a private temporary directory: \(String(cString: strerror(errno))).")
        }
        directory = String(cString: made)
        var emptyOptions = options
        emptyOptions.nameForNewBucket = "pending"
        do {
            reader = try LocalBucket.open(at: directory + "/empty.bucket", options: emptyOptions)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    func close() {
        reader.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Rules kept in memory: a pending bucket's, until its file is made.
final class MemoryRulesStore: RulesStore, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: (source: String, origin: String)?

    func storedRules() throws -> (source: String, origin: String)? { lock.withLock { stored } }
    func storeRules(source: String, origin: String) throws { lock.withLock { stored = (source, origin) } }
}

/// A change waiting for the writer, and how to answer its request.
private struct PendingChange: Sendable {
    var run: @Sendable (any BucketTransaction) async throws -> any Sendable
    var finish: @Sendable (Result<any Sendable, any Error>) -> Void
    var counted: Bool
}
