import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite

/// One connection to a bucket file, and what is read and written over it: the live rows of objects, their contents,
/// the generation counter and the epochs of snapshots; with the connection's transaction state (a change alone or as a
/// savepoint, a read of one state, an explicit transaction and its commands). A transaction has a row store to itself
/// while it runs (the bucket's own, lent, or one on a new connection, which it closes); a bucket's own calls run on the
/// bucket's, or on a spare while it is lent.
///
/// Single-threaded, as an SQLite connection is: its owner serialises every call (`LocalBucket`'s lock).
final class RowStore {
    let connection: SQLiteConnection
    let file: BucketFile
    /// Whether an explicit transaction (`beginTransaction`) is open on the connection.
    private(set) var inExplicitTransaction = false
    /// Whether the explicit transaction changed anything (its commit then extends the lineage).
    private var transactionWrote = false
    /// The epoch and newest snapshot as this transaction sees them; read at most once per transaction.
    /// Forgotten whenever a transaction or savepoint ends, since a rollback may undo a snapshot.
    private var cachedEpochs: Epochs?
    /// The rows the latest scan of this explicit transaction read, by name: the update of an object a pattern
    /// found then uses its row as scanned instead of reading it again. Kept only inside an explicit transaction,
    /// which holds the write lock, so nothing else changes them; any change but the update of a row itself, and
    /// any rollback, forgets them. At most one scan page.
    var scannedRows: [ObjectName: LiveRow] = [:]

    private var isClosed = false

    init(file: BucketFile, connection: SQLiteConnection) {
        self.file = file
        self.connection = connection
    }

