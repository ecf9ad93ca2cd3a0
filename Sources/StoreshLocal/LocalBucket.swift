import StoreshSQLite
import CSQLite
import Foundation
import StoreshCore
import StoreshWire

/// How a local bucket is opened.
public struct LocalBucketOptions: Sendable {
    /// Where "now" comes from for each change (contract `--clock`).
    public var clock: any StorageClock
    /// How long a change waits for another process that is changing the bucket before it gives up.
    public var busyTimeoutMilliseconds: Int32
    /// Create an empty bucket when the file does not exist.
    public var createIfMissing: Bool
    /// The bucket name for a newly created file; by default derived from the file name.
    public var nameForNewBucket: String?
    /// Testing aid: the process kills itself (SIGKILL) just before a commit, to prove that an interrupted
    /// change leaves the old state. Set by the `STORESH_FAULT=crash-before-commit` environment variable.
    public var crashBeforeCommit: Bool
    /// Testing aid: the process kills itself just after a commit, leaving the log of a change that landed
    /// (`STORESH_FAULT=crash-after-commit`), as a crash or a power loss would.
    public var crashAfterCommit = false

    public init(
        clock: any StorageClock = SystemClock(), busyTimeoutMilliseconds: Int32 = 5000, createIfMissing: Bool = true,
        nameForNewBucket: String? = nil, crashBeforeCommit: Bool = false
    ) {
        self.clock = clock
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.createIfMissing = createIfMissing
        self.nameForNewBucket = nameForNewBucket
        self.crashBeforeCommit = crashBeforeCommit
    }
}

/// A bucket kept in one SQLite file (content included).
///
/// Every change is one SQLite transaction in WAL mode with `synchronous=FULL`: once a method returns, the
/// change survives a crash or power loss, and a crash at any instant leaves the old or the new state.
/// Other processes may use the same file; a writer waits up to `busyTimeoutMilliseconds` for another
/// writer and then fails with a clear message. A damaged file is reported, never rewritten.
public final class LocalBucket: TransactionalBucket, ImmediateReads, RulesStore, BucketSettingsStore, @unchecked Sendable {
    public let name: String
    /// The bucket file.
    public let path: String

    // Guards the connections and the transaction state: SQLite connections are single-threaded.
    private let lock = NSLock()
    /// The bucket's own connection, unless a transaction has it (`lent`): the bucket's own calls then use a
    /// spare one, so that nothing outside a transaction ever runs inside it.
    private let ownConnection: SQLiteConnection
    private var spareConnection: SQLiteConnection?
    private var lent = false
    /// False for the engine of a transaction, which runs on a connection its bucket lent it.
    private let ownsConnection: Bool
    /// The connection this object's work runs on (read under the lock).
    var connection: SQLiteConnection { lent ? spareConnection ?? ownConnection : ownConnection }
    let options: LocalBucketOptions
    /// Where "now" comes from for each change.
    public var clock: any StorageClock { options.clock }
    private var inExplicitTransaction = false
    /// Whether the explicit transaction changed anything (its commit then extends the lineage).
    private var transactionWrote = false
    private var isClosed = false
    /// The epoch and newest snapshot as this transaction sees them; read at most once per transaction.
    /// Forgotten whenever a transaction or savepoint ends, since a rollback may undo a snapshot.
    var cachedEpochs: Epochs?
    /// The rows the latest scan of this explicit transaction read, by name: the update of an object a pattern
    /// found then uses its row as scanned instead of reading it again. Kept only inside an explicit transaction,
    /// which holds the write lock, so nothing else changes them; any change but the update of a row itself, and
    /// any rollback, forgets them. At most one scan page.
    private var scannedRows: [ObjectName: LiveRow] = [:]

    /// The lineage as this bucket's connections know it, shared with the engines of its transactions.
    let lineage: LineageKeeper

    /// False only for a version-2 file opened where it cannot be written (so not upgraded): its contents have
    /// no stored CRC-32C, and its objects' metadata then has none.
    let storesContentChecksums: Bool
    /// False only for a file of format 4 or older opened where it cannot be written (so not upgraded): it has no
    /// table of noncurrent generations, and so none of them.
    let storesNoncurrent: Bool

    private init(
        path: String, name: String, connection: SQLiteConnection, options: LocalBucketOptions,
        storesContentChecksums: Bool, storesNoncurrent: Bool, ownsConnection: Bool = true, lineage: LineageKeeper = LineageKeeper()
    ) {
        self.storesNoncurrent = storesNoncurrent
        self.lineage = lineage
        self.path = path
        self.name = name
        self.ownConnection = connection
        self.options = options
        self.storesContentChecksums = storesContentChecksums
        self.ownsConnection = ownsConnection
    }

    deinit {
        if ownsConnection { ownConnection.close() }
        spareConnection?.close()
    }

    /// Runs `body` with the connection, serialised with every other use of it.
    func withConnection<T>(_ body: (SQLiteConnection) throws -> T) throws(StorageError) -> T {
        try locked { try body(connection) }
    }

    // MARK: Opening

    /// Opens the bucket file at `path`, creating an empty bucket there if it does not exist (and
    /// `options.createIfMissing`). A file that is not a storesh bucket, or is damaged, is an error and is
    /// left untouched.
    ///
    /// A bucket created here holds what `initialContents` returns (and takes its bucket name), or nothing.
    /// It is called only when the bucket is created, so opening an existing bucket never pays for it.
    public static func open(
        at path: String, options: LocalBucketOptions = LocalBucketOptions(),
        initialContents: (() throws(StorageError) -> BucketArchive.Contents)? = nil
    ) throws(StorageError) -> LocalBucket {
        if access(path, F_OK) != 0 {
            guard options.createIfMissing else {
                throw .bucketNotFound(path)
            }
            let seed = try initialContents?()
            let name = options.nameForNewBucket ?? seed?.bucket ?? defaultName(forFile: path)
            try create(at: path, name: name, objects: seed?.objects ?? [], options: options)
        }
        // A log beside the file is applied on open: first make sure it was written for this file.
        try BucketFileLog.verifyOwnership(of: path)
        // stat, not FileManager's attributes: those look up the owner's name, which costs an NSS lookup on
        // every open.
        var status = stat()
        let statted = stat(path, &status) == 0
        if statted && (status.st_mode & S_IFMT) == S_IFDIR {
            throw .internalError("\(path) is a directory, not a bucket file.")
        }
        if statted && status.st_size == 0 {
            // SQLite would take an empty file for an empty database and start writing to it.
            throw .internalError("\(path) is an empty file, not a storesh bucket; storesh will not change it.")
        }
        let connection = try connect(path, options: options, exists: statted)
        do {
            // Identify the file before anything could write to it.
            guard try connection.integer("PRAGMA application_id") == BucketSchema.applicationID else {
                throw StorageError.internalError(
                    "\(path) is an SQLite database, but not a storesh bucket; storesh will not change it.")
            }
            let version = try connection.integer("PRAGMA user_version") ?? 0
            guard version <= BucketSchema.version else {
                throw StorageError.internalError(
                    "\(path) was made by a newer storesh (bucket format \(version); this one reads up to \(BucketSchema.version)).")
            }
            try connection.execute(Self.connectionSettings)
            if version == 1 { try BucketSchema.upgradeFromVersion1(connection) }
            let writable = !connection.isReadOnly
            if version == 2 && writable { try BucketSchema.upgradeFromVersion2(connection) }
            if (version == 3 || version == 4) && writable { try BucketSchema.upgradeAddingNoncurrent(connection, from: version) }
            let name = try BucketSchema.readInfo("name", connection: connection)
            guard let name else {
                throw StorageError.internalError("\(path) is damaged: it has no bucket name.")
            }
            return LocalBucket(
                path: path, name: name, connection: connection, options: options,
                storesContentChecksums: version != 2 || writable, storesNoncurrent: version >= 5 || writable)
        } catch let error as SQLiteError {
            throw describe(error, path: path, options: options)
        } catch let error as StorageError {
            throw error
        } catch let error as ChecksumMismatch {
            throw damaged(error, path: path)
        } catch {
            throw .internalError("\(error)")
        }
    }

