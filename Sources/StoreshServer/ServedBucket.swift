import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules
import Synchronization

/// The bucket file a server serves, shared by every request: reads run in parallel on connections of their own,
/// and changes are serialised by one writer that commits the changes waiting at the same moment together
/// (group commit). Each change is still answered only once its commit is durable (rule V4), but concurrent clients
/// share one disk flush instead of queueing for one each.
///
/// A bucket a client names for the first time has no file yet (rule V6): it is *pending*. Its reads are those of
/// an empty bucket, its rules those the project gives it (else a new bucket's), and its file is made by the
/// writer, in the step that commits its first changes, and only kept when one of them landed: a request that is
/// refused (no name, 412, 413, a checksum that does not match, the rules) leaves no bucket file behind.
///
/// A bucket other than the first holds its files' descriptors only while it is open: `OpenBucketBudget` closes the
/// one idle longest to make room for another, and it opens again when a request next uses it. A request that
/// still holds one of its connections keeps that connection (it closes when the last holder lets it go).
final class ServedBucket: @unchecked Sendable {
    /// The most changes one commit carries.
    static let maximumGroup = 256

    let name: String
    /// The bucket file (there once the bucket is no longer pending).
    let path: String
    private let options: LocalBucketOptions
    private let readerCount: Int
    /// The server's clock (`--clock`), for the times of the bucket's settings.
    var clock: any StorageClock { options.clock }
    /// The bucket's connections to its file, or why it has none now.
    private enum Connections {
        /// No change of it has landed: it has no file.
        case pending
        /// It has a file, not open now (not opened yet, or closed while idle).
        case closed
        case open(Files)
        /// A file made for a pending bucket that holds landed changes, whose readers could not be opened yet
        /// (they are tried again after each commit): its writer, never removed again.
        case kept(writer: LocalBucket)
    }
    private var connections: Connections
    /// When the bucket was last used (`DispatchTime`'s nanoseconds): the budget closes the idle one used longest ago.
    private var lastUse: UInt64 = DispatchTime.now().uptimeNanoseconds
    /// Serialises the opening of the files, so that two requests opening them at once open them once.
    private let openLock = NSLock()
    /// While pending: an empty bucket's reads (shared by every pending bucket of the server), and where the
    /// project's rules for it wait to be stored in its file.
    private let pending: PendingReads?
    private let pendingRules = MemoryRulesStore()
    /// Where the bucket takes its place among the open buckets (nil for the first bucket, always open).
    private let budget: OpenBucketBudget?
    /// Told once the file of a pending bucket is made (for the terminal's log).
    private let onCreate: @Sendable (_ bucket: String, _ path: String) -> Void
    /// The bucket's security rules, reloaded when another process (the shell, `rules load`) changed them.
    private let rules: RulesSession
    private var rulesReadAt: Int64?
    private let rulesLock = NSLock()

    private let lock = NSLock()
    private var nextReader = 0
    private var waiting: [PendingChange] = []
    private var committing = false
    private var closed = false
    /// A client deleted the bucket: no change lands in it any more, and its file goes (`removeFiles`).
    private var removed = false
    /// The settings of a bucket file that has none stored, as first read (so that they do not move between reads).
    private var unstoredSettings: BucketSettings?
    private var commitCount = 0
    private var committedChangeCount = 0
    /// Commits that carried clients' changes so far, and those changes (concurrent changes share commits).
    var commits: Int { lock.withLock { commitCount } }
    var committedChanges: Int { lock.withLock { committedChangeCount } }

