import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite
import StoreshWire

/// Object versioning in a bucket file (rule B5, format 5): while the bucket's versioning is on, a live version that
/// a write replaces or a delete removes moves to `noncurrent`, its `died` the change's time (`timeDeleted`); it is
/// read, updated, listed and deleted by its generation. Content stays shared with it, as with versions kept for
/// snapshots, so keeping a generation copies no bytes.
extension LocalBucket {
    /// The `bucket_info` key that says whether versioning is on ("on" or "off"), written with the settings
    /// (`storeSettings`) so that each write reads one row, not the settings' JSON.
    static let versioningKey = "versioning"

    /// Whether a live version replaced or removed now is kept as a noncurrent generation.
    func versioningIsOn() throws -> Bool {
        guard storesNoncurrent else { return false }
        return try BucketSchema.readInfo(Self.versioningKey, connection: connection) == "on"
    }

    /// Records whether versioning is on, inside the change that stores the settings.
    func storeVersioning(_ on: Bool) throws {
        guard storesNoncurrent else {
            if on {
                throw StorageError.invalidArgument(
                    "\(path) is open for reading only: its versioning cannot be turned on.")
            }
            return
        }
        try BucketSchema.writeInfo(Self.versioningKey, on ? "on" : "off", connection: connection)
    }

    /// Before a live version is replaced or removed: keeps it as a noncurrent generation, live until `time`, when
    /// `time` is given (a write or delete; an import or a snapshot's restore gives none) and versioning is on.
    /// Returns whether it did (then the version's content stays referenced).
    func keepIfVersioned(_ version: StoredVersion, since time: Timestamp?) throws -> Bool {
        guard let time, try versioningIsOn() else { return false }
        let insert = try connection.statement(StoredVersion.insertNoncurrent)
        defer { insert.reset() }
        version.bindKept(insert, died: time.microseconds)
        try insert.step()
        return true
    }

    /// How many noncurrent and soft-deleted generations the bucket keeps, read together.
    public func keptGenerationCounts() throws(StorageError) -> (noncurrent: Int, softDeleted: Int) {
        try read { try keptGenerationCountsInTransaction() }
    }

    /// The same, read in the transaction (and under the lock) the caller holds.
    func keptGenerationCountsInTransaction() throws -> (noncurrent: Int, softDeleted: Int) {
        guard storesNoncurrent else { return (0, 0) }
        return (
            Int(try connection.integer("SELECT count(*) FROM noncurrent") ?? 0),
            Int(try connection.integer("SELECT count(*) FROM soft_deleted") ?? 0)
        )
    }

    /// How many noncurrent generations the bucket keeps.
    public func noncurrentCount() throws(StorageError) -> Int {
        guard storesNoncurrent else { return 0 }
        return try read { Int(try connection.integer("SELECT count(*) FROM noncurrent") ?? 0) }
    }

    /// A noncurrent or soft-deleted generation's row: its id, its version and its metadata (a noncurrent one's with its
    /// `timeDeleted`; a soft-deleted one's fields say when it was deleted), with the CRC-32C.
    struct NoncurrentRow {
        static let columns =
            "\(SnapshotRow.keptColumns), (SELECT crc32c FROM content_checksums WHERE content_id = noncurrent.content_id), id"
        static let softDeletedColumns =
            "\(SnapshotRow.keptColumns), (SELECT crc32c FROM content_checksums WHERE content_id = soft_deleted.content_id), id"

        var id: Int64
        var version: StoredVersion
        var died: Int64
        var metadata: ObjectMetadata

        init(_ statement: some SQLiteRow, bucket: String, softDeleted: Bool = false) throws {
            version = try StoredVersion(statement, from: 0, table: softDeleted ? .softDeleted : .noncurrent)
            died = statement.int64(StoredVersion.columnCount)
            metadata = try version.metadata(bucket: bucket)
            if !softDeleted { metadata.timeDeleted = Timestamp(microseconds: died) }
            let checksumColumn = StoredVersion.columnCount + 2
            if !statement.isNull(checksumColumn) {
                metadata.crc32c = CRC32C.base64(of: UInt32(truncatingIfNeeded: statement.int64(checksumColumn)))
            }
            id = statement.int64(StoredVersion.columnCount + 3)
        }
    }

