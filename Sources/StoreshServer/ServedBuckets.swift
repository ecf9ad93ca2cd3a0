import Foundation
import StoreshCore
import StoreshLocal
import StoreshRules
import Synchronization

/// Every bucket one server serves (rule V6). The first is the bucket file `storesh serve` was given; any other
/// bucket a client names lives in a bucket file of its own, `NAME.bucket` in one directory (by default the first
/// file's), opened the first time a request names it and made the first time a change to it lands, as the Firebase
/// emulator makes a bucket on its first upload: until then it is pending (`ServedBucket`), and a request that is
/// refused leaves no file. A file there that holds another bucket is never served under the wrong name.
package final class ServedBuckets: @unchecked Sendable {
    /// Rules that a project file gives a bucket, put in force when the bucket is opened and whenever they change.
    package struct ProjectRules: Sendable {
        package var source: String
        package var origin: String

        package init(source: String, origin: String) {
            self.source = source
            self.origin = origin
        }
    }

    let primary: ServedBucket
    /// Where the other buckets' files are.
    package let directory: String
    private let options: LocalBucketOptions
    private let readerCount: Int
    /// Told each bucket file this server creates (for the terminal's log).
    private let onCreate: @Sendable (_ bucket: String, _ path: String) -> Void

    private let lock = NSLock()
    private var others: [String: ServedBucket] = [:]
    /// What pending buckets read (an empty bucket), made for the first of them.
    private var pendingReads: PendingReads?
    /// Pending buckets made since the last that were not used were forgotten.
    private var pendingSinceSweep = 0
    /// How many other buckets may be open at once.
    private let budget: OpenBucketBudget
    /// The project's rules, by bucket; `rulesForAny` for a bucket it gives none (a single `storage` entry).
    private var rulesByBucket: [String: ProjectRules] = [:]
    private var rulesForAny: ProjectRules?
    private var closed = false

    init(
        primary: ServedBucket, directory: String, options: LocalBucketOptions, readerCount: Int,
        onCreate: @escaping @Sendable (String, String) -> Void
    ) {
        self.primary = primary
        self.directory = directory
        self.options = options
        self.readerCount = readerCount
        self.onCreate = onCreate
        budget = OpenBucketBudget(readerCount: readerCount)
    }

    /// The file a bucket other than the first is kept in.
    package static func path(of bucket: String, in directory: String) -> String {
        (directory as NSString).appendingPathComponent(bucket + ".bucket")
    }

    /// The bucket `name`: the first, one already open, or the one in its file. `creating`: a request that writes
    /// makes the bucket when there is none; any other is answered as the service answers a bucket that does not exist.
    func bucket(named name: String, creating: Bool) throws -> ServedBucket {
        // As bytes: the first bucket's name is whatever --name gave, and is not canonically equal to another.
        if name.utf8.elementsEqual(primary.name.utf8) { return primary }
        if let open = lock.withLock({ others[name] }) {
            // A bucket none of whose changes has landed yet does not exist for anyone but a writer.
            guard creating || !open.isPending else { throw Self.noSuchBucket(name) }
            return open
        }
        if let problem = BucketNames.problem(with: name) {
            throw HTTPFailure.badRequest("Invalid bucket name '\(name)': \(problem)")
        }
        let path = Self.path(of: name, in: directory)
        var status = stat()
        let exists = lstat(path, &status) == 0
        if exists, (status.st_mode & S_IFMT) != S_IFREG {
            throw HTTPFailure(
                .conflict, reason: "conflict",
                "gs://\(name) cannot be served: \(path) is not a regular file (a link, a folder or a device), and storesh serve opens only bucket files it can trust."
            )
        }
        guard exists || creating else { throw Self.noSuchBucket(name) }
        return try lock.withLock {
            if let open = others[name] { return open }
            if closed { throw StorageError(.unavailable, "storesh serve is stopping; try again.") }
            if !exists {
                // Made when its first change lands, not now: the request may yet be refused.
                if pendingReads == nil { pendingReads = try PendingReads(options: options) }
                let pending = try ServedBucket(
                    pendingAt: path, name: name, reads: pendingReads!, options: options, readerCount: readerCount,
                    budget: budget,
                    onCreate: onCreate)
                if let rules = rulesByBucket[name] ?? rulesForAny { try pending.loadRulesNow(rules) }
                forgetUnusedPendingBuckets()
                others[name] = pending
                return pending
            }
            // Opened now, to answer with what the file is when it is not this bucket's.
            let served = try ServedBucket(
                closedAt: path, name: name, options: options, readerCount: readerCount, budget: budget)
            try served.open()
            if let rules = rulesByBucket[name] ?? rulesForAny {
                do {
                    try served.loadRulesNow(rules)
                } catch {
                    served.close()
                    budget.give(for: served)
                    throw error
                }
            }
            others[name] = served
            return served
        }
    }

    /// Every `pendingSweep` new pending buckets, forgets those that nothing but this table holds (no request, no
    /// upload session): a pending bucket is only its name and the project's rules, made again when next named. A
    /// client the rules refuse every write, naming a new bucket with each request, once grew the server by about
    /// 1.3 KB a name, without bound. Called under `lock`.
    private func forgetUnusedPendingBuckets() {
        pendingSinceSweep += 1
        guard pendingSinceSweep >= Self.pendingSweep else { return }
        pendingSinceSweep = 0
        for name in Array(others.keys) where others[name]?.isPending == true {
            if isKnownUniquelyReferenced(&others[name]!) { others[name] = nil }
        }
    }

    static let pendingSweep = 1024

    /// Deletes `bucket` when `check` allows it (a change, after every change queued before it): it is forgotten,
    /// under the lock that names buckets, before its files go, so that a request naming it afterwards finds none
    /// (and may make it anew) while no connection of the old file remains.
    ///
    /// `check` answers the settings to keep the bucket with when its soft delete policy keeps it restorable (rule
    /// B6): its file is then moved aside (`softDeletedPath`) rather than removed.
    func delete(
        _ bucket: ServedBucket, check: @escaping @Sendable (any BucketTransaction) async throws -> BucketSettings?
    ) async throws {
        let kept = try await bucket.markRemoved(check)
        try lock.withLock {
            if others[bucket.name] === bucket { others[bucket.name] = nil }
            if let kept {
                try bucket.keepFiles(
                    at: Self.softDeletedPath(of: bucket.name, generation: kept.generation, in: directory))
            } else {
                bucket.removeFiles()
            }
        }
    }

    // MARK: Soft-deleted buckets (rule B6)

    /// Where a soft-deleted bucket's file waits: `NAME@GENERATION.soft-deleted` in the buckets' directory. No bucket
    /// name holds `@`, and no bucket file ends so: it is never served as a bucket.
    static func softDeletedPath(of bucket: String, generation: Int64, in directory: String) -> String {
        (directory as NSString).appendingPathComponent("\(bucket)@\(generation)\(softDeletedSuffix)")
    }

    static let softDeletedSuffix = ".soft-deleted"

    /// A bucket deleted while its soft delete policy keeps it: its name, generation, file and settings.
    struct SoftDeletedBucket {
        var name: String
        var path: String
        var settings: BucketSettings
    }

    /// The soft-deleted buckets whose files are in the directory, by name then generation.
    func softDeleted() -> [SoftDeletedBucket] {
        let now = options.clock.now()
        var found: [SoftDeletedBucket] = []
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        where entry.hasSuffix(Self.softDeletedSuffix) {
            let stem = entry.dropLast(Self.softDeletedSuffix.count)
            guard let at = stem.lastIndex(of: "@"), let generation = Int64(stem[stem.index(after: at)...]),
                let kept = keptBucket(String(stem[..<at]), generation: generation, now: now)
            else { continue }
            found.append(kept)
        }
        // Bucket names are ASCII: their order as strings is their order as bytes.
        return found.sorted { ($0.name, $0.settings.generation) < ($1.name, $1.settings.generation) }
    }

    /// The soft-deleted bucket `name` of `generation`, or the service's 404.
    func softDeleted(_ name: String, generation: Int64) throws -> SoftDeletedBucket {
        guard let found = keptBucket(name, generation: generation, now: options.clock.now()) else {
            throw HTTPFailure(
                .notFound, reason: "notFound",
                "gs://\(name) has no soft-deleted generation \(generation) here: restored already, gone for good, or never soft-deleted (buckets.list with softDeleted=true lists those kept)."
            )
        }
        return found
    }

    /// The bucket kept soft-deleted as `name` of `generation`: its file (`softDeletedPath`), when that is a regular
    /// file holding that bucket, soft-deleted, of that generation. One whose hard delete time has passed goes for
    /// good first (its file was this server's).
    private func keptBucket(_ name: String, generation: Int64, now: Timestamp) -> SoftDeletedBucket? {
        guard BucketNames.problem(with: name) == nil else { return nil }
        let path = Self.softDeletedPath(of: name, generation: generation, in: directory)
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            let (stored, settings) = try? Self.settings(ofFileAt: path), stored == name, let settings,
            settings.softDeleteTime != nil,
            settings.generation == generation
        else { return nil }
        if let end = settings.hardDeleteTime, end <= now {
            for suffix in ["-wal", "-shm", ""] { unlink(path + suffix) }
            return nil
        }
        return SoftDeletedBucket(name: name, path: path, settings: settings)
    }

    /// Makes the soft-deleted bucket `name` of `generation` live again, as it was (its generation kept), when no
    /// bucket of its name is live; answers it.
    func restore(_ name: String, generation: Int64) throws -> ServedBucket {
        let deleted = try softDeleted(name, generation: generation)
        let path = Self.path(of: name, in: directory)
        try lock.withLock {
            if name.utf8.elementsEqual(primary.name.utf8) || others[name].map({ !$0.isPending }) == true
                || access(path, F_OK) == 0
            {
                throw HTTPFailure(
                    .conflict, reason: "conflict",
                    "gs://\(name) exists: a soft-deleted bucket is restored only while no bucket has its name (delete the live one first)."
                )
            }
            var settings = deleted.settings
            settings.softDeleteTime = nil
            let file = try LocalBucket.open(at: deleted.path, options: Self.existingFile(options))
            defer { file.close() }
            try file.storeSettings(settings)
            file.close()
            guard rename(deleted.path, path) == 0 else {
                throw StorageError.internalError(
                    "\(deleted.path) could not be moved back to \(path): \(String(cString: strerror(errno))).")
            }
            BucketFileLog.synchronizeDirectory(of: path)
            // A pending bucket of the name (a request that made nothing yet) would make a file of its own.
            others[name] = nil
        }
        return try bucket(named: name, creating: false)
    }

    /// The bucket a file holds and the settings it stores, read and closed.
    private static func settings(ofFileAt path: String) throws -> (bucket: String, settings: BucketSettings?) {
        let file = try LocalBucket.open(at: path, options: existingFile(LocalBucketOptions()))
        defer { file.close() }
        return (file.name, try file.storedSettings())
    }

    /// `options` for a file that must exist (never made).
    private static func existingFile(_ options: LocalBucketOptions) -> LocalBucketOptions {
        var options = options
        options.createIfMissing = false
        options.nameForNewBucket = nil
        return options
    }

    static func noSuchBucket(_ name: String) -> HTTPFailure {
        HTTPFailure(
            .notFound, reason: "notFound",
            "The specified bucket does not exist: gs://\(name) is not on this server (buckets.insert makes it, as does a write on the Firebase API)."
        )
    }

    /// Every bucket served: the first, then the others by name — those opened so far and those whose files are in
    /// the directory (a file there that holds another bucket is left out).
    func all() -> [ServedBucket] {
        [primary] + files().dropFirst().compactMap { try? bucket(named: $0.name, creating: false) }
    }

    /// The name and file of every bucket served, as `all()` lists them, without opening any: what an export
    /// carries once the server has stopped. A file of the directory may still hold another bucket than its name
    /// says (the first bucket's own file, a copy): whoever opens it checks.
    package func files() -> [(name: String, path: String)] {
        // Open buckets by name; a pending one is not served yet (its file, if any, is being made or removed).
        var (names, pending) = lock.withLock {
            others.reduce(into: (Set<String>(), Set<String>())) { sets, entry in
                if entry.value.isPending { sets.1.insert(entry.key) } else { sets.0.insert(entry.key) }
            }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) {
            for entry in entries where entry.hasSuffix(".bucket") {
                let name = String(entry.dropLast(".bucket".count))
                guard name != primary.name, !pending.contains(name), BucketNames.problem(with: name) == nil,
                    !RegularFile.isSameFile(Self.path(of: name, in: directory), primary.path)
                else { continue }
                names.insert(name)
            }
        }
        // Bucket names are ASCII (`BucketNames`): their order as strings is their order as bytes.
        return [(primary.name, primary.path)] + names.sorted().map { ($0, Self.path(of: $0, in: directory)) }
    }

    /// Puts `rules` in force for `bucket`, which is opened (made when there is none: the project names it), or with
    /// nil for every bucket, now and as each opens, as the emulator's single ruleset is. Checked first: rules with
    /// an error change nothing.
    func setRules(_ rules: ProjectRules, for bucket: String?) async throws {
        try RulesEngine.check(rules.source, origin: rules.origin)
        if let bucket { _ = try self.bucket(named: bucket, creating: true) }
        let targets: [ServedBucket] = lock.withLock {
            if let bucket { rulesByBucket[bucket] = rules } else { (rulesByBucket, rulesForAny) = ([:], rules) }
            return ([primary] + others.values).filter { served in bucket.map { served.name == $0 } ?? true }
        }
        for served in targets { try await served.loadRules(source: rules.source, origin: rules.origin) }
    }

    func close() {
        let (open, reads): ([ServedBucket], PendingReads?) = lock.withLock {
            closed = true
            return (Array(others.values), pendingReads)
        }
        for served in open { served.close() }
        reads?.close()
        primary.close()
    }

    var committedChanges: Int {
        ([primary] + lock.withLock { Array(others.values) }).reduce(0) { $0 + $1.committedChanges }
    }
    var commits: Int { ([primary] + lock.withLock { Array(others.values) }).reduce(0) { $0 + $1.commits } }
}