    /// The connections to the bucket file. Each closes when the last holder lets it go: the bucket itself, or a
    /// request that took it before the bucket was closed as idle.
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
            // Downloads read their content through a memory map: a range far into a large object then costs its own
            // bytes, not a copy of every page before it (`LocalBucketOptions.mappedReadBytes`).
            var downloadOptions = readOptions
            downloadOptions.mappedReadBytes = Self.mappedReadBytes
            readers = try (0..<max(1, readerCount)).map { _ throws(StorageError) in
                try LocalBucket.open(at: writer.path, options: downloadOptions)
            }
            watch = BucketWatch(try LocalBucket.open(at: writer.path, options: readOptions))
            rulesReader = try LocalBucket.open(at: writer.path, options: readOptions)
        }

        /// SQLite's largest map unless compiled otherwise (`SQLITE_MAX_MMAP_SIZE`, which it applies itself).
        static let mappedReadBytes: Int64 = 0x7fff_0000

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
        connections = .open(files)
        pending = nil
        budget = nil
        onCreate = { _, _ in }
        rules = try RulesSession(store: bucket, clock: options.clock)
        rulesReadAt = try files.rulesReader.changeCounter()
    }

    /// A bucket that has no file yet, to be made at `path` when its first change lands.
    convenience init(
        pendingAt path: String, name: String, reads: PendingReads, options: LocalBucketOptions, readerCount: Int,
        budget: OpenBucketBudget, onCreate: @escaping @Sendable (String, String) -> Void
    ) throws {
        try self.init(
            name: name, path: path, options: options, readerCount: readerCount, budget: budget, pending: reads,
            onCreate: onCreate)
    }

    /// A bucket whose file is at `path`, not open yet: `open()` opens it, and says what the file is when it is not
    /// that bucket's.
    convenience init(
        closedAt path: String, name: String, options: LocalBucketOptions, readerCount: Int, budget: OpenBucketBudget
    ) throws {
        try self.init(
            name: name, path: path, options: options, readerCount: readerCount, budget: budget, pending: nil,
            onCreate: { _, _ in })
    }

    /// A bucket with no connection yet: pending (`pending`: the reads of a bucket with no file) or closed. Its rules
    /// are read from its file when it opens (`rulesReadAt` is nil), or are the project's until its file is made.
    private init(
        name: String, path: String, options: LocalBucketOptions, readerCount: Int, budget: OpenBucketBudget,
        pending: PendingReads?,
        onCreate: @escaping @Sendable (String, String) -> Void
    ) throws {
        self.budget = budget
        self.name = name
        self.path = path
        self.options = options
        self.readerCount = readerCount
        self.pending = pending
        connections = pending == nil ? .closed : .pending
        self.onCreate = onCreate
        rules = try RulesSession(store: nil, clock: options.clock)
    }

    /// Whether the bucket has no file yet (no change of it has landed).
    var isPending: Bool {
        lock.withLock {
            if case .pending = connections { true } else { false }
        }
    }

    func close() {
        lock.withLock { closed = true }
        closeConnections()
    }

    /// Closes the bucket's connections now, whoever holds them, and leaves it closed.
    private func closeConnections() {
        let (open, kept): (Files?, LocalBucket?) = lock.withLock {
            defer { if case .pending = connections {} else { connections = .closed } }
            switch connections {
            case .open(let files): return (files, nil)
            case .kept(let writer): return (nil, writer)
            case .pending, .closed: return (nil, nil)
            }
        }
        open?.close()
        kept?.close()
    }

    /// Opens the bucket's files if they are not open (taking a place among the open buckets, which may close
    /// another that is idle, or answer 503 when none is); nil while the bucket has no file of its own to read.
    func open() throws { _ = try opened() }

    /// The open connections (`open()`): the files', or the kept writer's, or none while pending.
    private func opened() throws -> (files: Files?, writer: LocalBucket?) {
        if lock.withLock({ removed }) { throw ServedBuckets.noSuchBucket(name) }
        if let open = openNow() { return open }
        return try openLock.withLock {
            if let open = openNow() { return open }
            if lock.withLock({ closed }) { throw StorageError(.unavailable, "storesh serve is stopping; try again.") }
            try budget?.take(for: self)
            let files: Files
            do {
                files = try openFiles()
            } catch {
                budget?.give(for: self)
                throw error
            }
            lock.withLock {
                connections = .open(files)
                lastUse = DispatchTime.now().uptimeNanoseconds
            }
            // The connections' counts are their own: the rules are read again from the new one.
            rulesLock.withLock { rulesReadAt = nil }
            return (files, files.writer)
        }
    }

    /// What is open now, marking the bucket used; nil when its files are closed.
    private func openNow() -> (files: Files?, writer: LocalBucket?)? {
        lock.withLock {
            switch connections {
            case .closed: return nil
            case .pending: return (nil, nil)
            case .kept(let writer): return (nil, writer)
            case .open(let files):
                lastUse = DispatchTime.now().uptimeNanoseconds
                return (files, files.writer)
            }
        }
    }

    /// The file's connections, the file checked to be this bucket's.
    private func openFiles() throws -> Files {
        var bucketOptions = options
        bucketOptions.nameForNewBucket = name
        bucketOptions.createIfMissing = false
        let file: LocalBucket
        do {
            file = try LocalBucket.open(at: path, options: bucketOptions)
        } catch  where error.code == .unavailable {
            // Busy (another process holds it past the wait): the same request may succeed later.
            throw HTTPFailure(error, bucket: name, object: nil, firebase: false)
        } catch {
            // A file of that name that is not a bucket storesh can read: a conflict with what is there, not a
            // server error; it is left as it is.
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(name) cannot be served: \(path) is not a bucket file storesh can read (\(error.message)); move it away to use the name."
            )
        }
        guard file.name == name else {
            file.close()
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(name) cannot be served: \(path) holds gs://\(file.name). Move that file away (or serve it with --bucket)."
            )
        }
        do {
            return try Files(file, options: options, readerCount: readerCount)
        } catch {
            file.close()
            throw error
        }
    }

    /// Lets the files go when no one is using the bucket (no change waiting or being committed, no live page
    /// watching it), for the budget to give its place to another; nil when it is in use, pending or not open. The
    /// caller drops what it gets outside its locks: a connection closes when its last holder lets it go.
    func closeIfIdle() -> Any? {
        lock.withLock {
            guard !closed, !committing, waiting.isEmpty, case .open(let files) = connections, !files.watch.isWatched
            else { return nil }
            connections = .closed
            return files
        }
    }

    /// When the bucket was last used (for the budget to close the idle one used longest ago).
    var lastUsed: UInt64 { lock.withLock { lastUse } }

    /// A connection for reads, taken in turn; an empty bucket's while the bucket is pending.
    func reader() throws -> LocalBucket {
        if lock.withLock({ removed }) { throw ServedBuckets.noSuchBucket(name) }
        guard let files = try opened().files else { return pending!.reader }
        return lock.withLock {
            nextReader = (nextReader + 1) % files.readers.count
            return files.readers[nextReader]
        }
    }

    /// Changes to the file by anyone, for the live page; nil while the bucket is pending (no page shows it).
    func watch() throws -> BucketWatch? { try opened().files?.watch }

    // MARK: Settings and deletion (rule B4)

    /// The bucket's settings: those stored, or, for a bucket file made before settings were kept, a new bucket's
    /// as of its first object.
    func settings() throws -> BucketSettings {
        try reader().storedSettings() ?? settingsWhenNoneStored()
    }

    /// The settings of this bucket while its file stores none: a new bucket's, as of its first object (read once).
    func settingsWhenNoneStored() throws -> BucketSettings {
        if let made = lock.withLock({ unstoredSettings }) { return made }
        let made = BucketSettings(madeAt: try reader().earliestChange() ?? options.clock.nextChangeTime())
        return lock.withLock {
            if unstoredSettings == nil { unstoredSettings = made }
            return unstoredSettings!
        }
    }

    /// Deletes the bucket when `check` (run as a change, after every change queued before it) allows it: no change
    /// lands in it afterwards, in the same commit or later. The caller then removes its files (`removeFiles`).
    func markRemoved<Decision: Sendable>(
        _ check: @escaping @Sendable (any BucketTransaction) async throws -> Decision
    ) async throws
        -> Decision
    {
        try await change(counted: false) { transaction in
            let decision = try await check(transaction)
            self.lock.withLock { self.removed = true }
            return decision
        }
    }

    /// Closes every connection of a deleted bucket and moves its file to `kept` (a soft-deleted bucket's, rule B6),
    /// as `removeFiles` would remove it; closed first, which folds SQLite's log into the file.
    func keepFiles(at kept: String) throws {
        closeConnections()
        budget?.give(for: self)
        for suffix in ["-wal", "-shm"] where access(path + suffix, F_OK) == 0 {
            // A log left by a connection that did not fold it: it is the file's, and goes with it.
            guard rename(path + suffix, kept + suffix) == 0 else {
                throw StorageError.internalError(
                    "\(path + suffix) could not be moved beside \(kept): \(String(cString: strerror(errno))).")
            }
        }
        guard rename(path, kept) == 0 else {
            throw StorageError.internalError(
                "\(path) could not be moved to \(kept): \(String(cString: strerror(errno))).")
        }
        BucketFileLog.synchronizeDirectory(of: path)
    }

    /// Closes every connection of a deleted bucket and removes its file (and SQLite's log and index beside it):
    /// closed first, so that no connection of it later removes the log of a new file made at the same path. A
    /// request still reading it gets an error.
    func removeFiles() {
        closeConnections()
        budget?.give(for: self)
        for suffix in ["-wal", "-shm", ""] { unlink(path + suffix) }
        BucketFileLog.synchronizeDirectory(of: path)
    }

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
            guard let store = transaction.rulesStore else {
                throw StorageError.internalError("The bucket keeps no rules.")
            }
            try self.rules.loadRules(source: source, origin: origin, into: store)
        }
        try reloadRulesIfChanged()
    }

    /// Puts the project's rules in force in a bucket no request can reach yet (one just opened, or pending),
    /// without the writer's queue: in its file, or, while it has none, until its file is made.
    func loadRulesNow(_ rules: ServedBuckets.ProjectRules) throws {
        let store: any RulesStore = try opened().writer ?? pendingRules
        try self.rules.loadRules(source: rules.source, origin: rules.origin, into: store)
    }

    /// Reads the stored rules again when the file changed since they were last read (by this server's writer, or
    /// by another process: the shell's `rules load`). The check is one question to SQLite, under a lock that
    /// keeps the connection to one request at a time. A pending bucket's rules are only this server's.
    private func reloadRulesIfChanged() throws {
        guard let rulesReader = try opened().files?.rulesReader else { return }
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
            let pending = PendingChange(
                run: { transaction in
                    // A change queued behind the bucket's deletion finds no bucket, in the same commit or after it.
                    if self.lock.withLock({ self.removed }) { throw ServedBuckets.noSuchBucket(self.name) }
                    return try await body(transaction)
                }, finish: { continuation.resume(returning: $0) }, counted: counted)
            let starts = lock.withLock {
                waiting.append(pending)
                if committing { return false }
                committing = true
                return true
            }
            // Commits block (SQLite, fsync): on StorageWork's threads.
            if starts { Task(executorPreference: StorageWork.shared) { await self.commitWaitingChanges() } }
        }
        return try result.get() as! Value
    }

    /// Empties the bucket as the emulator's reset does (`/internal/reset`, `clearStorage()` of
    /// @firebase/rules-unit-testing): every object and every noncurrent and soft-deleted generation, whatever holds
    /// or retention say, in one change; its settings and snapshots stay. A test suite resets between tests, and a
    /// test that put a Locked retention on an object must not leave a bucket no later test can empty.
    func removeEverything() async throws {
        try await change { transaction -> Void in
            // The transaction of a served bucket is its file's (`openWriter`).
            guard let owned = transaction as? any BucketFileTransaction else {
                throw StorageError.internalError(
                    "gs://\(self.name) is not served from a bucket file; nothing was emptied.")
            }
            try owned.file.removeEverything()
        }
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
                    // A bucket file this server makes is a client's bucket, with a new bucket's settings (rule B4).
                    if made {
                        try transaction.settingsStore?.storeSettings(
                            BucketSettings(madeAt: self.options.clock.nextChangeTime(), madeByServer: true))
                    }
                    for change in group {
                        do {
                            results.append(
                                .success(try await transaction.withSavepoint { try await change.run(transaction) }))
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
                if landed > 0 {
                    lock.withLock {
                        (commitCount, committedChangeCount) = (commitCount + 1, committedChangeCount + landed)
                    }
                }
            } catch {
                // The commit failed (a busy or full disk): nothing of the group landed.
                results = group.map { _ in .failure(error) }
            }
            let settles = lock.withLock {
                switch connections {
                case .pending, .kept: true
                case .open, .closed: false
                }
            }
            if settles {
                settleFile(
                    writer, made: made, landed: results.contains { if case .success = $0 { true } else { false } })
            }
            for (change, result) in zip(group, results) { change.finish(result) }
        }
    }

    /// The writer: the file's; for a pending bucket, a new file's (made whole, then linked into place), which no
    /// other connection of this server has opened yet (`made`), or the file someone else made meanwhile.
    private func openWriter() throws -> (writer: LocalBucket, made: Bool) {
        if let writer = try opened().writer { return (writer, false) }
        if lock.withLock({ closed }) { throw StorageError(.unavailable, "storesh serve is stopping; try again.") }
        try budget?.take(for: self)
        var fileOptions = options
        fileOptions.nameForNewBucket = name
        fileOptions.createIfMissing = false
        let made: LocalBucket?
        let writer: LocalBucket
        do {
            made = try LocalBucket.create(newAt: path, name: name, options: fileOptions)
            writer = try made ?? LocalBucket.open(at: path, options: fileOptions)
        } catch {
            budget?.give(for: self)
            throw error
        }
        guard writer.name == name else {
            writer.close()
            budget?.give(for: self)
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(name) cannot be served: \(path) holds gs://\(writer.name) (made by someone else meanwhile). Move that file away."
            )
        }
        do {
            if let stored = try pendingRules.storedRules() {
                try rules.loadRules(source: stored.source, origin: stored.origin, into: writer)
            }
        } catch {
            if made != nil { writer.removeIfEmpty() } else { writer.close() }
            budget?.give(for: self)
            throw error
        }
        return (writer, made != nil)
    }

    /// After a commit of a pending bucket: when a change landed (or the file was someone else's), the file is the
    /// bucket's from now on and its readers open; when none landed in a file made for it, the file goes again,
    /// made and removed within the writer's one step, before any other connection of this server opened it.
    private func settleFile(_ writer: LocalBucket, made: Bool, landed: Bool) {
        let kept = lock.withLock {
            if case .kept = connections { true } else { false }
        }
        guard !made || landed || kept else {
            writer.removeIfEmpty()
            budget?.give(for: self)
            return
        }
        do {
            let files = try Files(writer, options: options, readerCount: readerCount)
            lock.withLock { connections = .open(files) }
            rulesLock.withLock { rulesReadAt = nil }
            try? reloadRulesIfChanged()
            if made { onCreate(name, path) }
        } catch {
            // The file holds what landed: its writer keeps it, and its readers are opened after the next commit
            // (reads go on as an empty bucket's meanwhile).
            lock.withLock { connections = .kept(writer: writer) }
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
            throw StorageError.internalError(
                "Cannot make a private temporary directory: \(String(cString: strerror(errno))).")
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
final class MemoryRulesStore: RulesStore, Sendable {
    private let stored = Mutex<(source: String, origin: String)?>(nil)

    func storedRules() throws -> (source: String, origin: String)? { stored.withLock { $0 } }
    func storeRules(source: String, origin: String) throws { stored.withLock { $0 = (source, origin) } }
}

/// A change waiting for the writer, and how to answer its request.
private struct PendingChange: Sendable {
    var run: @Sendable (any BucketTransaction) async throws -> any Sendable
    var finish: @Sendable (Result<any Sendable, any Error>) -> Void
    var counted: Bool
}