    func fetchNoncurrent(_ name: String, generation: Int64) throws -> NoncurrentRow? {
        try fetchKept(name, generation: generation, softDeleted: false)
    }

    /// A generation kept noncurrent, or soft-deleted (rule B6), by its name and number.
    private func fetchKept(_ name: String, generation: Int64, softDeleted: Bool) throws -> NoncurrentRow? {
        guard storesNoncurrent else { return nil }
        let statement = try connection.statement(
            softDeleted
                ? "SELECT \(NoncurrentRow.softDeletedColumns) FROM soft_deleted WHERE name = ?1 AND generation = ?2"
                : "SELECT \(NoncurrentRow.columns) FROM noncurrent WHERE name = ?1 AND generation = ?2")
        defer { statement.reset() }
        statement.bind(1, name)
        statement.bind(2, generation)
        return try statement.step() ? try NoncurrentRow(statement, bucket: self.name, softDeleted: softDeleted) : nil
    }

    /// Keeps an archived generation that is not live (an import): noncurrent since its `timeDeleted`, or soft-deleted
    /// until its hard delete time, over content stored already; one of that kind, name and number is replaced.
    func storeKeptGeneration(_ metadata: ObjectMetadata, contentID: Int64) throws {
        guard storesNoncurrent else {
            throw StorageError.invalidArgument(
                "\(path) is open for reading only: the generation \(metadata.generation) of \(MessageText.name(metadata.fullPath)) cannot be kept."
            )
        }
        let softDeleted = metadata.timeDeleted == nil
        guard let died = metadata.timeDeleted ?? metadata.cloudStorage.hardDeleteTime else {
            throw StorageError.internalError(
                "The generation \(metadata.generation) of \(metadata.fullPath) is live, not kept.")
        }
        let table = softDeleted ? "soft_deleted" : "noncurrent"
        let replaced = try connection.statement(
            "SELECT id, content_id FROM \(table) WHERE name = ?1 AND generation = ?2")
        replaced.bind(1, metadata.fullPath)
        replaced.bind(2, metadata.generation)
        let existing = try replaced.step() ? (id: replaced.int64(0), contentID: replaced.int64(1)) : nil
        replaced.reset()
        if let existing {
            let delete = try connection.statement("DELETE FROM \(table) WHERE id = ?1")
            defer { delete.reset() }
            delete.bind(1, existing.id)
            try delete.step()
        }
        // Its Cloud Storage fields (a soft-deleted one's times among them) go in its row as they do in a live one's.
        let version = StoredVersion(metadata, contentID: contentID, born: try rows.epochs().current)
        let insert = try connection.statement(
            softDeleted ? StoredVersion.insertSoftDeleted : StoredVersion.insertNoncurrent)
        defer { insert.reset() }
        version.bindKept(insert, died: died.microseconds)
        try insert.step()
        if let existing { try rows.releaseContent(existing.contentID, of: metadata.fullPath) }
    }

    /// Removes every noncurrent and soft-deleted generation (a bucket emptied whole), a page at a time; answers how
    /// many went.
    func removeKeptGenerations() throws -> Int {
        guard storesNoncurrent else { return 0 }
        var removed = 0
        for table in ["noncurrent", "soft_deleted"] {
            let page = try connection.statement("SELECT id, name, content_id FROM \(table) ORDER BY id LIMIT 1000")
            defer { page.reset() }
            while true {
                let removedNow = try deleteKeptRows(page, from: table)
                guard removedNow > 0 else { break }
                removed += removedNow
            }
        }
        return removed
    }

    // MARK: Soft delete (rule B6)

    static let softDeleteSecondsKey = "soft_delete_seconds"