/// How many buckets besides the first a server keeps open at once. Each open bucket holds about
/// `descriptorsPerBucket` file descriptors (its connections, and SQLite's log and index beside each), which it
/// shares with the clients' connections within the process's limit. At the bound, the bucket idle longest (no
/// change waiting, no live page) is closed to make room, and opens again when it is next used; when every open
/// bucket is in use, a request that would open another is answered 503 with Retry-After, and every open bucket goes
/// on being served (naming buckets once exhausted the descriptors, and then every bucket's requests failed).
final class OpenBucketBudget: Sendable {
    private struct Places {
        /// The buckets whose files are open (or being opened), by identity.
        var open: [ObjectIdentifier: ServedBucket] = [:]
        var limit: Int?
        /// Buckets closed to make room so far.
        var closedWhileIdle = 0
    }

    private let places: Mutex<Places>
    private let readerCount: Int

    init(readerCount: Int, limit: Int? = nil) {
        self.readerCount = readerCount
        places = Mutex(Places(limit: limit))
    }

    /// Buckets closed to make room so far (for the tests' and the log's figures).
    var closedWhileIdle: Int { places.withLock { $0.closedWhileIdle } }

    /// Descriptors one open bucket holds: a writer, its readers, a watch and a rules reader, three files each.
    var descriptorsPerBucket: Int { 3 * (max(1, readerCount) + 3) }

