import Foundation
import StoreshCore
import StoreshSQLite

/// The layout of a bucket file, in one place: its tables, its version, and the upgrade from older layouts.
///
/// Version 2 keeps object versions for snapshots. Every change happens in an *epoch*; taking a snapshot
/// ends the current epoch. A live object row remembers the epoch it was written in (`born`). When a
/// change would overwrite or delete a row that some snapshot still sees (born at or before the newest
/// snapshot's epoch), the row is first copied into `history` with the epoch it ended in (`died`). A
/// snapshot of epoch E sees the live rows born at or before E and the history rows with born ≤ E < died.
/// So a snapshot costs one row, whatever the bucket's size, and a diff or restore reads only the rows
/// changed in between (through the `born` and `died` indexes).
///
/// Content is stored once per write and shared by the versions that keep it (a metadata update does not
/// copy it). Every row carries a checksum of its values, and content is checked against its MD5, because
/// SQLite verifies the structure of its file but not the values in it.
///
/// Version 3 keeps each content's CRC-32C (`content_checksums`), which Cloud Storage reports in every object
/// resource: computed once when the content is written, not on every answer. A table of its own, not a column of
/// `contents`: adding a value to a content row later would rewrite the row, blob and all (in memory, whole).
///
/// Version 4 writes row checksums eight bytes a step (`RowChecksum`) and still accepts the byte-at-a-time ones of
/// versions 2 and 3 (`ByteRowChecksum`) on the rows written before: the upgrade only marks the file, so that an
/// older storesh, which would take the new checksums for damage, refuses it.
///
/// Version 5 keeps an object's noncurrent generations while the bucket's versioning is on (`noncurrent`): a live
/// version overwritten or deleted is moved there, in `history`'s shape, its `died` the time (in microseconds) it stopped
/// being live, which Cloud Storage gives as `timeDeleted`. Content is shared with them as with kept versions. The
/// upgrade adds the empty table; an older storesh, which would release content a noncurrent generation still holds,
/// refuses the file. Soft-deleted versions (`soft_deleted`, rule B6) are kept the same way while the bucket's soft
/// delete policy keeps them, their `died` the time they are deleted for good (`hardDeleteTime`).
enum BucketSchema {
    static let applicationID: Int64 = 0x5354_5348  // "STSH"
    static let version: Int64 = 5

    /// The metadata columns shared by live and kept versions, in the order `StoredVersion` reads them.
    static let metadataColumns =
        "name, generation, metageneration, size, time_created, updated, md5_hash, cache_control, content_disposition, content_encoding, content_language, content_type, custom_metadata, content_id, born, service"

    /// The columns a live and a kept version share, after the name.
    private static let versionColumns = """
        generation INTEGER NOT NULL, metageneration INTEGER NOT NULL, size INTEGER NOT NULL,
            time_created INTEGER NOT NULL, updated INTEGER NOT NULL, md5_hash TEXT NOT NULL, cache_control TEXT,
            content_disposition TEXT, content_encoding TEXT, content_language TEXT, content_type TEXT,
            custom_metadata BLOB, content_id INTEGER NOT NULL, born INTEGER NOT NULL, service BLOB,
        """

    /// Each content's CRC-32C (format 3), by the content's id.
    static let contentChecksumsTable =
        "CREATE TABLE content_checksums (content_id INTEGER PRIMARY KEY, crc32c INTEGER NOT NULL);"

    /// The noncurrent generations of objects (format 5), one row per name and generation; and the soft-deleted ones
    /// (rule B6), whose `died` is when they are deleted for good.
    static let noncurrentTable = """
        CREATE TABLE IF NOT EXISTS noncurrent (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            \(versionColumns)
            died INTEGER NOT NULL,
            checksum INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS noncurrent_version ON noncurrent (name, generation);
        CREATE TABLE IF NOT EXISTS soft_deleted (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            \(versionColumns)
            died INTEGER NOT NULL,
            checksum INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS soft_deleted_version ON soft_deleted (name, generation);
        CREATE INDEX IF NOT EXISTS soft_deleted_expiry ON soft_deleted (died);
        """