    /// How long a version deleted or replaced now is kept soft-deleted (0: it is not).
    func softDeleteSeconds() throws -> Int64 {
        guard storesNoncurrent else { return 0 }
        return Int64(try BucketSchema.readInfo(Self.softDeleteSecondsKey, connection: connection) ?? "0") ?? 0
    }

    /// A version that a write replaces or a delete removes at `time` (nil: an import or a restore of a snapshot, which
    /// keep nothing): kept as a noncurrent generation while versioning is on (unless `asNoncurrent` is false: a
    /// generation deleted by number), else soft-deleted while the soft delete policy keeps deleted versions. Answers
    /// whether it was kept (its content then stays).
    func keepReplaced(_ version: StoredVersion, at time: Timestamp?, asNoncurrent: Bool = true) throws -> Bool {
        guard let time else { return false }
        if asNoncurrent, try keepIfVersioned(version, since: time) { return true }
        return try keepIfSoftDeleting(version, at: time)
    }

    /// Keeps `version` soft-deleted from `time` for the policy's duration, fixed now (a later change of the policy
    /// does not change it, as on the service); versions whose time is up go first, a few at a time.
    func keepIfSoftDeleting(_ version: StoredVersion, at time: Timestamp) throws -> Bool {
        try purgeExpiredSoftDeleted(now: time)
        let seconds = try softDeleteSeconds()
        guard seconds > 0 else { return false }
        var fields = try version.metadata(bucket: name).cloudStorage
        let (hard, overflow) = time.microseconds.addingReportingOverflow(
            seconds.multipliedReportingOverflow(by: 1_000_000).partialValue)
        fields.softDeleteTime = time
        fields.hardDeleteTime = Timestamp(microseconds: overflow ? .max : hard)
        var soft = version
        soft.serviceColumn = Data(fields.packed)
        let insert = try connection.statement(StoredVersion.insertSoftDeleted)
        defer { insert.reset() }
        soft.bindKept(insert, died: fields.hardDeleteTime!.microseconds)
        try insert.step()
        return true
    }

    /// Deletes for good the soft-deleted versions whose time is up (at most 100 a change: bounded work per change).
    func purgeExpiredSoftDeleted(now: Timestamp) throws {
        guard storesNoncurrent else { return }
        let expired = try connection.statement(
            "SELECT id, name, content_id FROM soft_deleted WHERE died <= ?1 ORDER BY died LIMIT 100")
        defer { expired.reset() }
        expired.bind(1, now.microseconds)
        _ = try deleteKeptRows(expired, from: "soft_deleted")
    }

    /// Deletes the rows of `table` (`noncurrent` or `soft_deleted`) that `selection` (id, name, content id) finds,
    /// each with its content when nothing else keeps it; answers how many. The selection is read whole first, then
    /// reset (its bindings cleared), so that its rows are not deleted under it.
    func deleteKeptRows(_ selection: SQLiteStatement, from table: String) throws -> Int {
        var found: [(id: Int64, name: String, contentID: Int64)] = []
        while try selection.step() { found.append((selection.int64(0), selection.string(1) ?? "", selection.int64(2))) }
        selection.reset()
        guard !found.isEmpty else { return 0 }
        let delete = try connection.statement("DELETE FROM \(table) WHERE id = ?1")
        defer { delete.reset() }
        for row in found {
            delete.reset()
            delete.bind(1, row.id)
            try delete.step()
            try rows.releaseContent(row.contentID, of: row.name)
        }
        return found.count
    }

    func fetchSoftDeleted(_ name: String, generation: Int64) throws -> NoncurrentRow? {
        try fetchKept(name, generation: generation, softDeleted: true)
    }

    /// The metadata of a soft-deleted generation.
    public func softDeletedGenerationMetadata(
        of object: ObjectName, generation: Int64
    ) throws(StorageError) -> ObjectMetadata {
        try read {
            guard let row = try fetchSoftDeleted(object.rawValue, generation: generation) else {
                throw StorageError.noSoftDeletedGeneration(object.rawValue, generation, bucketURL: url)
            }
            return row.metadata
        }
    }