    /// Ends the connection, rolling back what is open on it. Closing again does nothing.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
        connection.close()
    }

    var options: LocalBucketOptions { file.options }

    // MARK: Transactions

    /// Opens an explicit transaction; IMMEDIATE (for writing) takes the write lock now, so a script's plan is made on
    /// the state it will change.
    func beginTransaction(forWriting: Bool) throws {
        precondition(!inExplicitTransaction, "transactions do not nest")
        try connection.execute(forWriting ? "BEGIN IMMEDIATE" : "BEGIN")
        inExplicitTransaction = true
        transactionWrote = false
        forgetReads()
    }

    func commitTransaction() throws {
        guard inExplicitTransaction else { return }
        try commit(wrote: transactionWrote)
        inExplicitTransaction = false
        forgetReads()
    }

    func rollbackTransaction() throws {
        guard inExplicitTransaction else { return }
        inExplicitTransaction = false
        forgetReads()
        if !connection.isAutocommit { try connection.execute("ROLLBACK") }
    }

    /// Ends whatever is open on the connection, if anything, rolled back: a row store lent to a transaction is given
    /// back with nothing open, however the transaction ended.
    func abandonTransaction() {
        inExplicitTransaction = false
        forgetReads()
        if !isClosed && !connection.isAutocommit { try? connection.execute("ROLLBACK") }
    }

    /// A command of the explicit transaction begins: what it changes can be undone alone (`undoCommand`).
    func beginCommand() throws {
        precondition(inExplicitTransaction, "commands are marked inside a transaction")
        try connection.execute("SAVEPOINT command")
    }

    func endCommand() throws {
        try connection.execute("RELEASE command")
    }

    func undoCommand() throws {
        forgetReads()
        try connection.execute("ROLLBACK TO command; RELEASE command")
    }

    /// Forgets the epochs read (a snapshot was taken or removed).
    func forgetEpochs() {
        cachedEpochs = nil
    }

    /// Forgets what was read of the transaction's state (the epochs, the last scan's rows): after a rollback, or where
    /// a change may have moved them.
    func forgetReads() {
        cachedEpochs = nil
        scannedRows = [:]
    }

    /// Commits the open transaction; one that changed anything extends the file's lineage first.
    private func commit(wrote: Bool) throws {
        let mark = wrote ? try file.lineage.advance(connection) : nil
        if options.crashBeforeCommit { kill(getpid(), SIGKILL) }
        try connection.execute("COMMIT")
        if options.crashAfterCommit { kill(getpid(), SIGKILL) }
        if let mark { file.lineage.committed(mark, on: connection) }
    }

    /// A change: alone, it is its own IMMEDIATE transaction; inside an explicit transaction it is a
    /// savepoint, so a failed change leaves nothing behind while earlier ones stay.
    ///
    /// `.checkedFirst` is for a body that reads and checks everything before it writes, and then writes in one
    /// statement or inside `atomically`: inside an explicit transaction it needs no savepoint of its own (a
    /// failed statement leaves nothing behind by itself), which a bulk edit of a million objects would pay
    /// for each of them. Either way the scanned rows are forgotten, but for the one a `.checkedFirst` body
    /// updates (it forgets that one itself).
    func change<T>(_ writes: ChangeWrites = .anyOrder, _ body: () throws -> T) throws -> T {
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

    /// A read of several statements that must see one state of the bucket.
    func read<T>(_ body: () throws -> T) throws -> T {
        if inExplicitTransaction { return try body() }
        // The epochs read in this state are this state's: another process may take a snapshot before the next.
        cachedEpochs = nil
        try connection.execute("BEGIN")
        defer {
            cachedEpochs = nil
            try? connection.execute("COMMIT")
        }
        return try body()
    }

    // MARK: Generations

    /// A unique generation, increasing across processes: `now` in microseconds unless an earlier change
    /// already used that or later (the real clock can step back; `--clock` restarts at each run).
    func nextGeneration(now: Timestamp) throws -> Int64 {
        let generation = max(now.microseconds, try lastGeneration() + 1)
        try storeLastGeneration(generation)
        return generation
    }

    /// The last generation given, as the file keeps it.
    func lastGeneration() throws -> Int64 {
        Int64(try BucketSchema.readInfo("last_generation", connection: connection) ?? "0") ?? 0
    }

    func storeLastGeneration(_ generation: Int64) throws {
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

    /// Deletes the live row of a version's name (what keeps the version, and its content, is the caller's).
    func deleteLive(_ version: StoredVersion) throws {
        let delete = try connection.statement("DELETE FROM objects WHERE name = ?1")
        defer { delete.reset() }
        delete.bind(1, version.name)
        try delete.step()
    }

    /// Deletes content that no version refers to any longer. Only versions of one name share content.
    func releaseContent(_ contentID: Int64, of name: String) throws {
        let release = try connection.statement(
            """
            DELETE FROM contents WHERE id = ?1
            AND NOT EXISTS (SELECT 1 FROM objects WHERE name = ?2 AND content_id = ?1)
            AND NOT EXISTS (SELECT 1 FROM history WHERE name = ?2 AND content_id = ?1)
            \(file.storesNoncurrent ? Self.releasedUnlessKept : "")
            """)
        defer { release.reset() }
        release.bind(1, contentID)
        release.bind(2, name)
        try release.step()
        guard connection.changedRows > 0, file.storesContentChecksums else { return }
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
    func replaceLive(_ version: StoredVersion, id: Int64, bornChanges: Bool) throws {
        let update = try connection.statement(
            bornChanges ? Self.replaceRowWithBorn : Self.replaceRowKeepingBorn)
        defer { update.reset() }
        version.bindLive(update)
        update.bind(18, id)
        try update.step()
        guard connection.changedRows == 1 else {
            throw StorageError.internalError(
                "The row of \(version.name.debugDescription) changed while it was being updated; nothing was changed.")
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
        guard source.size <= LocalBucket.largestObjectBytes else { throw LocalBucket.objectTooLarge(source.size) }
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
        try source.forEachPiece(of: LocalBucket.streamedPieceBytes) { piece in
            try blob.write(piece, at: Int(offset))
            crc.update(piece)
            md5.update(piece)
            offset += Int64(piece.count)
        }
        guard offset == source.size else {
            throw StorageError.internalError(
                "The content ended after \(offset) of its \(source.size) bytes; nothing was written.")
        }
        blob.close()  // before the rows around it change
        guard md5.base64() == source.md5Base64 else {
            throw StorageError.invalidArgument(
                "\(source.origin ?? "The content") changed while it was read; nothing was written.")
        }
        try keep(crc, ofContent: contentID)
        return (contentID, crc)
    }

    /// Stores content, with its CRC-32C beside it; answers its id.
    func storeContent(_ content: Data) throws -> Int64 {
        guard Int64(content.count) <= LocalBucket.largestObjectBytes else {
            throw LocalBucket.objectTooLarge(Int64(content.count))
        }
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

    /// `range` of a version's content (all of it when nil, then checked against its MD5 once read), a piece of at most
    /// `streamedPieceBytes` at a time.
    func streamContent(of version: StoredVersion, range: Range<Int64>? = nil, _ piece: (Data) throws -> Void) throws {
        let blob: SQLiteBlob
        do {
            blob = try SQLiteBlob(
                connection, table: "contents", column: "data", row: version.contentID, writable: false)
        } catch {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (missing)")
        }
        defer { blob.close() }
        if let range {
            guard range.lowerBound >= 0, range.upperBound <= Int64(blob.size) else {
                throw StorageError.internalError(
                    "Bytes \(range) of \(version.name.debugDescription) are not within its \(blob.size) bytes.")
            }
            // A range is not the whole content its MD5 is of: `storesh check` verifies that.
            return try blob.forEachPiece(
                of: LocalBucket.streamedPieceBytes, in: Int(range.lowerBound)..<Int(range.upperBound), piece)
        }
        var md5 = MD5Accumulator()
        try blob.forEachPiece(of: LocalBucket.streamedPieceBytes) { bytes in
            md5.update(bytes)
            try piece(bytes)
        }
        guard md5.base64() == version.md5Hash else {
            throw ChecksumMismatch(what: "content of object \(version.name.debugDescription) (its MD5 differs)")
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

    /// The live rows (`columns` of them: `LiveRow.columns`, or the name alone) of a page of `scan`, bound: up to
    /// `limit + 1` from where the page starts, in byte order, the caller stopping at the first without `prefix`
    /// (and, at `limit`, knowing more follow).
    func pageRows(
        prefix: String, after: String?, limit: Int, columns: String = LiveRow.columns
    ) throws -> SQLiteStatement {
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
            "SELECT \(LiveRow.columnsWithContentChecksum(stored: file.storesContentChecksums)) FROM objects WHERE name = ?1"
        )
        defer { statement.reset() }
        statement.bind(1, name)
        return try statement.step() ? try LiveRow(statement, bucket: file.name, withContentChecksum: true) : nil
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
            "SELECT \(LiveRow.columnsWithContentChecksum(stored: file.storesContentChecksums)), name FROM objects WHERE name IN (\(Self.rowReadPlaceholders))"
        )
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
                rows[ObjectName(stored: name)] = try LiveRow(statement, bucket: file.name, withContentChecksum: true)
            }
            start += chunk.count
        }
        return rows
    }

    /// The listing's view of the name index: one indexed seek per call.
    struct NameIndex: ObjectNameIndex {
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