    static let tables = """
        CREATE TABLE bucket_info (key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum INTEGER NOT NULL);
        CREATE TABLE contents (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
        \(contentChecksumsTable)
        CREATE TABLE objects (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            \(versionColumns)
            checksum INTEGER NOT NULL
        );
        CREATE INDEX objects_born ON objects (born);
        CREATE TABLE history (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            \(versionColumns)
            died INTEGER NOT NULL,
            checksum INTEGER NOT NULL
        );
        CREATE INDEX history_name ON history (name, born);
        CREATE INDEX history_born ON history (born);
        CREATE INDEX history_died ON history (died);
        CREATE TABLE snapshots (
            name TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL UNIQUE,
            created INTEGER NOT NULL,
            object_count INTEGER NOT NULL,
            checksum INTEGER NOT NULL
        );
        \(noncurrentTable)
        """

    /// Makes an empty bucket of the current version in a new database (inside the caller's transaction).
    static func create(_ connection: SQLiteConnection, name: String) throws(SQLiteError) {
        try connection.execute(tables)
        for (key, value) in [("name", name), ("last_generation", "0"), ("epoch", "1")] {
            try writeInfo(key, value, connection: connection)
        }
        try writeInfo(BucketFileLog.lineageKey, BucketFileLog.newMark(), connection: connection)
        try connection.execute("PRAGMA user_version = \(version)")
    }