    /// One generation of an object: the live row when it has that generation, else the noncurrent one.
    enum GenerationRow {
        case live(RowStore.LiveRow)
        case noncurrent(NoncurrentRow)

        var metadata: ObjectMetadata {
            switch self {
            case .live(let row): row.metadata
            case .noncurrent(let row): row.metadata
            }
        }

        var version: StoredVersion {
            switch self {
            case .live(let row): row.version
            case .noncurrent(let row): row.version
            }
        }
    }

    func fetchGeneration(_ object: ObjectName, _ generation: Int64) throws -> GenerationRow {
        if let live = try rows.fetchRow(object.rawValue), live.version.generation == generation { return .live(live) }
        if let kept = try fetchNoncurrent(object.rawValue, generation: generation) { return .noncurrent(kept) }
        throw StorageError(.objectNotFound, "No such object: \(name)/\(object.rawValue) (generation \(generation)).")
    }

    // MARK: Reads (synchronous, for the server)

    /// The metadata of one generation, live or noncurrent.
    public func generationMetadata(of object: ObjectName, generation: Int64) throws(StorageError) -> ObjectMetadata {
        try read { try fetchGeneration(object, generation).metadata }
    }

    /// One generation's metadata, with the bytes of its content that `bytes` picks (nil: all, checked against its MD5)
    /// handed to `piece` a piece at a time, as `currentObject(_:bytes:contentPieces:)` reads the live object's.
    public func generation(
        _ object: ObjectName, _ generation: Int64, bytes: (Int64) throws -> Range<Int64>?,
        contentPieces piece: (Data) throws -> Void
    ) throws(StorageError) -> (metadata: ObjectMetadata, range: Range<Int64>?) {
        try read {
            let row = try fetchGeneration(object, generation)
            let range = try bytes(row.version.size)
            try rows.streamContent(of: row.version, range: range, piece)
            return (row.metadata, range)
        }
    }

    /// One generation's metadata, with its content handed to `piece` a piece at a time, checked against its MD5.
    public func generation(
        _ object: ObjectName, _ generation: Int64, contentPieces piece: (Data) throws -> Void
    ) throws(StorageError)
        -> ObjectMetadata
    {
        try self.generation(object, generation, bytes: { _ in nil }, contentPieces: piece).metadata
    }