    /// The bound, read when the first bucket opens (after the server raised its descriptor limit): the
    /// descriptors past those kept for the connections and the first bucket, at least 8 buckets.
    private func bound(_ places: inout Places) -> Int {
        if let limit = places.limit { return limit }
        var descriptors = rlimit()
        let soft =
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &descriptors) == 0
            ? Int(min(descriptors.rlim_cur, 1 << 20)) : 1024
        let bound = max(8, (soft - Self.keptForConnections(soft)) / descriptorsPerBucket)
        places.limit = bound
        return bound
    }

    /// What the connections keep of `soft` descriptors: half, up to 1,280 (the connection bound and spools).
    static func keptForConnections(_ soft: Int) -> Int { min(soft / 2, 1280) }

    /// Takes a place for `bucket`, about to open its files: a free one, or that of the open bucket idle longest,
    /// which is closed; else says to come back later.
    func take(for bucket: ServedBucket) throws {
        let key = ObjectIdentifier(bucket)
        var released: Any?
        defer { _ = released }  // dropped here, outside the lock: closing a connection may fold its log
        try places.withLock { (places: inout Places) throws(HTTPFailure) in
            guard places.open[key] == nil else { return }
            let bound = bound(&places)
            if places.open.count >= bound {
                // The one used longest ago that is idle. (Each bucket's time is read once: it may move meanwhile.)
                let byAge = places.open.map { (key: $0.key, bucket: $0.value, used: $0.value.lastUsed) }.sorted {
                    $0.used < $1.used
                }
                for candidate in byAge {
                    if let files = candidate.bucket.closeIfIdle() {
                        released = files
                        places.open[candidate.key] = nil
                        places.closedWhileIdle += 1
                        break
                    }
                }
            }
            guard places.open.count < bound else {
                var failure = HTTPFailure(
                    .serviceUnavailable, reason: "serviceUnavailable",
                    "gs://\(bucket.name) cannot be opened now: storesh serve has \(bound) other buckets open and in use, as many as its file descriptor limit leaves room for (ulimit -n); try again shortly, or start it with a higher limit."
                )
                failure.headers[.retryAfter] = "5"
                throw failure
            }
            places.open[key] = bucket
        }
    }

    /// Gives back `bucket`'s place (it closed, or its files did not open after all).
    func give(for bucket: ServedBucket) {
        _ = places.withLock { $0.open.removeValue(forKey: ObjectIdentifier(bucket)) }
    }
}
