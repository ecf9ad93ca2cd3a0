import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite
import StoreshWire

/// A bucket kept in one SQLite file (content included).
///
/// Every change is one SQLite transaction in WAL mode with `synchronous=FULL`: once a method returns, the
/// change survives a crash or power loss, and a crash at any instant leaves the old or the new state.
/// Other processes may use the same file; a writer waits up to `busyTimeoutMilliseconds` for another
/// writer and then fails with a clear message. A damaged file is reported, never rewritten.
///
/// The bucket is the storage semantics (the `Bucket` interface and its capabilities) over three parts: the file
/// (`BucketFile`: opening, creating, its lineage), a row store over one connection (`RowStore`: rows, contents,
/// epochs, and the connection's transaction state), and the transactions (`withTransaction`), each of which has a row
/// store to itself while it runs, through an engine of its own.
public final class LocalBucket: TransactionalBucket, ImmediateReads, RulesStore, BucketSettingsStore,
    @unchecked Sendable
{
    let file: BucketFile
    public var name: String { file.name }
    /// The bucket file.
    public var path: String { file.path }
    var options: LocalBucketOptions { file.options }
    /// Where "now" comes from for each change.
    public var clock: any StorageClock { options.clock }
    var storesContentChecksums: Bool { file.storesContentChecksums }
    var storesNoncurrent: Bool { file.storesNoncurrent }

    /// Where this object's work runs.
    private enum Work {
        /// A bucket's own: its first connection's row store, lent to one transaction at a time; while it is lent,
        /// the bucket's own calls run on a spare, so that nothing outside a transaction ever runs inside it.
        case bucket(own: RowStore)
        /// A transaction's engine: the row store the transaction has to itself while it runs (the bucket's own, lent,
        /// or one on a new connection, which the transaction closes when it ends).
        case transaction(RowStore)
    }

    private let work: Work
    // Guards the row stores and `lent`: an SQLite connection is single-threaded.
    private let lock = NSLock()
    private var lent = false
    private var spare: RowStore?
    private var isClosed = false

    /// The row store this object's work runs on (read under the lock).
    var rows: RowStore {
        switch work {
        case .transaction(let rows): rows
        case .bucket(let own): lent ? spare ?? own : own
        }
    }
    /// The connection of `rows`, for the statements of the bucket's own features (versions, snapshots, the check).
    var connection: SQLiteConnection { rows.connection }

    private init(file: BucketFile, work: Work) {
        self.file = file
        self.work = work
    }

    deinit { close() }

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
        let (file, connection) = try BucketFile.open(at: path, options: options)
        return LocalBucket(file: file, work: .bucket(own: RowStore(file: file, connection: connection)))
    }
    /// A bucket name from a file name: `teaching.bucket` → `teaching`, lower-cased, other characters as `-`.
    public static func defaultName(forFile path: String) -> String {
        let file = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.lowercased()
        let cleaned = String(
            file.unicodeScalars.map { scalar -> Character in
                let allowed =
                    ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "-"
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
    public static func create(
        newAt path: String, name: String, options: LocalBucketOptions
    ) throws(StorageError) -> LocalBucket? {
        guard access(path, F_OK) != 0, try create(at: path, name: name, objects: [], options: options) else {
            return nil
        }
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

    /// Makes a bucket file at `path` holding `objects` (`BucketFile.create`: built beside it, linked into place);
    /// answers whether it was linked (false: a file of that name was there first, and is kept).
    @discardableResult
    private static func create(
        at path: String, name: String, objects: [ArchivedObject], options: LocalBucketOptions
    )
        throws(StorageError) -> Bool
    {
        try BucketFile.create(
            at: path, name: name, options: options,
            seed: objects.isEmpty
                ? nil
                : { temporary throws(StorageError) in
                    var seedOptions = options
                    seedOptions.createIfMissing = false
                    seedOptions.crashBeforeCommit = false
                    seedOptions.crashAfterCommit = false
                    let seeded = try open(at: temporary, options: seedOptions)
                    defer { seeded.close() }
                    try seeded.importObjects(objects, replacingEverything: false)
                })
    }

    /// Closes the bucket file; the object is unusable afterwards. The last connection to close folds the log
    /// into the file and removes it (SQLite does it then, without waiting for anyone), so a bucket that no
    /// process has open is one file. Closing again does nothing.
    public func close() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            // A transaction's engine: the transaction closes its row store.
            guard case .bucket(let own) = work else { return }
            // Lent, the own row store is a transaction's until it ends, which closes it then.
            if !lent { own.close() }
            spare?.close()
            spare = nil
        }
    }

    // MARK: Transactions

    public func withTransaction<Value>(
        forWriting: Bool, _ body: (any BucketTransaction) async throws -> TransactionOutcome<Value>
    ) async throws -> Value {
        // The transaction runs on the bucket's own row store when it is free (the usual case: one command or
        // script at a time), else on a new connection of its own.
        let (rows, borrowed) = try lendRows()
        let engine = LocalBucket(file: file, work: .transaction(rows))
        defer {
            engine.close()
            if borrowed { giveBack(rows) } else { rows.close() }
        }
        try engine.locked { try rows.beginTransaction(forWriting: forWriting) }
        let transaction = LocalTransaction(engine: engine)
        do {
            switch try await body(transaction) {
            case .commit(let value):
                try engine.locked { try rows.commitTransaction() }
                return value
            case .rollback(let value):
                try engine.locked { try rows.rollbackTransaction() }
                return value
            }
        } catch {
            try? engine.locked { try rows.rollbackTransaction() }
            throw error
        }
    }

    /// The bucket's own row store back from a transaction: whatever the transaction left open (its engine closed
    /// before it could end) ends here, not in the bucket's next call; a bucket closed meanwhile closes it now.
    private func giveBack(_ rows: RowStore) {
        lock.withLock {
            rows.abandonTransaction()
            lent = false
            if isClosed { rows.close() }
        }
    }

    /// The bucket's own row store for a transaction, or one on a new connection when a transaction has it already.
    private func lendRows() throws(StorageError) -> (RowStore, borrowed: Bool) {
        lock.lock()
        defer { lock.unlock() }
        if isClosed { throw .internalError("The bucket \(path) was closed.") }
        guard case .bucket(let own) = work else {
            throw .internalError("A transaction of \(path) cannot begin inside another: transactions do not nest.")
        }
        if !lent {
            lent = true
            return (own, true)
        }
        return (RowStore(file: file, connection: try file.connect()), false)
    }

    /// Whether this is a transaction's engine, its transaction open (a bucket's own calls are never inside one).
    var isInTransaction: Bool {
        get async {
            lock.withLock {
                guard case .transaction(let rows) = work else { return false }
                return rows.inExplicitTransaction
            }
        }
    }

    /// A command of the transaction this engine runs (`LocalTransaction.withSavepoint`).
    func beginCommand() throws(StorageError) { try locked { try rows.beginCommand() } }
    func endCommand() throws(StorageError) { try locked { try rows.endCommand() } }
    func undoCommand() throws(StorageError) { try locked { try rows.undoCommand() } }

    /// Runs `body` on the row store, turning SQLite failures into storage errors.
    private func locked<T>(_ body: () throws -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        if isClosed { throw .internalError("The bucket \(path) was closed.") }
        if lent && spare == nil { spare = RowStore(file: file, connection: try file.connect()) }
        do {
            return try body()
        } catch {
            throw file.failure(error)
        }
    }

    /// A change (`RowStore.change`): its own transaction, or a savepoint of the explicit one.
    func change<T>(_ writes: RowStore.ChangeWrites = .anyOrder, _ body: () throws -> T) throws(StorageError) -> T {
        try locked { try rows.change(writes, body) }
    }

    /// A read of several statements that must see one state of the bucket.
    func read<T>(_ body: () throws -> T) throws(StorageError) -> T {
        try locked { try rows.read(body) }
    }

    /// A number that moves whenever another connection (this process's or another's: a shell, a script, a server)
    /// commits a change to the bucket file: SQLite's `data_version`. Cheap to ask; `storesh serve`'s live page
    /// asks it a few times a second while it is open.
    public func changeCounter() throws(StorageError) -> Int64 {
        try locked { try connection.integer("PRAGMA data_version") ?? 0 }
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
                of: reference, bucket: name, options: options, index: RowStore.NameIndex(connection: connection),
                tokens: LocalPageTokens())
            return try withItemMetadata(page, options)
        }
    }

    /// The page with its items' metadata when the listing asked for it, read with the page, in its transaction:
    /// a list answers with the objects as they are (R2: `list`).
    private func withItemMetadata(_ page: ListPage, _ options: ListOptions) throws -> ListPage {
        guard options.includeMetadata, !page.items.isEmpty else { return page }
        var page = page
        let found = try rows.fetchRows(page.items)
        page.itemMetadata = try page.items.map { item in
            // The listing read the name in this same transaction: a row missing now is the engine's fault.
            guard let row = found[ObjectName(stored: item)] else {
                throw StorageError.internalError(
                    "The object \(MessageText.oneLine(item)) was listed but its metadata cannot be read.")
            }
            return row.metadata
        }
        return page
    }

    /// A page of the names under `prefix` (any string) as the Cloud Storage JSON API lists them (rules V2, G6):
    /// every name as it is, collapsed at the next `/` when `delimited`.
    public func listStoredNames(prefix: String, delimited: Bool, options: ListOptions) throws(StorageError) -> ListPage
    {
        try read {
            let page = try Lister.page(
                prefix: prefix, delimited: delimited, view: .asStored, bucket: name, options: options,
                index: RowStore.NameIndex(connection: connection), tokens: LocalPageTokens())
            return try withItemMetadata(page, options)
        }
    }

    public func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        try currentMetadata(of: object)
    }

    /// The synchronous form of `metadata(of:)`.
    public func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata {
        try read {
            guard let row = try rows.fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
            return row.metadata
        }
    }

    public func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        try changeMetadata(of: object, precondition: precondition) { current, now throws(StorageError) in
            try current.applying(update, now: now)
        }
    }

    /// Stores `after`'s writable metadata as it is (decided by the rules layer, or planned), if the object is still
    /// `before`: nothing is merged again.
    public func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
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
            let scanned = rows.scannedRows.removeValue(forKey: object)
            guard let row = try scanned ?? rows.fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
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
                try rows.atomically {
                    next.generation = try rows.nextGeneration(now: now)
                    try store(next, contentID: row.version.contentID, replacing: row, noncurrentSince: now)
                }
            } else if changed {
                try rows.storeMetadata(next, over: row)
            }
            return UpdateResult(metadata: next, previous: row.metadata, changed: changed)
        }
    }

    public func write(
        _ content: Data, to object: ObjectName, options writeOptions: WriteOptions, precondition: Precondition
    )
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
            let existing = try rows.fetchRow(object.rawValue)
            let now = options.clock.nextChangeTime()
            var metadata = ObjectMetadata.newObject(
                bucket: name, name: object, content: content, generation: try rows.nextGeneration(now: now), now: now,
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
            "The object would be \(MessageText.byteCount(size)) (\(MessageText.grouped(size)) bytes), more than a bucket file holds (\(MessageText.grouped(largestObjectBytes)) bytes, SQLite's largest value); nothing was written."
        )
    }

    /// Writes content from `source` a piece at a time (`streamedPieceBytes`), so that an object of any size
    /// passes through bounded memory; its MD5 is the source's.
    public func write(
        from source: any ContentSource, to object: ObjectName, options writeOptions: WriteOptions,
        precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try object.checkNewObjectName()
        if source.size <= Int64(Self.streamedPieceBytes) {
            return try await write(try source.readAll(), to: object, options: writeOptions, precondition: precondition)
        }
        try CustomMetadataLimits.validate(writeOptions.customMetadata)
        let md5 = source.md5Base64
        if let expected = writeOptions.expectedMD5, expected != md5 {
            throw StorageError(
                .nonMatchingChecksum, "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        return try change {
            let existing = try rows.fetchRow(object.rawValue)
            let now = options.clock.nextChangeTime()
            var metadata = ObjectMetadata.newObject(
                bucket: name, name: object, size: source.size, md5Hash: md5,
                generation: try rows.nextGeneration(now: now), now: now,
                properties: writeOptions.properties, customMetadata: writeOptions.customMetadata,
                guessingContentType: writeOptions.guessesContentType)
            guard precondition.isSatisfied(by: existing?.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing?.metadata)
            }
            try refuseIfProtected(existing?.metadata, .overwritten)
            metadata.cloudStorage = try newObjectFields(writeOptions.cloudStorage, now: now)
            try refuseRestrictedEncryption(of: metadata.cloudStorage, name: object.rawValue)
            let (contentID, crc) = try rows.storeContent(from: source)
            metadata.crc32c = crc.base64
            try store(metadata, contentID: contentID, replacing: existing, noncurrentSince: now)
            return metadata
        }
    }

    /// An object's metadata, with its content handed to `piece` a piece at a time (at most `streamedPieceBytes`
    /// in memory), from one state of the bucket. The content's MD5 is checked as it passes: damage is thrown
    /// after the last piece, so a caller that keeps the pieces aside must drop them then.
    public func currentObject(
        _ object: ObjectName, contentPieces piece: (Data) throws -> Void
    ) throws(StorageError) -> ObjectMetadata {
        try currentObject(object, bytes: { _ in nil }, contentPieces: piece).metadata
    }

    /// An object's metadata, with the bytes of its content that `bytes` picks (given the size; nil: all of them)
    /// handed to `piece` a piece at a time, from one state of the bucket: a ranged read (HTTP `Range`) reads its range
    /// and no more. A range is not checked against the MD5, which is the whole content's (`storesh check` is).
    public func currentObject(
        _ object: ObjectName, bytes: (Int64) throws -> Range<Int64>?, contentPieces piece: (Data) throws -> Void
    ) throws(StorageError) -> (metadata: ObjectMetadata, range: Range<Int64>?) {
        try read {
            guard let row = try rows.fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
            let range = try bytes(row.version.size)
            try rows.streamContent(of: row.version, range: range, piece)
            return (row.metadata, range)
        }
    }

    /// An object's metadata and content, read from one state of the bucket.
    public func currentObjectWithContent(_ object: ObjectName) throws(StorageError) -> (ObjectMetadata, Data) {
        try read {
            guard let row = try rows.fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
            return (row.metadata, try rows.content(of: row.version))
        }
    }

    public func read(_ object: ObjectName) async throws -> Data {
        try read {
            guard let row = try rows.fetchRow(object.rawValue) else {
                throw StorageError.objectNotFound(object.rawValue)
            }
            return try rows.content(of: row.version)
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
            let row = try rows.fetchRow(object.rawValue)
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
            let statement = try rows.pageRows(prefix: prefix, after: after, limit: limit)
            defer { statement.reset() }
            var objects: [ObjectMetadata] = []
            var more = false
            rows.scannedRows.removeAll(keepingCapacity: true)
            while try statement.step() {
                let row = try RowStore.LiveRow(statement, bucket: name)
                guard row.metadata.fullPath.utf8.starts(with: prefix.utf8) else { break }
                if objects.count == limit {
                    more = true
                    break
                }
                objects.append(row.metadata)
                if rows.inExplicitTransaction { rows.scannedRows[ObjectName(stored: row.version.name)] = row }
            }
            return ObjectScanPage(objects: objects, resumeAfter: more ? objects.last?.fullPath : nil)
        }
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
        try read {
            try connection.integer("SELECT max(max(updated), max(time_created)) FROM objects").map {
                Timestamp(microseconds: $0)
            }
        }
    }

    public func objectCount() throws(StorageError) -> Int {
        try read { Int(try connection.integer("SELECT count(*) FROM objects") ?? 0) }
    }

    /// Writes many objects in one transaction: all of them, or (on any error) none.
    /// With `replacingEverything`, the bucket holds exactly `objects` afterwards.
    public func importObjects(
        _ objects: [ArchivedObject], replacingEverything: Bool, settings: SettingsImport? = nil,
        counting: (any WorkCounter)? = nil
    ) throws(StorageError) {
        try importObjects(
            count: objects.count, replacingEverything: replacingEverything, settings: settings, counting: counting
        ) {
            index throws(StorageError) in (objects[index], nil)
        }
    }

    /// The settings an import gives the bucket, made from what it has (or a new bucket's) when the import lands;
    /// nil leaves them as they are.
    public typealias SettingsImport = (_ current: BucketSettings, _ now: Timestamp) throws(StorageError) ->
        BucketSettings?

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
            var lastGeneration = try rows.lastGeneration()
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
                        metadata = object.metadata(
                            bucket: name, generation: generation, now: now, size: source.size, md5Hash: source.md5Base64
                        )
                        contentID = try rows.storeContent(from: source).contentID
                    } else {
                        metadata = object.metadata(bucket: name, generation: generation, now: now)
                        contentID = try rows.storeContent(object.content)
                    }
                    try storeKeptGeneration(metadata, contentID: contentID)
                    counting?.advance()
                    continue
                }
                let existing = try rows.fetchRow(object.name.rawValue)
                if let source {
                    var metadata = object.metadata(
                        bucket: name, generation: generation, now: now, size: source.size, md5Hash: source.md5Base64)
                    let (contentID, crc) = try rows.storeContent(from: source)
                    metadata.crc32c = crc.base64
                    try store(metadata, contentID: contentID, replacing: existing)
                } else {
                    try store(
                        object.metadata(bucket: name, generation: generation, now: now), content: object.content,
                        replacing: existing)
                }
                counting?.advance()
            }
            try rows.storeLastGeneration(lastGeneration)
        }
    }

    /// Every object, in name order, with a way to read its content a piece at a time (`pieces`, which checks the
    /// MD5 at the end): an export of objects as large as a bucket file holds, in bounded memory.
    public func forEachObject(
        _ body: (ObjectMetadata, _ pieces: ((Data) throws -> Void) throws -> Void) throws -> Void
    ) throws(StorageError) {
        try read {
            let statement = try connection.statement("SELECT \(RowStore.LiveRow.columns) FROM objects ORDER BY name")
            defer { statement.reset() }
            while try statement.step() {
                let row = try RowStore.LiveRow(statement, bucket: name)
                try body(row.metadata) { piece in try rows.streamContent(of: row.version, piece) }
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
        let page = try connection.statement(
            "SELECT \(RowStore.LiveRow.columns) FROM objects WHERE id > ?1 ORDER BY id LIMIT 1000")
        defer { page.reset() }
        var after = Int64.min
        var removed = 0
        while true {
            page.bind(1, after)
            var found: [RowStore.LiveRow] = []
            while try page.step() { found.append(try RowStore.LiveRow(page, bucket: name)) }
            page.reset()
            guard let last = found.last else { break }
            after = last.id
            for row in found { try removeLive(row.version) }
            removed += found.count
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
            try begin(
                try settingsInTransaction(),
                Int(try connection.integer("SELECT count(*) FROM objects") ?? 0) + kept.noncurrent + kept.softDeleted)
            let live = try connection.statement("SELECT \(RowStore.LiveRow.columns) FROM objects ORDER BY name")
            defer { live.reset() }
            while try live.step() {
                let row = try RowStore.LiveRow(live, bucket: name)
                try body(row.metadata, try rows.content(of: row.version))
            }
            guard storesNoncurrent else { return }
            for (table, columns, softDeleted) in [
                ("noncurrent", NoncurrentRow.columns, false), ("soft_deleted", NoncurrentRow.softDeletedColumns, true),
            ] {
                let statement = try connection.statement("SELECT \(columns) FROM \(table) ORDER BY name, generation")
                defer { statement.reset() }
                while try statement.step() {
                    let row = try NoncurrentRow(statement, bucket: name, softDeleted: softDeleted)
                    try body(row.metadata, try rows.content(of: row.version))
                }
            }
        }
    }

    // MARK: Versions

    /// Creates or replaces the object `metadata.fullPath` with new content; `existing` is its live row, kept as
    /// `keepReplaced` keeps it when `noncurrentSince` (the change's time) is given.
    private func store(
        _ metadata: ObjectMetadata, content: Data, replacing existing: RowStore.LiveRow?,
        noncurrentSince: Timestamp? = nil
    ) throws {
        try store(
            metadata, contentID: try rows.storeContent(content), replacing: existing, noncurrentSince: noncurrentSince)
    }

    /// Makes `metadata` the live version of its name, over content stored already as `contentID`; the version it
    /// replaces is kept as `keepReplaced` keeps it (noncurrent or soft-deleted) when `noncurrentSince` (the change's
    /// time) is given. (An import restores a state: it keeps none.)
    func store(
        _ metadata: ObjectMetadata, contentID: Int64, replacing existing: RowStore.LiveRow?,
        noncurrentSince: Timestamp? = nil
    ) throws {
        let version = StoredVersion(metadata, contentID: contentID, born: try rows.epochs().current)
        guard let existing else {
            // A change that replaces nothing still lets soft-deleted versions whose time is up go (rule B6).
            if let noncurrentSince { try purgeExpiredSoftDeleted(now: noncurrentSince) }
            return try rows.insertLive(version)
        }
        let snapshotted = try rows.keepIfSnapshotted(existing.version)
        let kept = try keepReplaced(existing.version, at: noncurrentSince) || snapshotted
        try rows.replaceLive(version, id: existing.id, bornChanges: version.born != existing.version.born)
        if !kept { try rows.releaseContent(existing.version.contentID, of: existing.version.name) }
    }

    /// Deletes a live version, keeping it first if a snapshot sees it and, when `noncurrentSince` (the change's time) is
    /// given, as a noncurrent generation (versioning on, and `asNoncurrent`) or a soft-deleted one (a soft delete
    /// policy: `keepReplaced`); its content goes if nothing else keeps it.
    func removeLive(_ version: StoredVersion, noncurrentSince: Timestamp? = nil, asNoncurrent: Bool = true) throws {
        let snapshotted = try rows.keepIfSnapshotted(version)
        let kept = try keepReplaced(version, at: noncurrentSince, asNoncurrent: asNoncurrent) || snapshotted
        try rows.deleteLive(version)
        if !kept { try rows.releaseContent(version.contentID, of: version.name) }
    }
}

/// customMetadata in its column: NULL when the map is empty (rule M5), else a BLOB of the entries in key
/// byte order, each key and value as a LEB128 byte length and its UTF-8. Bulk edits read and write this
/// column for every object, and this is several times faster than JSON.
enum CustomMetadataColumn {
    static func encode(_ custom: CustomMetadata) -> Data? {
        guard !custom.isEmpty else { return nil }
        var writer = PackedWriter(capacity: custom.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 })
        for (key, value) in custom {
            writer.string(key)
            writer.string(value)
        }
        return Data(writer.bytes)
    }

    static func decode(_ data: Data?) throws -> CustomMetadata {
        guard let data, !data.isEmpty else { return [:] }
        return try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws -> CustomMetadata in
            var custom: CustomMetadata = [:]
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