    /// A page of every generation under `prefix`, live and noncurrent, by name and then generation (oldest first), as
    /// the JSON API lists with `versions=true`; with `delimited`, names past the next `/` collapse into prefixes.
    /// `items` repeats a name once per generation, `itemMetadata` has each generation's metadata.
    /// With `softDeleted`, the soft-deleted generations instead (rule B6), listed the same way.
    public func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool = false
    ) throws(StorageError) -> ListPage {
        let limit = try options.validatedMaxResults()
        var resume: (name: String, generation: Int64?, inclusive: Bool) = (prefix, nil, true)
        if let start = options.startOffset, NameBytes.precedes(prefix, start) { resume = (start, nil, true) }
        if let token = options.pageToken {
            let position = try LocalPageTokens().position(decoding: token, bucket: name, prefix: prefix)
            switch position.lastEntryKind {
            case .item: resume = (position.lastEntry, position.lastGeneration, position.lastGeneration != nil)
            case .prefix: resume = (NameBound.successor(ofPrefix: position.lastEntry), nil, true)
            }
        }
        return try read {
            // The next entries after the position (at its name, the generations after its generation; then later
            // names), from each table by its index, at most a page and one from each: bounded whatever the bucket holds.
            let after = "name >= ?1 AND (name > ?1 OR generation > ?2 OR ?3)"
            var branches: [String] = []
            if softDeleted {
                if storesNoncurrent {
                    branches.append(
                        "SELECT * FROM (SELECT name, generation, 2 AS kept FROM soft_deleted WHERE \(after) ORDER BY name, generation LIMIT ?4)"
                    )
                }
            } else {
                branches.append(
                    "SELECT * FROM (SELECT name, generation, 0 AS kept FROM objects WHERE \(after) ORDER BY name LIMIT ?4)"
                )
                if storesNoncurrent {
                    branches.append(
                        "SELECT * FROM (SELECT name, generation, 1 FROM noncurrent WHERE \(after) ORDER BY name, generation LIMIT ?4)"
                    )
                }
            }
            guard !branches.isEmpty else { return ListPage() }
            let next = try connection.statement(branches.joined(separator: " UNION ALL ") + " ORDER BY 1, 2 LIMIT ?4")
            defer { next.reset() }
            var page = ListPage()
            var metadata: [ObjectMetadata] = []
            var last: ListPosition?
            var more = false
            scanning: while true {
                next.reset()
                next.bind(1, resume.name)
                next.bind(2, resume.generation ?? .max)
                next.bind(3, Int64(resume.inclusive && resume.generation == nil ? 1 : 0))
                next.bind(4, Int64(limit + 1))
                var found: [(name: String, generation: Int64, kept: Int64)] = []
                while try next.step() { found.append((next.string(0) ?? "", next.int64(1), next.int64(2))) }
                if found.isEmpty { break }
                for entry in found {
                    guard entry.name.utf8.starts(with: prefix.utf8) else { break scanning }
                    if let end = options.endOffset, !NameBytes.precedes(entry.name, end) { break scanning }
                    if page.items.count + page.prefixes.count == limit {
                        more = true
                        break scanning
                    }
                    let rest = entry.name.utf8.dropFirst(prefix.utf8.count)
                    if delimited, let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
                        let collapsed = String(decoding: entry.name.utf8[...slash], as: UTF8.self)
                        page.prefixes.append(String(decoding: entry.name.utf8[..<slash], as: UTF8.self))
                        last = ListPosition(prefix: prefix, lastEntryKind: .prefix, lastEntry: collapsed)
                        resume = (NameBound.successor(ofPrefix: collapsed), nil, true)
                        continue scanning
                    }
                    let row: GenerationRow
                    switch entry.kept {
                    case 1:
                        guard let kept = try fetchNoncurrent(entry.name, generation: entry.generation) else { continue }
                        row = .noncurrent(kept)
                    case 2:
                        guard let soft = try fetchSoftDeleted(entry.name, generation: entry.generation) else {
                            continue
                        }
                        row = .noncurrent(soft)
                    default:
                        guard let live = try rows.fetchRow(entry.name) else { continue }
                        row = .live(live)
                    }
                    page.items.append(entry.name)
                    metadata.append(row.metadata)
                    last = ListPosition(
                        prefix: prefix, lastEntryKind: .item, lastEntry: entry.name, lastGeneration: entry.generation)
                    resume = (entry.name, entry.generation, true)
                }
                if found.count <= limit { break }
            }
            page.itemMetadata = options.includeMetadata ? metadata : nil
            if more, let last { page.nextPageToken = LocalPageTokens().token(for: last, bucket: name) }
            return page
        }
    }
}

extension LocalBucket: ObjectVersions {
    public func generation(named text: String) -> ObjectGeneration? { .number(named: text) }

