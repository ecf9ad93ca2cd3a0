import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules

/// The bucket file a server serves, shared by every request: reads run in parallel on connections of their own,
/// and changes are serialised by one writer that commits the changes waiting at the same moment together
/// (group commit). Each change is still answered only once its commit is durable (rule V4), but concurrent clients
/// share one disk flush instead of queueing for one each.
final class ServedBucket: @unchecked Sendable {
    /// The most changes one commit carries.
    static let maximumGroup = 256

    let name: String
    /// The bucket file.
    let path: String
    private let writer: LocalBucket
    private let readers: [LocalBucket]
    /// Changes to the file by anyone, for the live page.
    let watch: BucketWatch
    /// The bucket's security rules, reloaded when another process (the shell, `rules load`) changed them.
    private let rules: RulesSession
    /// A connection of its own, whose `data_version` says when anyone committed to the file since the rules were
    /// last read: only then are the stored rules read again, not on every request.
    private let rulesReader: LocalBucket
    private var rulesReadAt: Int64?
    private let rulesLock = NSLock()

    private let lock = NSLock()
    private var nextReader = 0
    private var waiting: [PendingChange] = []
    private var committing = false
    private var commitCount = 0
    private var committedChangeCount = 0
    /// Commits that carried clients' changes so far, and those changes (concurrent changes share commits).
    var commits: Int { lock.withLock { commitCount } }
    var committedChanges: Int { lock.withLock { committedChangeCount } }

    /// Serves `bucket` (a local bucket file, open), with `readerCount` further connections for reads.
    init(_ bucket: LocalBucket, options: LocalBucketOptions, readerCount: Int) throws {
        writer = bucket
        name = bucket.name
        path = bucket.path
        var readOptions = options
        readOptions.createIfMissing = false
        readers = try (0..<max(1, readerCount)).map { _ throws(StorageError) in try LocalBucket.open(at: bucket.path, options: readOptions) }
        watch = BucketWatch(try LocalBucket.open(at: bucket.path, options: readOptions))
        rulesReader = try LocalBucket.open(at: bucket.path, options: readOptions)
        rules = try RulesSession(store: bucket, clock: options.clock)
        rulesReadAt = try rulesReader.changeCounter()
    }

    func close() {
        watch.close()
        rulesReader.close()
        for reader in readers { reader.close() }
        writer.close()
    }

    /// A connection for reads, taken in turn.
    var reader: LocalBucket {
        lock.withLock {
            nextReader = (nextReader + 1) % readers.count
            return readers[nextReader]
        }
    }

    // MARK: Rules

    /// The rules in force for a request made as `identity` (nil: signed out), as the bucket keeps them now. Its
    /// decisions go to the request's log entry (`RequestTrace`), wherever the request's change runs.
    func rulesSession(as identity: Identity?) throws -> RulesSession {
        try reloadRulesIfChanged()
        guard let trace = RequestTrace.current else { return rules.session(as: identity) }
        return rules.session(as: identity, observer: { request, decision in trace.decided(request, decision) })
    }

    /// Loads security rules into the bucket (checked first: a ruleset with an error changes nothing).
    func loadRules(source: String, origin: String) async throws {
        // Not one of the clients' changes (`storesh serve`'s rules file, or the tests' setRules, put them in force).
        try await change(counted: false) { transaction -> Void in
            guard let store = transaction.rulesStore else { throw StorageError.internalError("The bucket keeps no rules.") }
            try self.rules.loadRules(source: source, origin: origin, into: store)
        }
        try reloadRulesIfChanged()
    }

    /// Loads rules into a bucket no request can reach yet (one just opened), without the writer's queue.
    func loadRulesNow(_ rules: ServedBuckets.ProjectRules) throws {
        try self.rules.loadRules(source: rules.source, origin: rules.origin, into: writer)
    }

    /// Reads the stored rules again when the file changed since they were last read (by this server's writer, or
    /// by another process: the shell's `rules load`). The check is one question to SQLite, under a lock that
    /// keeps the connection to one request at a time.
    private func reloadRulesIfChanged() throws {
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
            for (change, result) in zip(group, results) { change.finish(result) }
        }
    }
}

/// A change waiting for the writer, and how to answer its request.
private struct PendingChange: Sendable {
    var run: @Sendable (any BucketTransaction) async throws -> any Sendable
    var finish: @Sendable (Result<any Sendable, any Error>) -> Void
    var counted: Bool
}