    /// A connection to an existing bucket file, for reading and writing, or for reading only when the file
    /// cannot be written.
    private static func connect(_ path: String, options: LocalBucketOptions, exists: Bool) throws(StorageError) -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
            connection.waitWhenBusy(milliseconds: options.busyTimeoutMilliseconds)
            _ = try connection.integer("PRAGMA application_id")
            return connection
        } catch let error where [SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM].contains(error.primaryCode) && exists {
            // A bucket on read-only media (or in a directory storesh may not write, where SQLite cannot make
            // its shared-memory file) can still be read; a change then fails as read-only.
            do {
                let connection = try SQLiteConnection(path: readOnlyLocation(path), flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
                connection.waitWhenBusy(milliseconds: options.busyTimeoutMilliseconds)
                return connection
            } catch {
                throw describe(error, path: path, options: options)
            }
        } catch {
            throw describe(error, path: path, options: options)
        }
    }

    /// Another connection to this (already identified) bucket file, set up as the first.
    private func connectAgain() throws(StorageError) -> SQLiteConnection {
        let connection = try Self.connect(path, options: options, exists: true)
        do {
            try connection.execute(Self.connectionSettings)
        } catch {
            throw Self.describe(error, path: path, options: options)
        }
        return connection
    }

    /// How every connection to a bucket file is set up: each commit durable, and the log cut back to 4 MiB once
    /// folded in, so that a big transaction (an import, a bulk edit) leaves no log for later processes to read.
    static let connectionSettings = "PRAGMA synchronous = FULL; PRAGMA journal_size_limit = \(4 << 20)"

    /// Where to open a bucket that cannot be opened for writing. On a read-only file system SQLite cannot
    /// make the shared-memory file a WAL database needs, so the file is opened as immutable, which is
    /// true there, unless its log holds changes not yet folded in (the log must then be read, normally).
    private static func readOnlyLocation(_ path: String) -> String {
        var fileSystem = statvfs()
        var log = stat()
        let readOnlyFileSystem = statvfs(path, &fileSystem) == 0 && (fileSystem.f_flag & UInt(ST_RDONLY)) != 0
        let logIsEmpty = stat(path + "-wal", &log) != 0 || log.st_size == 0
        return BucketFileLog.uri(path, readOnlyFileSystem && logIsEmpty ? "immutable=1" : nil)
    }

    /// A bucket name from a file name: `teaching.bucket` → `teaching`, lower-cased, other characters as `-`.
    public static func defaultName(forFile path: String) -> String {
        let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.lowercased()
        let cleaned = String(
            file.unicodeScalars.map { scalar -> Character in
                let allowed = ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-"
                    || scalar == "_" || scalar == "."
                return allowed ? Character(scalar) : "-"
            }
        ).trimmingCharacters(in: CharacterSet(charactersIn: "-_."))
        return cleaned.isEmpty ? "local" : cleaned
    }

    /// Creates a bucket file atomically: it is built under a temporary name and then linked into place,
    /// so a crash never leaves a half-made bucket, and a file someone else made meanwhile is kept.
    /// Makes a new, empty bucket file named `name` at `path` and opens it; nil when a file is there already (made
    /// by someone else meanwhile: it is not the caller's, and stays as it is). What it opens is the caller's to keep
    /// or to remove (`removeIfEmpty`).
    public static func create(newAt path: String, name: String, options: LocalBucketOptions) throws(StorageError) -> LocalBucket? {
        guard access(path, F_OK) != 0, try create(at: path, name: name, objects: [], options: options) else { return nil }
        var openOptions = options
        openOptions.createIfMissing = false
        return try open(at: path, options: openOptions)
    }

    /// Closes a bucket file this process made (`create(newAt:name:options:)`) and removes it, when it still
    /// holds no object (no one wrote to it meanwhile, this process or another); answers whether it went.
    @discardableResult
    public func removeIfEmpty() -> Bool {
        guard (try? objectCount()) == 0, (try? noncurrentCount()) == 0 else {
            close()
            return false
        }
        close()
        BucketFileLog.removeWithSidecars(path)
        BucketFileLog.synchronizeDirectory(of: path)
        return true
    }

    /// Builds the bucket file under a temporary name and links it into place; answers whether it was linked
    /// (false: a file of that name was there first, and is kept).
    @discardableResult
    private static func create(at path: String, name: String, objects: [ArchivedObject], options: LocalBucketOptions)
        throws(StorageError) -> Bool
    {
        // What a killed creation left beside it (its own temporary names, of processes that are gone) goes first.
        BucketFileLog.removeStaleTemporaries(in: (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent)
        let temporary = BucketFileLog.temporaryName(beside: path, for: "creating")
        defer { BucketFileLog.removeWithSidecars(temporary) }
        do {
            let connection = try SQLiteConnection(path: temporary, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            try connection.execute(
                "PRAGMA journal_mode = WAL; PRAGMA application_id = \(BucketSchema.applicationID); BEGIN")
            try BucketSchema.create(connection, name: name)
            try connection.execute("COMMIT")
            connection.close()
        } catch {
            throw describe(error, path: path, options: options)
        }
        if !objects.isEmpty {
            var seedOptions = options
            seedOptions.createIfMissing = false
            seedOptions.crashBeforeCommit = false
            seedOptions.crashAfterCommit = false
            let seeded = try open(at: temporary, options: seedOptions)
            try seeded.importObjects(objects, replacingEverything: false)
            seeded.close()
        }
        // The linked name must be the whole bucket: nothing may be left in the temporary name's WAL.
        if let walSize = (try? FileManager.default.attributesOfItem(atPath: temporary + "-wal"))?[.size] as? Int,
            walSize > 0
        {
            throw .internalError("Cannot create the bucket file \(path): its log was not folded into the file.")
        }
        // A log and index left by an earlier file of that name (deleted while open, or by a crash) would be
        // applied to the new file: they go first.
        if access(path, F_OK) != 0 { try BucketFileLog.removeOrphans(of: path) }
        if link(temporary, path) != 0 {
            guard errno == EEXIST else {
                throw .internalError("Cannot create the bucket file \(path): \(String(cString: strerror(errno))).")
            }
            return false
        }
        BucketFileLog.synchronizeDirectory(of: path)  // the new name itself must survive a crash
        return true
    }

    /// Closes the bucket file; the object is unusable afterwards. The last connection to close folds the log
    /// into the file and removes it (SQLite does it then, without waiting for anyone), so a bucket that no
    /// process has open is one file. Closing again does nothing.
    public func close() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            guard ownsConnection else { return }  // a transaction's engine: its bucket closes the connection
            for connection in [ownConnection, spareConnection].compactMap({ $0 }) {
                if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
                connection.close()
            }
            spareConnection = nil
        }
    }

    /// What a failed row checksum means for the user of this bucket file.
    static func damaged(_ mismatch: ChecksumMismatch, path: String) -> StorageError {
        .internalError(
            "The bucket \(path) is damaged: the stored \(mismatch.what) does not match its checksum. storesh will not write to it; `storesh check` lists what is damaged; restore a copy (storesh backup --bucket COPY \(path)), or export what can still be read.")
    }

    /// What an SQLite failure means for the user of this bucket file.
    static func describe(_ error: SQLiteError, path: String, options: LocalBucketOptions) -> StorageError {
        if error.isBusy {
            let seconds = Double(options.busyTimeoutMilliseconds) / 1000
            return StorageError(
                .unavailable,
                "The bucket \(path) is busy: another process is changing it (waited \(seconds.formatted()) s). Nothing was changed; try again when it has finished."
            )
        }
        if error.primaryCode == SQLITE_NOTADB {
            return .internalError("\(path) is not a storesh bucket (SQLite: \(error.message)); storesh will not change it.")
        }
        if error.isDamage {
            return .internalError(
                "The bucket \(path) is damaged (SQLite: \(error.message)). storesh will not write to it; restore a copy (storesh backup --bucket COPY \(path)), or export what can still be read."
            )
        }
        if error.isReadOnly || error.primaryCode == SQLITE_PERM {
            return .internalError("The bucket \(path) is read-only (\(error.message)); nothing was changed.")
        }
        if error.isDiskFull || (error.primaryCode == SQLITE_IOERR && hasNoFreeSpace(path)) {
            return .internalError("The disk holding \(path) is full; nothing was changed.")
        }
        if error.primaryCode == SQLITE_CANTOPEN {
            return .internalError("Cannot open the bucket \(path): \(error.message).")
        }
        return .internalError("Storage engine error on \(path): \(error.message).")
    }

    /// Whether the file system holding `path` is full: SQLite reports a full disk as an I/O error when it
    /// cannot make its shared-memory file.
    private static func hasNoFreeSpace(_ path: String) -> Bool {
        var fileSystem = statvfs()
        return statvfs(path, &fileSystem) == 0 && fileSystem.f_bavail == 0
    }

    // MARK: Transactions

    public func withTransaction<Value>(
        forWriting: Bool, _ body: (any BucketTransaction) async throws -> TransactionOutcome<Value>
    ) async throws -> Value {
        // The transaction runs on the bucket's own connection when it is free (the usual case: one command or
        // script at a time), else on a new one of its own.
        let (connection, borrowed) = try lendConnection()
        let engine = LocalBucket(
            path: path, name: name, connection: connection, options: options,
            storesContentChecksums: storesContentChecksums, storesNoncurrent: storesNoncurrent, ownsConnection: !borrowed, lineage: lineage)
        defer {
            engine.close()
            if borrowed { lock.withLock { lent = false } }
        }
        try await engine.beginTransaction(forWriting: forWriting)
        let transaction = LocalTransaction(engine: engine)
        do {
            switch try await body(transaction) {
            case .commit(let value):
                try await engine.commitTransaction()
                return value
            case .rollback(let value):
                try await engine.rollbackTransaction()
                return value
            }
        } catch {
            try? await engine.rollbackTransaction()
            throw error
        }
    }

    /// The bucket's own connection for a transaction, or a new one when a transaction has it already.
    private func lendConnection() throws(StorageError) -> (SQLiteConnection, borrowed: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if isClosed { throw .internalError("The bucket \(path) was closed.") }
        if !lent {
            lent = true
            return (ownConnection, true)
        }
        return (try connectAgain(), false)
    }

    var isInTransaction: Bool {
        get async { lock.withLock { inExplicitTransaction } }
    }

    func beginTransaction(forWriting: Bool) async throws {
        try locked {
            precondition(!inExplicitTransaction, "transactions do not nest")
            // IMMEDIATE takes the write lock now, so a script's plan is made on the state it will change.
            try connection.execute(forWriting ? "BEGIN IMMEDIATE" : "BEGIN")
            inExplicitTransaction = true
            transactionWrote = false
            cachedEpochs = nil
            scannedRows = [:]
        }
    }

    func commitTransaction() async throws {
        try locked {
            guard inExplicitTransaction else { return }
            try commit(wrote: transactionWrote)
            inExplicitTransaction = false
            cachedEpochs = nil
            scannedRows = [:]
        }
    }

    func rollbackTransaction() async throws {
        try locked {
            guard inExplicitTransaction else { return }
            inExplicitTransaction = false
            cachedEpochs = nil
            scannedRows = [:]
            if !connection.isAutocommit { try connection.execute("ROLLBACK") }
        }
    }

    func beginCommand() async throws {
        try locked {
            precondition(inExplicitTransaction, "commands are marked inside a transaction")
            try connection.execute("SAVEPOINT command")
        }
    }

    func endCommand() async throws {
        try locked { try connection.execute("RELEASE command") }
    }

    func undoCommand() async throws {
        try locked {
            cachedEpochs = nil
            scannedRows = [:]
            try connection.execute("ROLLBACK TO command; RELEASE command")
        }
    }

    /// Commits the open transaction; one that changed anything extends the file's lineage first.
    private func commit(wrote: Bool) throws {
        let mark = wrote ? try lineage.advance(connection) : nil
        if options.crashBeforeCommit { kill(getpid(), SIGKILL) }
        try connection.execute("COMMIT")
        if options.crashAfterCommit { kill(getpid(), SIGKILL) }
        if let mark { lineage.committed(mark, on: connection) }
    }

    /// Runs `body` with the connection, turning SQLite failures into storage errors.
    private func locked<T>(_ body: () throws -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        if isClosed { throw .internalError("The bucket \(path) was closed.") }
        if lent && spareConnection == nil { spareConnection = try connectAgain() }
        do {
            return try body()
        } catch let error as StorageError {
            throw error
        } catch let error as SQLiteError {
            throw Self.describe(error, path: path, options: options)
        } catch let error as ChecksumMismatch {
            throw Self.damaged(error, path: path)
        } catch {
            throw .internalError("\(error)")
        }
    }

    /// A change: alone, it is its own IMMEDIATE transaction; inside an explicit transaction it is a
    /// savepoint, so a failed change leaves nothing behind while earlier ones stay.
    ///
    /// `.checkedFirst` is for a body that reads and checks everything before it writes, and then writes in one
    /// statement or inside `atomically`: inside an explicit transaction it needs no savepoint of its own (a
    /// failed statement leaves nothing behind by itself), which a bulk edit of a million objects would pay
    /// for each of them. Either way the scanned rows are forgotten, but for the one a `.checkedFirst` body
    /// updates (it forgets that one itself).
    func change<T>(_ writes: ChangeWrites = .anyOrder, _ body: () throws -> T) throws(StorageError) -> T {
        try locked {
            if inExplicitTransaction {
                transactionWrote = true
                if writes == .checkedFirst {
                    do {
                        return try body()
                    } catch {
                        scannedRows = [:]
                        throw error
                    }
                }
                scannedRows = [:]
                try connection.statement("SAVEPOINT change").step()
                do {
                    let result = try body()
                    try connection.statement("RELEASE change").step()
                    return result
                } catch {
                    cachedEpochs = nil
                    try? connection.execute("ROLLBACK TO change; RELEASE change")
                    throw error
                }
            }
            cachedEpochs = nil
            try connection.execute("BEGIN IMMEDIATE")
            defer { cachedEpochs = nil }
            do {
                let result = try body()
                try commit(wrote: true)
                return result
            } catch {
                if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    /// How a change's body writes (see `change`).
    enum ChangeWrites {
        /// Reads and writes in any order: a savepoint makes them one.
        case anyOrder
        /// Reads and checks first, then one statement or `atomically`.
        case checkedFirst
    }

    /// Several statements of a `.checkedFirst` change that must land together: a savepoint inside an
    /// explicit transaction (alone, the change is its own transaction already).
    func atomically(_ body: () throws -> Void) throws {
        guard inExplicitTransaction else { return try body() }
        try connection.statement("SAVEPOINT writes").step()
        do {
            try body()
            try connection.statement("RELEASE writes").step()
        } catch {
            cachedEpochs = nil
            try? connection.execute("ROLLBACK TO writes; RELEASE writes")
            throw error
        }
    }

    /// A number that moves whenever another connection (this process's or another's: a shell, a script, a server)
    /// commits a change to the bucket file: SQLite's `data_version`. Cheap to ask; `storesh serve`'s live page
    /// asks it a few times a second while it is open.
    public func changeCounter() throws(StorageError) -> Int64 {
        try locked { try connection.integer("PRAGMA data_version") ?? 0 }
    }

    /// A read of several statements that must see one state of the bucket.
    func read<T>(_ body: () throws -> T) throws(StorageError) -> T {
        try locked {
            if inExplicitTransaction { return try body() }
            try connection.execute("BEGIN")
            defer { try? connection.execute("COMMIT") }
            return try body()
        }
    }

    // MARK: Bucket

    public var capabilities: BucketCapabilities {
        [.transactions, .snapshots, .rulesAdministration, .archives, .integrityCheck, .immediateReads, .bucketSettings]
    }
    public var transactions: (any TransactionalBucket)? { self }
    public var snapshotStore: (any SnapshotStore)? { self }
    public var immediateReads: (any ImmediateReads)? { self }
    public var rulesStore: (any RulesStore)? { self }
    public var settingsStore: (any BucketSettingsStore)? { self }
    public var objectVersions: (any ObjectVersions)? { self }
    public var objectMoves: (any ObjectMoves)? { self }
    public var endUserSignIn: (any EndUserSignIn)? { nil }
    public var batchedChanges: (any BatchedChanges)? { nil }
    public var uniformUpdates: (any UniformUpdates)? { self }
    public var asTransaction: (any BucketTransaction)? { nil }
    public var pageTokens: any PageTokenFormat { LocalPageTokens() }
    public var scheme: String { "gs" }
    public var accessDescription: String? { nil }
    public var guardsChanges: Bool { true }
    /// A bucket file stores any metadata Cloud Storage accepts; its limits are checked as it is written.
    public var storageClasses: StorageClasses { .cloudStorage }
    public func validateStorable(_ metadata: ObjectMetadata) throws {}

    public func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        try listPage(reference, options: options)
    }

    /// The synchronous form of `list`, for in-process callers that are not async.
    public func listPage(_ reference: StoragePath, options: ListOptions) throws(StorageError) -> ListPage {
        try read {
            let page = try Lister.page(
                of: reference, bucket: name, options: options, index: NameIndex(connection: connection), tokens: LocalPageTokens())
            return try withItemMetadata(page, options)
        }
    }

    /// The page with its items' metadata when the listing asked for it, read with the page, in its transaction:
    /// a list answers with the objects as they are (R2: `list`).
    private func withItemMetadata(_ page: ListPage, _ options: ListOptions) throws -> ListPage {
        guard options.includeMetadata, !page.items.isEmpty else { return page }
        var page = page
        let rows = try fetchRows(page.items)
        page.itemMetadata = try page.items.map { item in
            // The listing read the name in this same transaction: a row missing now is the engine's fault.
            guard let row = rows[ObjectName(stored: item)] else {
                throw StorageError.internalError("The object \(MessageText.oneLine(item)) was listed but its metadata cannot be read.")
            }
            return row.metadata
        }
        return page
    }

    /// A page of the names under `prefix` (any string) as the Cloud Storage JSON API lists them (rules V2, G6):
    /// every name as it is, collapsed at the next `/` when `delimited`.
    public func listStoredNames(prefix: String, delimited: Bool, options: ListOptions) throws(StorageError) -> ListPage {
        try read {
            let page = try Lister.page(
                prefix: prefix, delimited: delimited, view: .asStored, bucket: name, options: options,
                index: NameIndex(connection: connection), tokens: LocalPageTokens())
            return try withItemMetadata(page, options)
        }
    }

    public func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        try currentMetadata(of: object)
    }

    /// The synchronous form of `metadata(of:)`.
    public func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata {
        try read {
            guard let row = try fetchRow(object.rawValue) else { throw StorageError.objectNotFound(object.rawValue) }
            return row.metadata
        }
    }

    public func updateMetadata(of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition)
        async throws -> UpdateResult
    {
        try changeMetadata(of: object, precondition: precondition) { current, now throws(StorageError) in try current.applying(update, now: now) }
    }

    /// Stores `after`'s writable metadata as it is (decided by the rules layer, or planned), if the object is still
    /// `before`: nothing is merged again.
    public func applyMetadata(of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata) async throws
        -> ObjectMetadata
    {
        try changeMetadata(of: object, precondition: .matches(before)) { current, now throws(StorageError) in
            try current.replacingWritableMetadata(with: after, now: now)
        }.metadata
    }

    /// A change of an object's metadata, made by `next` from the object's row (as the last scan of this transaction
    /// found it, else read) and the change's time, if the object satisfies `precondition`.
    private func changeMetadata(
        of object: ObjectName, precondition: Precondition,
        _ next: (ObjectMetadata, Timestamp) throws(StorageError) -> (metadata: ObjectMetadata, changed: Bool)
    ) throws(StorageError) -> UpdateResult {
        try change(.checkedFirst) {
            let scanned = scannedRows.removeValue(forKey: object)
            guard let row = try scanned ?? fetchRow(object.rawValue) else { throw StorageError.objectNotFound(object.rawValue) }
            let now = options.clock.nextChangeTime()
            var (next, changed) = try next(row.metadata, now)
            guard precondition.isSatisfied(by: row.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: row.metadata)
            }
            if let retention = next.cloudStorage.retention, retention != row.metadata.cloudStorage.retention {
                try BucketSettings.refuseObjectRetention(of: object.rawValue, under: settingsInTransaction())
            }
            if changed && row.metadata.rewrites(to: next) {
                // A change of storage class is a rewrite (rule M9): a new generation over the same content (shared,
                // not copied), replacing the object as a write does; refused as a write is by a hold or a retention.
                try refuseIfProtected(row.metadata, .rewritten)
                try atomically {
                    next.generation = try nextGeneration(now: now)
                    try store(next, contentID: row.version.contentID, replacing: row, noncurrentSince: now)
                }
            } else if changed {
                try storeMetadata(next, over: row)
            }
            return UpdateResult(metadata: next, previous: row.metadata, changed: changed)
        }
    }

    /// Makes `metadata` the live version of `row`'s object, over the same content; the version it replaces is
    /// kept first if a snapshot sees it.
    func storeMetadata(_ metadata: ObjectMetadata, over row: LiveRow) throws {
        let version = StoredVersion(metadata, contentID: row.version.contentID, born: try epochs().current)
        if try isSnapshotted(row.version) {
            try atomically {
                try keepIfSnapshotted(row.version)
                try replaceLive(version, id: row.id, bornChanges: true)
            }
        } else {
            try replaceLive(version, id: row.id, bornChanges: version.born != row.version.born)
        }
    }

    public func write(_ content: Data, to object: ObjectName, options writeOptions: WriteOptions, precondition: Precondition)
        async throws -> ObjectMetadata
    {
        try object.checkNewObjectName()
        try CustomMetadataLimits.validate(writeOptions.customMetadata)
        let md5 = ContentHash.md5Base64(content)
        if let expected = writeOptions.expectedMD5, expected != md5 {
            throw StorageError(
                .nonMatchingChecksum,
                "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        return try change {
            let existing = try fetchRow(object.rawValue)
            let now = options.clock.nextChangeTime()
            var metadata = ObjectMetadata.newObject(
                bucket: name, name: object, content: content, generation: try nextGeneration(now: now), now: now,
                properties: writeOptions.properties, customMetadata: writeOptions.customMetadata,
                guessingContentType: writeOptions.guessesContentType)
            guard precondition.isSatisfied(by: existing?.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing?.metadata)
            }
            try refuseIfProtected(existing?.metadata, .overwritten)
            metadata.cloudStorage = try newObjectFields(writeOptions.cloudStorage, now: now)
            try refuseRestrictedEncryption(of: metadata.cloudStorage, name: object.rawValue)
            try store(metadata, content: content, replacing: existing, noncurrentSince: now)
            return metadata
        }
    }

    /// Content up to this size is written and read whole; larger content a piece at a time.
    static let streamedPieceBytes = 1 << 20

    /// The largest object a bucket file holds: its content is one SQLite blob (`SQLiteConnection.largestValueBytes`).
    public static var largestObjectBytes: Int64 { SQLiteConnection.largestValueBytes }

    /// The refusal of content larger than a bucket file holds, before any of it is written.
    static func objectTooLarge(_ size: Int64) -> StorageError {
        .invalidArgument(
            "The object would be \(MessageText.byteCount(size)) (\(MessageText.grouped(size)) bytes), more than a bucket file holds (\(MessageText.grouped(largestObjectBytes)) bytes, SQLite's largest value); nothing was written.")
    }

    /// Writes content from `source` a piece at a time (`streamedPieceBytes`), so that an object of any size
    /// passes through bounded memory; its MD5 is the source's.
    public func write(from source: any ContentSource, to object: ObjectName, options writeOptions: WriteOptions, precondition: Precondition)
        async throws -> ObjectMetadata
    {
        try object.checkNewObjectName()
        if source.size <= Int64(Self.streamedPieceBytes) {
            return try await write(try source.readAll(), to: object, options: writeOptions, precondition: precondition)
        }
        try CustomMetadataLimits.validate(writeOptions.customMetadata)
        let md5 = source.md5Base64
        if let expected = writeOptions.expectedMD5, expected != md5 {
            throw StorageError(.nonMatchingChecksum, "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        return try change {
            let existing = try fetchRow(object.rawValue)
            let now = options.clock.nextChangeTime()
            var metadata = ObjectMetadata.newObject(
                bucket: name, name: object, size: source.size, md5Hash: md5, generation: try nextGeneration(now: now), now: now,
                properties: writeOptions.properties, customMetadata: writeOptions.customMetadata,
                guessingContentType: writeOptions.guessesContentType)
            guard precondition.isSatisfied(by: existing?.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing?.metadata)
            }
            try refuseIfProtected(existing?.metadata, .overwritten)
            metadata.cloudStorage = try newObjectFields(writeOptions.cloudStorage, now: now)
            try refuseRestrictedEncryption(of: metadata.cloudStorage, name: object.rawValue)
            let (contentID, crc) = try storeContent(from: source)
            metadata.crc32c = crc.base64
            try store(metadata, contentID: contentID, replacing: existing, noncurrentSince: now)
            return metadata
        }
    }

    /// An object's metadata, with its content handed to `piece` a piece at a time (at most `streamedPieceBytes`
    /// in memory), from one state of the bucket. The content's MD5 is checked as it passes: damage is thrown
    /// after the last piece, so a caller that keeps the pieces aside must drop them then.
    public func currentObject(_ object: ObjectName, contentPieces piece: (Data) throws -> Void) throws(StorageError) -> ObjectMetadata {
        try currentObject(object, bytes: { _ in nil }, contentPieces: piece).metadata
    }

    /// An object's metadata, with the bytes of its content that `bytes` picks (given the size; nil: all of them)
    /// handed to `piece` a piece at a time, from one state of the bucket: a ranged read (HTTP `Range`) reads its range
    /// and no more. A range is not checked against the MD5, which is the whole content's (`storesh check` is).
    public func currentObject(
        _ object: ObjectName, bytes: (Int64) throws -> Range<Int64>?, contentPieces piece: (Data) throws -> Void
    ) throws(StorageError) -> (metadata: ObjectMetadata, range: Range<Int64>?) {
        try read {
            guard let row = try fetchRow(object.rawValue) else { throw StorageError.objectNotFound(object.rawValue) }
            let range = try bytes(row.version.size)
            try streamContent(of: row.version, range: range, piece)
            return (row.metadata, range)
        }
    }

    /// `range` of a version's content (all of it when nil, then checked against its MD5 once read), a piece of at most
    /// `streamedPieceBytes` at a time.
    func streamContent(of version: StoredVersion, range: Range<Int64>? = nil, _ piece: (Data) throws -> Void) throws {
        let blob: SQLiteBlob
        do {
            blob = try SQLiteBlob(connection, table: "contents", column: "data", row: version.contentID, writable: false)
        } catch {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (missing)")
        }
        defer { blob.close() }
        if let range {
            guard range.lowerBound >= 0, range.upperBound <= Int64(blob.size) else {
                throw StorageError.internalError("Bytes \(range) of \(version.name.debugDescription) are not within its \(blob.size) bytes.")
            }
            // A range is not the whole content its MD5 is of: `storesh check` verifies that.
            return try blob.forEachPiece(of: Self.streamedPieceBytes, in: Int(range.lowerBound)..<Int(range.upperBound), piece)
        }
        var md5 = MD5Accumulator()
        try blob.forEachPiece(of: Self.streamedPieceBytes) { bytes in
            md5.update(bytes)
            try piece(bytes)
        }
        guard md5.base64() == version.md5Hash else {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (its MD5 differs)")
        }
    }

    /// An object's metadata and content, read from one state of the bucket.
    public func currentObjectWithContent(_ object: ObjectName) throws(StorageError) -> (ObjectMetadata, Data) {
        try read {
            guard let row = try fetchRow(object.rawValue) else { throw StorageError.objectNotFound(object.rawValue) }
            return (row.metadata, try content(of: row.version))
        }
    }

    public func read(_ object: ObjectName) async throws -> Data {
        try read {
            guard let row = try fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
            return try content(of: row.version)
        }
    }

    /// Streamed from the content's row a piece at a time (`currentObject(_:contentPieces:)`), its MD5 checked as it
    /// passes: a get of any size reads through bounded memory.
    public func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        var size: Int64 = 0
        // The sink's own failure (a full disk) is the caller's to read as it was thrown, not as the bucket's.
        var sinkFailure: (any Error)?
        do {
            _ = try currentObject(object) { piece in
                do {
                    try sink.write(piece)
                } catch {
                    sinkFailure = error
                    throw error
                }
                size += Int64(piece.count)
            }
        } catch {
            throw sinkFailure ?? error
        }
        return size
    }

    public func delete(_ object: ObjectName, precondition: Precondition) async throws {
        try change {
            let row = try fetchRow(object.rawValue)
            guard let row else { throw StorageError.objectNotFound(object.rawValue) }
            guard precondition.isSatisfied(by: row.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: row.metadata)
            }
            try refuseIfProtected(row.metadata, .deleted)
            try removeLive(row.version, noncurrentSince: options.clock.nextChangeTime())
        }
    }

    public func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        try scanPage(prefix: prefix, after: after, limit: limit)
    }

    /// The synchronous form of `scan`.
    public func scanPage(prefix: String, after: String?, limit: Int) throws(StorageError) -> ObjectScanPage {
        try read {
            let statement = try pageRows(prefix: prefix, after: after, limit: limit)
            defer { statement.reset() }
            var objects: [ObjectMetadata] = []
            var more = false
            scannedRows.removeAll(keepingCapacity: true)
            while try statement.step() {
                let row = try LiveRow(statement, bucket: name)
                guard row.metadata.fullPath.utf8.starts(with: prefix.utf8) else { break }
                if objects.count == limit {
                    more = true
                    break
                }
                objects.append(row.metadata)
                if inExplicitTransaction { scannedRows[ObjectName(stored: row.version.name)] = row }
            }
            return ObjectScanPage(objects: objects, resumeAfter: more ? objects.last?.fullPath : nil)
        }
    }

    /// The live rows (`columns` of them: `LiveRow.columns`, or the name alone) of a page of `scan`, bound: up to
    /// `limit + 1` from where the page starts, in byte order, the caller stopping at the first without `prefix`
    /// (and, at `limit`, knowing more follow).
    func pageRows(prefix: String, after: String?, limit: Int, columns: String = LiveRow.columns) throws -> SQLiteStatement {
        // One bound, so that the name index is entered where the page starts: with `name >= prefix AND name >
        // after` SQLite would walk every earlier name of the prefix again, and a walk of a million names, a page
        // at a time, would take quadratic time.
        let resumes = after.map { !NameBytes.precedes($0, prefix) } ?? false
        let statement = try connection.statement(
            "SELECT \(columns) FROM objects WHERE name \(resumes ? ">" : ">=") ?1 ORDER BY name LIMIT ?2")
        statement.bind(1, resumes ? after : prefix)
        statement.bind(2, Int64(limit) + 1)
        return statement
    }

    // MARK: Rules

    public func storedRules() throws -> (source: String, origin: String)? {
        try read {
            guard let source = try BucketSchema.readInfo("rules", connection: connection) else { return nil }
            return (source, try BucketSchema.readInfo("rules_origin", connection: connection) ?? "(stored rules)")
        }
    }

    public func storedSettings() throws -> BucketSettings? {
        try read { try settingsInTransaction() }
    }

    /// The stored settings, read in the transaction (and under the lock) the caller holds.
    private func settingsInTransaction() throws(StorageError) -> BucketSettings? {
        do {
            guard let text = try BucketSchema.readInfo("settings", connection: connection) else { return nil }
            return try JSONDecoder().decode(BucketSettings.self, from: Data(text.utf8))
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError.internalError("The bucket settings stored in \(path) cannot be read (\(error)).")
        }
    }

    public func storeSettings(_ settings: BucketSettings) throws {
        try change { try storeSettingsInTransaction(settings) }
    }

    /// Stores the settings in the change the caller holds.
    private func storeSettingsInTransaction(_ settings: BucketSettings) throws {
        let text: String
        do {
            text = String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
        } catch {
            throw StorageError.internalError("The bucket settings cannot be written (\(error)).")
        }
        try BucketSchema.writeInfo("settings", text, connection: connection)
        try storeWriteDefaults(settings)
    }

    public func storeRules(source: String, origin: String) throws {
        try change {
            try BucketSchema.writeInfo("rules", source, connection: connection)
            try BucketSchema.writeInfo("rules_origin", origin, connection: connection)
        }
    }

    // MARK: Bulk and maintenance

    /// The number of objects in the bucket.
    /// The latest time an object of the bucket was written or updated; nil for an empty bucket.
    /// The earliest time an object of the bucket was made; nil for an empty bucket.
    public func earliestChange() throws(StorageError) -> Timestamp? {
        try read { try connection.integer("SELECT min(time_created) FROM objects").map { Timestamp(microseconds: $0) } }
    }

    public func latestChange() throws(StorageError) -> Timestamp? {
        try read { try connection.integer("SELECT max(max(updated), max(time_created)) FROM objects").map { Timestamp(microseconds: $0) } }
    }

    public func objectCount() throws(StorageError) -> Int {
        try read { Int(try connection.integer("SELECT count(*) FROM objects") ?? 0) }
    }

    /// Writes many objects in one transaction: all of them, or (on any error) none.
    /// With `replacingEverything`, the bucket holds exactly `objects` afterwards.
    public func importObjects(
        _ objects: [ArchivedObject], replacingEverything: Bool, settings: SettingsImport? = nil, counting: (any WorkCounter)? = nil
    ) throws(StorageError) {
        try importObjects(count: objects.count, replacingEverything: replacingEverything, settings: settings, counting: counting) {
            index throws(StorageError) in (objects[index], nil)
        }
    }

    /// The settings an import gives the bucket, made from what it has (or a new bucket's) when the import lands;
    /// nil leaves them as they are.
    public typealias SettingsImport = (_ current: BucketSettings, _ now: Timestamp) throws(StorageError) -> BucketSettings?

    /// Writes `count` objects in one transaction, each made by `object` when its turn comes: all of them, or (on any
    /// error, `object`'s too) none. An object given with a content source (its `content` then empty) is written from
    /// it a piece at a time, so an import holds a piece of one object at a time, whatever their sizes.
    ///
    /// `settings` come first, so that the objects are held to them (an object's own retention needs a bucket that
    /// takes one). A noncurrent or soft-deleted generation is kept as such, replacing one of that name and number;
    /// with `replacingEverything` the bucket's own noncurrent and soft-deleted generations go too.
    public func importObjects(
        count: Int, replacingEverything: Bool, settings: SettingsImport? = nil, counting: (any WorkCounter)? = nil,
        object: (Int) throws(StorageError) -> (ArchivedObject, (any ContentSource)?)
    ) throws(StorageError) {
        counting?.begin("importing", total: count)
        defer { counting?.end() }
        try change {
            if let settings {
                let now = options.clock.nextChangeTime()
                if let imported = try settings(try settingsInTransaction() ?? BucketSettings(madeAt: now), now) {
                    try storeSettingsInTransaction(imported)
                }
            }
            let bucketSettings = try settingsInTransaction()
            if replacingEverything { _ = try removeEverythingInTransaction() }
            var lastGeneration = try storedLastGeneration()
            for index in 0..<count {
                let (object, source) = try object(index)
                try object.name.checkNewObjectName()
                try CustomMetadataLimits.validate(object.customMetadata)
                if object.cloudStorage.retention != nil {
                    try BucketSettings.refuseObjectRetention(of: object.name.rawValue, under: bucketSettings)
                }
                let now = options.clock.nextChangeTime()
                // An archived generation is kept as it was; a new object gets a fresh one (rule M3).
                let generation = object.generation ?? max(now.microseconds, lastGeneration + 1)
                lastGeneration = max(lastGeneration, generation)
                if object.kind != .live {
                    let metadata: ObjectMetadata
                    let contentID: Int64
                    if let source {
                        metadata = object.metadata(bucket: name, generation: generation, now: now, size: source.size, md5Hash: source.md5Base64)
                        contentID = try storeContent(from: source).contentID
                    } else {
                        metadata = object.metadata(bucket: name, generation: generation, now: now)
                        contentID = try storeContent(object.content)
                    }
                    try storeKeptGeneration(metadata, contentID: contentID)
                    counting?.advance()
                    continue
                }
                let existing = try fetchRow(object.name.rawValue)
                if let source {
                    var metadata = object.metadata(bucket: name, generation: generation, now: now, size: source.size, md5Hash: source.md5Base64)
                    let (contentID, crc) = try storeContent(from: source)
                    metadata.crc32c = crc.base64
                    try store(metadata, contentID: contentID, replacing: existing)
                } else {
                    try store(object.metadata(bucket: name, generation: generation, now: now), content: object.content, replacing: existing)
                }
                counting?.advance()
            }
            try storeLastGeneration(lastGeneration)
        }
    }

    /// Every object, in name order, with a way to read its content a piece at a time (`pieces`, which checks the
    /// MD5 at the end): an export of objects as large as a bucket file holds, in bounded memory.
    public func forEachObject(_ body: (ObjectMetadata, _ pieces: ((Data) throws -> Void) throws -> Void) throws -> Void) throws(StorageError) {
        try read {
            let statement = try connection.statement("SELECT \(LiveRow.columns) FROM objects ORDER BY name")
            defer { statement.reset() }
            while try statement.step() {
                let row = try LiveRow(statement, bucket: name)
                try body(row.metadata) { piece in try streamContent(of: row.version, piece) }
            }
        }
    }

    /// Empties the bucket as its owner does (the emulator's reset; an import that replaces everything): every
    /// object, and every noncurrent and soft-deleted generation, goes, whatever holds or retention say (they are
    /// rules of the storage API, and this is the file's owner emptying it, as deleting the file would); versions
    /// kept for snapshots stay with them. Answers how many objects and generations went.
    @discardableResult
    public func removeEverything() throws(StorageError) -> Int {
        try change { try removeEverythingInTransaction() }
    }

    private func removeEverythingInTransaction() throws -> Int {
        // A page of rows at a time, each page after the last one's last id: a bucket of millions of objects is
        // never listed whole.
        let page = try connection.statement("SELECT \(LiveRow.columns) FROM objects WHERE id > ?1 ORDER BY id LIMIT 1000")
        defer { page.reset() }
        var after = Int64.min
        var removed = 0
        while true {
            page.bind(1, after)
            var rows: [LiveRow] = []
            while try page.step() { rows.append(try LiveRow(page, bucket: name)) }
            page.reset()
            guard let last = rows.last else { break }
            after = last.id
            for row in rows { try removeLive(row.version) }
            removed += rows.count
        }
        return removed + (try removeKeptGenerations())
    }

    /// What an archive holds of the bucket, read in one transaction (for export): `begin` is given its stored
    /// settings (nil when none were ever stored) and how many objects and generations follow; then `body` each live
    /// object with its content in name order, then each noncurrent generation (with its `timeDeleted`) and each
    /// soft-deleted one (its fields say when it was deleted) by name and generation.
    public func forEachArchivedObject(
        begin: (_ settings: BucketSettings?, _ total: Int) throws -> Void, _ body: (ObjectMetadata, Data) throws -> Void
    ) throws(StorageError) {
        try read {
            let kept = try keptGenerationCountsInTransaction()
            try begin(try settingsInTransaction(), Int(try connection.integer("SELECT count(*) FROM objects") ?? 0) + kept.noncurrent + kept.softDeleted)
            let live = try connection.statement("SELECT \(LiveRow.columns) FROM objects ORDER BY name")
            defer { live.reset() }
            while try live.step() {
                let row = try LiveRow(live, bucket: name)
                try body(row.metadata, try content(of: row.version))
            }
            guard storesNoncurrent else { return }
            for (table, columns, softDeleted) in [
                ("noncurrent", NoncurrentRow.columns, false), ("soft_deleted", NoncurrentRow.softDeletedColumns, true),
            ] {
                let statement = try connection.statement("SELECT \(columns) FROM \(table) ORDER BY name, generation")
                defer { statement.reset() }
                while try statement.step() {
                    let row = try NoncurrentRow(statement, bucket: name, softDeleted: softDeleted)
                    try body(row.metadata, try content(of: row.version))
                }
            }
        }
    }

    // MARK: Generations

    /// A unique generation, increasing across processes: `now` in microseconds unless an earlier change
    /// already used that or later (the real clock can step back; `--clock` restarts at each run).
    func nextGeneration(now: Timestamp) throws -> Int64 {
        let generation = max(now.microseconds, try storedLastGeneration() + 1)
        try storeLastGeneration(generation)
        return generation
    }

    private func storedLastGeneration() throws -> Int64 {
        Int64(try BucketSchema.readInfo("last_generation", connection: connection) ?? "0") ?? 0
    }

    private func storeLastGeneration(_ generation: Int64) throws {
        try BucketSchema.writeInfo("last_generation", String(generation), connection: connection)
    }

    // MARK: Versions

    /// The current epoch (changes now are born in it) and the newest snapshot's epoch, if any.
    struct Epochs {
        var current: Int64
        var newestSnapshot: Int64?
    }

    func epochs() throws -> Epochs {
        if let cachedEpochs { return cachedEpochs }
        guard let text = try BucketSchema.readInfo("epoch", connection: connection), let current = Int64(text) else {
            throw ChecksumMismatch(what: "bucket setting \"epoch\" (missing)")
        }
        let newest = try connection.statement("SELECT max(epoch) FROM snapshots")
        defer { newest.reset() }
        _ = try newest.step()
        let epochs = Epochs(current: current, newestSnapshot: newest.isNull(0) ? nil : newest.int64(0))
        cachedEpochs = epochs
        return epochs
    }

    /// Starts a new epoch (after a snapshot is taken) and forgets the cached one.
    func setEpochs(current: Int64) throws {
        try BucketSchema.writeInfo("epoch", String(current), connection: connection)
        cachedEpochs = nil
    }

    /// Before a live version is overwritten or deleted: copies it into `history` if a snapshot sees it.
    /// Returns whether it did (then the version's content stays referenced).
    @discardableResult
    func keepIfSnapshotted(_ version: StoredVersion) throws -> Bool {
        guard try isSnapshotted(version) else { return false }
        let epochs = try epochs()
        let insert = try connection.statement(StoredVersion.insertKept)
        defer { insert.reset() }
        version.bindKept(insert, died: epochs.current)
        try insert.step()
        return true
    }

    /// Whether a snapshot sees the version (it was born before the newest snapshot was taken).
    func isSnapshotted(_ version: StoredVersion) throws -> Bool {
        guard let newest = try epochs().newestSnapshot else { return false }
        return version.born <= newest
    }

    /// Deletes a live version, keeping it first if a snapshot sees it and, when `noncurrentSince` (the change's time) is
    /// given, as a noncurrent generation (versioning on, and `asNoncurrent`) or a soft-deleted one (a soft delete
    /// policy: `keepReplaced`); its content goes if nothing else keeps it.
    func removeLive(_ version: StoredVersion, noncurrentSince: Timestamp? = nil, asNoncurrent: Bool = true) throws {
        let snapshotted = try keepIfSnapshotted(version)
        let kept = try keepReplaced(version, at: noncurrentSince, asNoncurrent: asNoncurrent) || snapshotted
        let delete = try connection.statement("DELETE FROM objects WHERE name = ?1")
        defer { delete.reset() }
        delete.bind(1, version.name)
        try delete.step()
        if !kept { try releaseContent(version.contentID, of: version.name) }
    }

    /// Deletes content that no version refers to any longer. Only versions of one name share content.
    func releaseContent(_ contentID: Int64, of name: String) throws {
        let release = try connection.statement(
            """
            DELETE FROM contents WHERE id = ?1
            AND NOT EXISTS (SELECT 1 FROM objects WHERE name = ?2 AND content_id = ?1)
            AND NOT EXISTS (SELECT 1 FROM history WHERE name = ?2 AND content_id = ?1)
            \(storesNoncurrent ? Self.releasedUnlessKept : "")
            """)
        defer { release.reset() }
        release.bind(1, contentID)
        release.bind(2, name)
        try release.step()
        guard connection.changedRows > 0, storesContentChecksums else { return }
        let releaseChecksum = try connection.statement("DELETE FROM content_checksums WHERE content_id = ?1")
        defer { releaseChecksum.reset() }
        releaseChecksum.bind(1, contentID)
        try releaseChecksum.step()
    }

    /// The conditions under which content is kept for a noncurrent or soft-deleted version (format 5).
    private static let releasedUnlessKept = """
        AND NOT EXISTS (SELECT 1 FROM noncurrent WHERE name = ?2 AND content_id = ?1)
        AND NOT EXISTS (SELECT 1 FROM soft_deleted WHERE name = ?2 AND content_id = ?1)
        """

    /// Inserts a live version (its name must not be live).
    func insertLive(_ version: StoredVersion) throws {
        let insert = try connection.statement(StoredVersion.insertLive)
        defer { insert.reset() }
        version.bindLive(insert)
        try insert.step()
    }

    /// Overwrites the live row `id` (of the version's name), by its row id: no lookup of the name. Its
    /// `born` is written only when it changes, since that column is indexed.
    private func replaceLive(_ version: StoredVersion, id: Int64, bornChanges: Bool) throws {
        let update = try connection.statement(
            bornChanges ? Self.replaceRowWithBorn : Self.replaceRowKeepingBorn)
        defer { update.reset() }
        version.bindLive(update)
        update.bind(18, id)
        try update.step()
        guard connection.changedRows == 1 else {
            throw StorageError.internalError("The row of \(version.name.debugDescription) changed while it was being updated; nothing was changed.")
        }
    }

    private static let replaceRowKeepingBorn = """
        UPDATE objects SET generation = ?2, metageneration = ?3, size = ?4, time_created = ?5, updated = ?6,
        md5_hash = ?7, cache_control = ?8, content_disposition = ?9, content_encoding = ?10,
        content_language = ?11, content_type = ?12, custom_metadata = ?13, content_id = ?14, service = ?16,
        checksum = ?17 WHERE id = ?18 AND name = ?1 AND born = ?15
        """
    private static let replaceRowWithBorn = """
        UPDATE objects SET generation = ?2, metageneration = ?3, size = ?4, time_created = ?5, updated = ?6,
        md5_hash = ?7, cache_control = ?8, content_disposition = ?9, content_encoding = ?10,
        content_language = ?11, content_type = ?12, custom_metadata = ?13, content_id = ?14, born = ?15, service = ?16,
        checksum = ?17 WHERE id = ?18 AND name = ?1
        """

    /// Stores `source`'s content a piece at a time (`streamedPieceBytes`), with its CRC-32C; returns its row. The
    /// pieces are hashed as they are written: content that is not what the source's MD5 says (a file that changed
    /// since it was measured) is refused, and the change it belongs to rolls back.
    func storeContent(from source: any ContentSource) throws -> (contentID: Int64, crc: CRC32C) {
        guard source.size <= Self.largestObjectBytes else { throw Self.objectTooLarge(source.size) }
        let insert = try connection.statement("INSERT INTO contents (data) VALUES (zeroblob(?1))")
        insert.bind(1, source.size)
        try insert.step()
        insert.reset()
        let contentID = connection.lastInsertedRowID
        let blob = try SQLiteBlob(connection, table: "contents", column: "data", row: contentID, writable: true)
        defer { blob.close() }
        var offset: Int64 = 0
        var crc = CRC32C()
        var md5 = MD5Accumulator()
        try source.forEachPiece(of: Self.streamedPieceBytes) { piece in
            try blob.write(piece, at: Int(offset))
            crc.update(piece)
            md5.update(piece)
            offset += Int64(piece.count)
        }
        guard offset == source.size else {
            throw StorageError.internalError("The content ended after \(offset) of its \(source.size) bytes; nothing was written.")
        }
        blob.close()  // before the rows around it change
        guard md5.base64() == source.md5Base64 else {
            throw StorageError.invalidArgument("\(source.origin ?? "The content") changed while it was read; nothing was written.")
        }
        try keep(crc, ofContent: contentID)
        return (contentID, crc)
    }

    /// Creates or replaces the object `metadata.fullPath` with new content; `existing` is its live row, kept as
    /// `keepReplaced` keeps it when `noncurrentSince` (the change's time) is given.
    private func store(_ metadata: ObjectMetadata, content: Data, replacing existing: LiveRow?, noncurrentSince: Timestamp? = nil) throws {
        try store(metadata, contentID: try storeContent(content), replacing: existing, noncurrentSince: noncurrentSince)
    }

    /// Stores content, with its CRC-32C beside it; answers its id.
    func storeContent(_ content: Data) throws -> Int64 {
        guard Int64(content.count) <= Self.largestObjectBytes else { throw Self.objectTooLarge(Int64(content.count)) }
        let insertContent = try connection.statement("INSERT INTO contents (data) VALUES (?1)")
        insertContent.bind(1, content)
        try insertContent.step()
        insertContent.reset()
        let contentID = connection.lastInsertedRowID
        var crc = CRC32C()
        crc.update(content)
        try keep(crc, ofContent: contentID)
        return contentID
    }

    /// Keeps a content's CRC-32C beside it (format 3), for every metadata answer to give.
    private func keep(_ crc: CRC32C, ofContent contentID: Int64) throws {
        try BucketSchema.keepContentChecksum(crc.value, of: contentID, connection: connection)
    }

    /// Makes `metadata` the live version of its name, over content stored already as `contentID`; the version it
    /// replaces is kept as `keepReplaced` keeps it (noncurrent or soft-deleted) when `noncurrentSince` (the change's
    /// time) is given. (An import restores a state: it keeps none.)
    func store(_ metadata: ObjectMetadata, contentID: Int64, replacing existing: LiveRow?, noncurrentSince: Timestamp? = nil) throws {
        let version = StoredVersion(metadata, contentID: contentID, born: try epochs().current)
        guard let existing else {
            // A change that replaces nothing still lets soft-deleted versions whose time is up go (rule B6).
            if let noncurrentSince { try purgeExpiredSoftDeleted(now: noncurrentSince) }
            return try insertLive(version)
        }
        let snapshotted = try keepIfSnapshotted(existing.version)
        let kept = try keepReplaced(existing.version, at: noncurrentSince) || snapshotted
        try replaceLive(version, id: existing.id, bornChanges: version.born != existing.version.born)
        if !kept { try releaseContent(existing.version.contentID, of: existing.version.name) }
    }

    /// A version's content, checked against its MD5 so that damage is reported, never returned.
    func content(of version: StoredVersion) throws -> Data {
        let statement = try connection.statement("SELECT data FROM contents WHERE id = ?1")
        defer { statement.reset() }
        statement.bind(1, version.contentID)
        guard try statement.step() else {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (missing)")
        }
        let data = statement.data(0)
        guard ContentHash.md5Base64(data) == version.md5Hash else {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (its MD5 differs)")
        }
        return data
    }

    /// A live object row: its version and the metadata it describes.
    struct LiveRow {
        static let columns = "\(BucketSchema.metadataColumns), checksum, id"
        /// `columns`, then the content's CRC-32C (one more index seek per row: for the reads that answer with
        /// metadata, not for a bulk edit's scan). A file that keeps none gives NULL.
        static func columnsWithContentChecksum(stored: Bool) -> String {
            stored ? columnsAndStoredChecksum : columnsAndNoChecksum
        }
        private static let columnsAndStoredChecksum =
            "\(columns), (SELECT crc32c FROM content_checksums WHERE content_id = objects.content_id)"
        private static let columnsAndNoChecksum = "\(columns), NULL"

        var version: StoredVersion
        var metadata: ObjectMetadata
        /// The row's id in `objects`.
        var id: Int64

        init(_ statement: some SQLiteRow, bucket: String, withContentChecksum: Bool = false) throws {
            version = try StoredVersion(statement, from: 0, died: false)
            metadata = try version.metadata(bucket: bucket)
            id = statement.int64(StoredVersion.columnCount + 1)
            let checksumColumn = StoredVersion.columnCount + 2
            if withContentChecksum && !statement.isNull(checksumColumn) {
                metadata.crc32c = CRC32C.base64(of: UInt32(truncatingIfNeeded: statement.int64(checksumColumn)))
            }
        }
    }

    func fetchRow(_ name: String) throws -> LiveRow? {
        let statement = try connection.statement(
            "SELECT \(LiveRow.columnsWithContentChecksum(stored: storesContentChecksums)) FROM objects WHERE name = ?1")
        defer { statement.reset() }
        statement.bind(1, name)
        return try statement.step() ? try LiveRow(statement, bucket: self.name, withContentChecksum: true) : nil
    }
    /// How many names one read of `fetchRows` binds: a page of 1,000 items is 16 index seeks by one cached statement.
    static let namesPerRowRead = 64
    /// `?1,…,?64`: written once, not for every page listed.
    static let rowReadPlaceholders = (1...namesPerRowRead).map { "?\($0)" }.joined(separator: ",")

    /// The live rows of `names`, keyed by their bytes (rule P7), read `namesPerRowRead` at a time by one cached
    /// statement: not one read per item, and each name bound as it is (a name holding NUL included, which a JSON
    /// text would cut short).
    func fetchRows(_ names: [String]) throws -> [ObjectName: LiveRow] {
        let statement = try connection.statement(
            "SELECT \(LiveRow.columnsWithContentChecksum(stored: storesContentChecksums)), name FROM objects WHERE name IN (\(Self.rowReadPlaceholders))")
        var rows: [ObjectName: LiveRow] = [:]
        rows.reserveCapacity(names.count)
        var start = names.startIndex
        while start < names.endIndex {
            let chunk = names[start..<min(start + Self.namesPerRowRead, names.endIndex)]
            defer { statement.reset() }
            // The places a last, shorter chunk leaves unbound are NULL (reset clears them), which no name equals.
            for (index, name) in chunk.enumerated() { statement.bind(Int32(index + 1), name) }
            while try statement.step() {
                guard let name = statement.string(StoredVersion.columnCount + 3) else { continue }
                rows[ObjectName(stored: name)] = try LiveRow(statement, bucket: self.name, withContentChecksum: true)
            }
            start += chunk.count
        }
        return rows
    }

    /// The listing's view of the name index: one indexed seek per call.
    private struct NameIndex: ObjectNameIndex {
        let connection: SQLiteConnection

        func firstName(from bound: NameBound, withPrefix prefix: String) throws -> String? {
            let statement: SQLiteStatement
            switch bound {
            case .atOrAfter(let name):
                statement = try connection.statement("SELECT name FROM objects WHERE name >= ?1 ORDER BY name LIMIT 1")
                statement.bind(1, name)
            case .after(let name):
                statement = try connection.statement("SELECT name FROM objects WHERE name > ?1 ORDER BY name LIMIT 1")
                statement.bind(1, name)
            }
            defer { statement.reset() }
            // Names with the prefix are one contiguous run in byte order, and bounds never precede the
            // prefix, so the first name that lacks it ends the run.
            guard try statement.step(), let name = statement.string(0), name.utf8.starts(with: prefix.utf8) else {
                return nil
            }
            return name
        }
    }
}

/// customMetadata in its column: NULL when the map is empty (rule M5), else a BLOB of the entries in key
/// byte order, each key and value as a LEB128 byte length and its UTF-8. Bulk edits read and write this
/// column for every object, and this is several times faster than JSON.
enum CustomMetadataColumn {
    static func encode(_ custom: [String: String]) -> Data? {
        guard !custom.isEmpty else { return nil }
        var writer = PackedWriter(capacity: custom.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 })
        for (key, value) in custom.sortedByKeyBytes {
            writer.string(key)
            writer.string(value)
        }
        return Data(writer.bytes)
    }

    static func decode(_ data: Data?) throws -> [String: String] {
        guard let data, !data.isEmpty else { return [:] }
        return try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws -> [String: String] in
            var custom: [String: String] = [:]
            var reader = PackedReader(buffer)
            do {
                while !reader.isAtEnd {
                    let key = try reader.string()
                    custom[key] = try reader.string()
                }
            } catch {
                throw damaged
            }
            return custom
        }
    }

    static let damaged = StorageError.internalError("A stored customMetadata value is damaged.")
}