    public func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try generationMetadata(of: object, generation: try generation.numbered(object))
    }

    public func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata
    {
        try softDeletedGenerationMetadata(of: object, generation: try generation.numbered(object))
    }

    public func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata {
        let generation = try generation.numbered(object)
        // The sink's own failure (a full disk) is the caller's to read as it was thrown, not as the bucket's.
        var sinkFailure: (any Error)?
        do {
            return try self.generation(object, generation) { piece in
                do {
                    try sink.write(piece)
                } catch {
                    sinkFailure = error
                    throw error
                }
            }
        } catch {
            throw sinkFailure ?? error
        }
    }

    public func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        let generation = try generation.numbered(object)
        return try change {
            let row = try fetchGeneration(object, generation)
            let now = options.clock.nextChangeTime()
            let (next, changed) = try row.metadata.applying(update, now: now)
            guard precondition.isSatisfied(by: row.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: row.metadata)
            }
            guard changed else { return UpdateResult(metadata: row.metadata, previous: row.metadata, changed: false) }
            switch row {
            case .live(let live):
                try rows.storeMetadata(next, over: live)
            case .noncurrent(let kept):
                // A noncurrent generation is one row of its own: replaced whole, its content and deletion time kept.
                let replace = try connection.statement("DELETE FROM noncurrent WHERE id = ?1")
                defer { replace.reset() }
                replace.bind(1, kept.id)
                try replace.step()
                let insert = try connection.statement(StoredVersion.insertNoncurrent)
                defer { insert.reset() }
                StoredVersion(next, contentID: kept.version.contentID, born: kept.version.born).bindKept(
                    insert, died: kept.died)
                try insert.step()
            }
            return UpdateResult(metadata: next, previous: row.metadata, changed: true)
        }
    }

    public func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws {
        let generation = try generation.numbered(object)
        return try change {
            let row = try fetchGeneration(object, generation)
            guard precondition.isSatisfied(by: row.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: row.metadata)
            }
            try refuseIfProtected(row.metadata, .deleted)
            // Deleted by number: no noncurrent generation is left, but a soft delete policy keeps it (rule B6).
            let now = options.clock.nextChangeTime()
            switch row {
            case .live(let live):
                try removeLive(live.version, noncurrentSince: now, asNoncurrent: false)
            case .noncurrent(let kept):
                let delete = try connection.statement("DELETE FROM noncurrent WHERE id = ?1")
                defer { delete.reset() }
                delete.bind(1, kept.id)
                try delete.step()
                if try !keepIfSoftDeleting(kept.version, at: now) {
                    try rows.releaseContent(kept.version.contentID, of: kept.version.name)
                }
            }
        }
    }

    /// Brings a soft-deleted generation back as the live object (rule B6): a new generation with its content (shared,
    /// not copied) and metadata, under `precondition` on the live object it replaces (which is then replaced as a
    /// write replaces it: noncurrent, soft-deleted or gone).
    public func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata {
        let generation = try generation.numbered(object)
        return try change {
            guard let soft = try fetchSoftDeleted(object.rawValue, generation: generation) else {
                throw StorageError.noSoftDeletedGeneration(object.rawValue, generation, bucketURL: url)
            }
            let existing = try rows.fetchRow(object.rawValue)
            guard precondition.isSatisfied(by: existing?.metadata) else {
                throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing?.metadata)
            }
            try refuseIfProtected(existing?.metadata, .overwritten)
            let now = options.clock.nextChangeTime()
            var restored = soft.metadata
            restored.generation = try rows.nextGeneration(now: now)
            restored.metageneration = 1
            restored.timeCreated = now
            restored.updated = now
            restored.cloudStorage.softDeleteTime = nil
            restored.cloudStorage.hardDeleteTime = nil
            // A restore makes a new object: the bucket's encryption enforcement holds for it, as for a write.
            try refuseRestrictedEncryption(of: restored.cloudStorage, name: object.rawValue)
            let remove = try connection.statement("DELETE FROM soft_deleted WHERE id = ?1")
            defer { remove.reset() }
            remove.bind(1, soft.id)
            try remove.step()
            try store(restored, contentID: soft.version.contentID, replacing: existing, noncurrentSince: now)
            return restored
        }
    }

    public func deletionsKept() async throws -> DeletionKeeping {
        try read {
            if try versioningIsOn() { return .noncurrent }
            let seconds = try softDeleteSeconds()
            return seconds > 0 ? .softDeleted(seconds: seconds) : .notKept
        }
    }

    public func hasNoncurrentGenerations() async throws -> Bool {
        try noncurrentCount() > 0
    }
}