    /// Upgrades a version-1 bucket (session 1's layout: no versions, no checksums) in one transaction:
    /// all of it, or, if anything fails, none.
    static func upgradeFromVersion1(_ connection: SQLiteConnection) throws(SQLiteError) {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            // Another process may have upgraded it while this one waited for the lock.
            guard try connection.integer("PRAGMA user_version") == 1 else {
                try connection.execute("ROLLBACK")
                return
            }
            try connection.execute(
                """
                ALTER TABLE contents RENAME TO contents_v1;
                ALTER TABLE objects RENAME TO objects_v1;
                ALTER TABLE bucket_info RENAME TO bucket_info_v1;
                """)
            try connection.execute(tables)
            // A version-1 object's content row had the object's id: it becomes the content id.
            try connection.execute("INSERT INTO contents (id, data) SELECT object_id, data FROM contents_v1")
            let oldObjects = try connection.statement(
                "SELECT id, name, generation, metageneration, size, time_created, updated, md5_hash, cache_control, content_disposition, content_encoding, content_language, content_type, custom_metadata FROM objects_v1"
            )
            defer { oldObjects.reset() }
            let insert = try connection.statement(StoredVersion.insertLive)
            defer { insert.reset() }
            while try oldObjects.step() {
                let version = StoredVersion(
                    name: oldObjects.string(1) ?? "", generation: oldObjects.int64(2),
                    metageneration: oldObjects.int64(3),
                    size: oldObjects.int64(4), timeCreated: oldObjects.int64(5), updated: oldObjects.int64(6),
                    md5Hash: oldObjects.string(7) ?? "",
                    properties: [
                        oldObjects.string(8), oldObjects.string(9), oldObjects.string(10), oldObjects.string(11),
                        oldObjects.string(12),
                    ],
                    customColumn: oldObjects.isNull(13) ? nil : oldObjects.data(13), contentID: oldObjects.int64(0),
                    born: 1)
                insert.reset()
                version.bindLive(insert)
                try insert.step()
            }
            let oldInfo = try connection.statement("SELECT key, value FROM bucket_info_v1")
            defer { oldInfo.reset() }
            while try oldInfo.step() {
                try writeInfo(oldInfo.string(0) ?? "", oldInfo.string(1) ?? "", connection: connection)
            }
            try writeInfo("epoch", "1", connection: connection)
            try fillContentChecksums(connection)
            try connection.execute(
                """
                DROP TABLE contents_v1;
                DROP TABLE objects_v1;
                DROP TABLE bucket_info_v1;
                PRAGMA user_version = \(version);
                COMMIT;
                """)
        } catch {
            if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Upgrades a version-2 bucket in one transaction: each content's CRC-32C is computed once and kept. This
    /// reads every content once (a piece at a time), so a bucket of many gigabytes takes a while, once.
    static func upgradeFromVersion2(_ connection: SQLiteConnection) throws(SQLiteError) {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            // Another process may have upgraded it while this one waited for the lock.
            guard try connection.integer("PRAGMA user_version") == 2 else {
                try connection.execute("ROLLBACK")
                return
            }
            try connection.execute(contentChecksumsTable)
            try addServiceColumns(connection)
            try connection.execute(noncurrentTable)
            try fillContentChecksums(connection)
            try connection.execute("PRAGMA user_version = \(version); COMMIT")
        } catch {
            if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Upgrades a version-3 or version-4 bucket: the mark (see format 4 above) and the empty table of noncurrent
    /// generations (format 5); no object is rewritten.
    static func upgradeAddingNoncurrent(_ connection: SQLiteConnection, from old: Int64) throws(SQLiteError) {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            // Another process may have upgraded it while this one waited for the lock.
            if try connection.integer("PRAGMA user_version") == old {
                try addServiceColumns(connection)
                try connection.execute(noncurrentTable)
                try connection.execute("PRAGMA user_version = \(version)")
            }
            try connection.execute("COMMIT")
        } catch {
            if !connection.isAutocommit { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// Adds format 5's column of Cloud Storage's own fields to the tables of live and kept versions, where it is not
    /// yet (SQLite adds a column without rewriting a row: every row has it NULL).
    static func addServiceColumns(_ connection: SQLiteConnection) throws(SQLiteError) {
        for table in ["objects", "history"] {
            let columns = try connection.statement("SELECT 1 FROM pragma_table_info('\(table)') WHERE name = 'service'")
            let present = try columns.step()
            columns.reset()
            if !present { try connection.execute("ALTER TABLE \(table) ADD COLUMN service BLOB") }
        }
    }

    /// Computes the CRC-32C of every content that has none yet (inside the caller's transaction), reading each
    /// through incremental blob I/O, so that no content is ever whole in memory.
    static func fillContentChecksums(_ connection: SQLiteConnection) throws(SQLiteError) {
        let missing = try connection.statement(
            """
            SELECT id FROM contents WHERE id > ?1
            AND NOT EXISTS (SELECT 1 FROM content_checksums WHERE content_id = contents.id) ORDER BY id LIMIT 10000
            """)
        var after = Int64.min
        // A batch of ids at a time, so that a bucket of millions of contents needs no list of them all. Bounded:
        // each batch starts after the last one's last id.
        while true {
            missing.reset()
            missing.bind(1, after)
            var ids: [Int64] = []
            while try missing.step() { ids.append(missing.int64(0)) }
            missing.reset()
            guard let last = ids.last else { return }
            after = last
            for id in ids {
                try keepContentChecksum(try contentChecksum(connection, contentID: id), of: id, connection: connection)
            }
        }
    }

    /// Keeps the CRC-32C of content `contentID`.
    static func keepContentChecksum(
        _ value: UInt32, of contentID: Int64, connection: SQLiteConnection
    ) throws(SQLiteError) {
        let statement = try connection.statement("INSERT INTO content_checksums (content_id, crc32c) VALUES (?1, ?2)")
        defer { statement.reset() }
        statement.bind(1, contentID)
        statement.bind(2, Int64(value))
        try statement.step()
    }

    /// The CRC-32C of one stored content, read a piece at a time.
    static func contentChecksum(_ connection: SQLiteConnection, contentID: Int64) throws(SQLiteError) -> UInt32 {
        let blob = try SQLiteBlob(connection, table: "contents", column: "data", row: contentID, writable: false)
        defer { blob.close() }
        var crc = CRC32C()
        var offset = 0
        // Bounded: each round reads at least one byte, up to the blob's size.
        while offset < blob.size {
            let piece = try blob.read(at: offset, count: min(LocalBucket.streamedPieceBytes, blob.size - offset))
            crc.update(piece)
            offset += piece.count
        }
        return crc.value
    }

    // MARK: bucket_info

    static func readInfo(_ key: String, connection: SQLiteConnection) throws -> String? {
        let statement = try connection.statement("SELECT value, checksum FROM bucket_info WHERE key = ?1")
        defer { statement.reset() }
        statement.bind(1, key)
        guard try statement.step() else { return nil }
        let value = statement.string(0) ?? ""
        guard InfoRow(key: key, value: value).isChecksummed(by: statement.int64(1)) else {
            throw ChecksumMismatch(what: "bucket setting \(key.debugDescription)")
        }
        return value
    }

    static func writeInfo(_ key: String, _ value: String, connection: SQLiteConnection) throws(SQLiteError) {
        let statement = try connection.statement(
            "INSERT OR REPLACE INTO bucket_info (key, value, checksum) VALUES (?1, ?2, ?3)")
        defer { statement.reset() }
        statement.bind(1, key)
        statement.bind(2, value)
        statement.bind(3, InfoRow(key: key, value: value).checksum)
        try statement.step()
    }

    /// A setting's row as its checksum reads it.
    struct InfoRow: ChecksummedRow {
        var key: String
        var value: String

        func add(to checksum: inout some RowChecksumming) {
            checksum.add(key)
            checksum.add(value)
        }
    }
}

/// One version of an object as its row stores it: live in `objects`, or kept in `history` for snapshots.
struct StoredVersion {
    var name: String
    var generation: Int64
    var metageneration: Int64
    var size: Int64
    var timeCreated: Int64
    var updated: Int64
    var md5Hash: String
    /// cacheControl, contentDisposition, contentEncoding, contentLanguage, contentType (column order).
    var properties: [String?]
    /// customMetadata as `CustomMetadataColumn` encodes it.
    var customColumn: Data?
    var contentID: Int64
    var born: Int64
    /// Cloud Storage's own fields (rule M9) as `CloudStorageFields.packed` writes them; nil when there are none.
    var serviceColumn: Data?

    static let insertLive = """
        INSERT INTO objects (\(BucketSchema.metadataColumns), checksum)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
        """
    static let insertKept = """
        INSERT INTO history (\(BucketSchema.metadataColumns), died, checksum)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
        """
    static let insertSoftDeleted = """
        INSERT INTO soft_deleted (\(BucketSchema.metadataColumns), died, checksum)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
        """
    static let insertNoncurrent = """
        INSERT INTO noncurrent (\(BucketSchema.metadataColumns), died, checksum)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
        """
    static let columnCount: Int32 = 16
    /// The writable properties in the order of their columns (`properties`), which is rule M1's.
    static let propertyColumns: [(property: WritableProperty, column: String)] = [
        (.cacheControl, "cache_control"), (.contentDisposition, "content_disposition"),
        (.contentEncoding, "content_encoding"), (.contentLanguage, "content_language"), (.contentType, "content_type"),
    ]

    init(
        name: String, generation: Int64, metageneration: Int64, size: Int64, timeCreated: Int64, updated: Int64,
        md5Hash: String, properties: [String?], customColumn: Data?, contentID: Int64, born: Int64,
        serviceColumn: Data? = nil
    ) {
        self.serviceColumn = serviceColumn
        self.name = name
        self.generation = generation
        self.metageneration = metageneration
        self.size = size
        self.timeCreated = timeCreated
        self.updated = updated
        self.md5Hash = md5Hash
        self.properties = properties
        self.customColumn = customColumn
        self.contentID = contentID
        self.born = born
    }

    init(_ metadata: ObjectMetadata, contentID: Int64, born: Int64) {
        self.init(
            name: metadata.fullPath, generation: metadata.generation, metageneration: metadata.metageneration,
            size: metadata.size, timeCreated: metadata.timeCreated.microseconds, updated: metadata.updated.microseconds,
            md5Hash: metadata.md5Hash,
            properties: Self.propertyColumns.map { metadata[$0.property] },
            customColumn: CustomMetadataColumn.encode(metadata.customMetadata), contentID: contentID, born: born,
            serviceColumn: metadata.cloudStorage.isEmpty ? nil : Data(metadata.cloudStorage.packed))
    }

    /// The tables a version's row is in: `objects`, `history` (kept for snapshots), `noncurrent` (format 5).
    enum Table {
        case live, kept, noncurrent, softDeleted

        /// Whether its rows have a `died` column (before the checksum).
        var hasDied: Bool { self != .live }
    }

    /// Reads the version whose `metadataColumns` start at column `first`, then its checksum (after `died`
    /// for a kept version), and verifies it.
    init(_ statement: some SQLiteRow, from first: Int32, died: Bool) throws {
        try self.init(statement, from: first, table: died ? .kept : .live)
    }

    /// Reads the version whose `metadataColumns` start at column `first` in a row of `table`, then its checksum (after
    /// `died` where the table has it), and verifies it.
    init(_ statement: some SQLiteRow, from first: Int32, table: Table) throws {
        let died = table.hasDied
        self.init(
            name: statement.string(first) ?? "", generation: statement.int64(first + 1),
            metageneration: statement.int64(first + 2), size: statement.int64(first + 3),
            timeCreated: statement.int64(first + 4), updated: statement.int64(first + 5),
            md5Hash: statement.string(first + 6) ?? "",
            properties: (7...11).map { statement.string(first + $0) },
            customColumn: statement.isNull(first + 12) ? nil : statement.data(first + 12),
            contentID: statement.int64(first + 13), born: statement.int64(first + 14),
            serviceColumn: statement.isNull(first + 15) ? nil : statement.data(first + 15))
        let diedAt: Int64? = died ? statement.int64(first + Self.columnCount) : nil
        let stored = statement.int64(first + Self.columnCount + (died ? 1 : 0))
        guard Values(version: self, died: diedAt).isChecksummed(by: stored) else {
            let which =
                switch table {
                case .live: ""
                case .kept: " (a version kept for snapshots)"
                case .noncurrent: " (a noncurrent generation)"
                case .softDeleted: " (a soft-deleted generation)"
                }
            throw ChecksumMismatch(what: "object \(name.debugDescription)\(which)")
        }
    }

    /// The version's values as its row's checksum reads them: a live row (`died` nil) or a kept one.
    struct Values: ChecksummedRow {
        var version: StoredVersion
        var died: Int64?

        func add(to checksum: inout some RowChecksumming) {
            checksum.add(version.name)
            for number in [
                version.generation, version.metageneration, version.size, version.timeCreated, version.updated,
            ] {
                checksum.add(number)
            }
            checksum.add(version.md5Hash)
            for property in version.properties { checksum.add(property) }
            checksum.add(version.customColumn)
            checksum.add(version.contentID)
            checksum.add(version.born)
            // Added only when there are fields: the rows written before format 5 keep their checksums.
            if let service = version.serviceColumn { checksum.add(service) }
            if let died { checksum.add(died) }
        }
    }

    func checksum(died: Int64?) -> Int64 { Values(version: self, died: died).checksum }

    func metadata(bucket: String) throws -> ObjectMetadata {
        var metadata = ObjectMetadata(
            bucket: bucket, fullPath: name, generation: generation, metageneration: metageneration, size: size,
            timeCreated: Timestamp(microseconds: timeCreated), updated: Timestamp(microseconds: updated),
            md5Hash: md5Hash,
            cacheControl: properties[0], contentDisposition: properties[1], contentEncoding: properties[2],
            contentLanguage: properties[3], contentType: properties[4],
            customMetadata: try CustomMetadataColumn.decode(customColumn))
        if let serviceColumn {
            guard let fields = CloudStorageFields(packed: serviceColumn) else {
                throw ChecksumMismatch(what: "Cloud Storage fields of object \(name.debugDescription) (unreadable)")
            }
            metadata.cloudStorage = fields
        }
        return metadata
    }

    /// Binds parameters 1…17 of `insertLive` (or of an update with the same numbering).
    func bindLive(_ statement: SQLiteStatement) {
        bindColumns(statement)
        statement.bind(17, checksum(died: nil))
    }

    /// Binds parameters 1…18 of `insertKept` and `insertNoncurrent`.
    func bindKept(_ statement: SQLiteStatement, died: Int64) {
        bindColumns(statement)
        statement.bind(17, died)
        statement.bind(18, checksum(died: died))
    }

    private func bindColumns(_ statement: SQLiteStatement) {
        statement.bind(1, name)
        statement.bind(2, generation)
        statement.bind(3, metageneration)
        statement.bind(4, size)
        statement.bind(5, timeCreated)
        statement.bind(6, updated)
        statement.bind(7, md5Hash)
        for (offset, property) in properties.enumerated() { statement.bind(Int32(8 + offset), property) }
        statement.bind(13, customColumn)
        statement.bind(14, contentID)
        statement.bind(15, born)
        statement.bind(16, serviceColumn)
    }
}
