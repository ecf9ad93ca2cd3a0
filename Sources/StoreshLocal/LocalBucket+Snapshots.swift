import Foundation
import StoreshCore
import StoreshSQLite

/// Named snapshots inside the bucket file (see `BucketSchema` for how versions are kept).
extension LocalBucket: SnapshotStore {
    public func saveSnapshot(named name: String) async throws -> SnapshotInfo {
        try saveSnapshotNow(named: name)
    }

    public func snapshots() async throws -> [SnapshotInfo] {
        try allSnapshots()
    }

    public func changes(
        from old: BucketState, to new: BucketState, each body: (ObjectChange) throws -> Void
    ) async throws {
        try changesNow(from: old, to: new, each: body)
    }

    public func restoreSnapshot(named name: String, each body: (ObjectChange) throws -> Void) async throws {
        try restoreSnapshotNow(named: name, each: body)
    }

    public func removeSnapshot(named name: String) async throws -> SnapshotInfo {
        try removeSnapshotNow(named: name)
    }

    // MARK: Synchronous forms (benchmarks and tests call these)

    /// Takes a snapshot: one row, whatever the bucket's size.
    public func saveSnapshotNow(named name: String) throws(StorageError) -> SnapshotInfo {
        try SnapshotInfo.validate(name: name)
        return try change {
            if let existing = try snapshotRow(name) { throw SnapshotInfo.nameTaken(existing.info) }
            let epochs = try rows.epochs()
            let count = try connection.integer("SELECT count(*) FROM objects") ?? 0
            let info = SnapshotInfo(name: name, created: options.clock.now(), objectCount: Int(count))
            let insert = try connection.statement(
                "INSERT INTO snapshots (name, epoch, created, object_count, checksum) VALUES (?1, ?2, ?3, ?4, ?5)")
            defer { insert.reset() }
            insert.bind(1, name)
            insert.bind(2, epochs.current)
            insert.bind(3, info.created.microseconds)
            insert.bind(4, count)
            insert.bind(
                5,
                SnapshotRow.Values(name: name, epoch: epochs.current, created: info.created.microseconds, count: count)
                    .checksum)
            try insert.step()
            // Changes from now on belong to the next epoch, so this snapshot keeps seeing what it sees now.
            try rows.setEpochs(current: epochs.current + 1)
            return info
        }
    }

    public func allSnapshots() throws(StorageError) -> [SnapshotInfo] {
        try read {
            let statement = try connection.statement("SELECT \(SnapshotRow.columns) FROM snapshots ORDER BY epoch")
            defer { statement.reset() }
            var snapshots: [SnapshotInfo] = []
            while try statement.step() { snapshots.append(try SnapshotRow(statement).info) }
            return snapshots
        }
    }

    public func snapshotNames() throws(StorageError) -> [String] {
        try read { try allSnapshotNames() }
    }

    /// Each object that differs from `old` to `new`, in name byte order, told to `body` as it is found: memory
    /// holds one change at a time, however many there are.
    public func changesNow(from old: BucketState, to new: BucketState, each body: (ObjectChange) throws -> Void) throws
    {
        try read { try forEachChange(from: try epoch(of: old), to: try epoch(of: new), body) }
    }

    /// Every object that differs from `old` to `new`, gathered (tests; a few changes).
    public func changesNow(from old: BucketState, to new: BucketState) throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        try changesNow(from: old, to: new) { all.append($0) }
        return all
    }

    /// Makes the bucket as it was in the snapshot: each object that differs from it, as `snapshot diff NAME`
    /// reports (rule N2), gets back the version the snapshot saw, exactly (generation, metageneration, times,
    /// metadata, content), or goes when the snapshot had none; an object that does not differ is left as it is,
    /// its metageneration and `updated` too. Reads and writes only what changed since the snapshot, and tells
    /// `body` each change as it is made.
    public func restoreSnapshotNow(named name: String, each body: (ObjectChange) throws -> Void) throws {
        try change {
            let snapshot = try requireSnapshot(name)
            // The names to look at, set aside first (in SQLite's temporary store, not in memory): the tables they
            // come from change as the restore goes.
            try connection.execute(
                "CREATE TEMP TABLE IF NOT EXISTS restore_names (name TEXT PRIMARY KEY) WITHOUT ROWID; DELETE FROM restore_names"
            )
            defer { try? connection.execute("DELETE FROM restore_names") }
            let gather = try connection.statement("INSERT OR IGNORE INTO restore_names (name) \(Self.namesChangedSQL)")
            gather.bind(1, snapshot.epoch)
            gather.bind(2, nil as Int64?)
            try gather.step()
            gather.reset()
            let current = try rows.epochs().current
            let names = try connection.statement(
                "SELECT name FROM restore_names WHERE name > ?1 ORDER BY name LIMIT 1000")
            defer { names.reset() }
            var after = ""
            while true {
                names.reset()
                names.bind(1, after)
                var batch: [String] = []
                while try names.step() { batch.append(names.string(0) ?? "") }
                guard let last = batch.last else { break }
                after = last
                for object in batch {
                    let now = try rows.fetchRow(object)
                    // The snapshot saw the live version itself: nothing to bring back.
                    if let now, now.version.born <= snapshot.epoch { continue }
                    let then = try keptVersion(of: object, at: snapshot.epoch)
                    guard let change = ObjectChange.between(now?.metadata, try then?.metadata(bucket: self.name)) else {
                        continue
                    }
                    if let now { try removeLive(now.version) }
                    // A brought-back version is born now: it belongs to no snapshot taken in between.
                    if var then {
                        then.born = current
                        try rows.insertLive(then)
                    }
                    try body(change)
                }
            }
        }
    }

    /// Restores the snapshot and gathers what it changed (tests; a few changes).
    public func restoreSnapshotNow(named name: String) throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        try restoreSnapshotNow(named: name) { all.append($0) }
        return all
    }

    /// Forgets a snapshot, and the kept versions no other snapshot sees (and content only they held).
    public func removeSnapshotNow(named name: String) throws(StorageError) -> SnapshotInfo {
        try change {
            let snapshot = try requireSnapshot(name)
            let delete = try connection.statement("DELETE FROM snapshots WHERE name = ?1")
            delete.bind(1, name)
            try delete.step()
            delete.reset()
            let seen = try connection.statement(
                "SELECT id, name, content_id, born, died FROM history WHERE died > ?1 AND born <= ?1")
            seen.bind(1, snapshot.epoch)
            var candidates: [(id: Int64, name: String, contentID: Int64, born: Int64, died: Int64)] = []
            while try seen.step() {
                candidates.append((seen.int64(0), seen.string(1) ?? "", seen.int64(2), seen.int64(3), seen.int64(4)))
            }
            seen.reset()
            let otherSnapshot = try connection.statement(
                "SELECT 1 FROM snapshots WHERE epoch >= ?1 AND epoch < ?2 LIMIT 1")
            let forget = try connection.statement("DELETE FROM history WHERE id = ?1")
            defer {
                otherSnapshot.reset()
                forget.reset()
            }
            for candidate in candidates {
                otherSnapshot.reset()
                otherSnapshot.bind(1, candidate.born)
                otherSnapshot.bind(2, candidate.died)
                if try otherSnapshot.step() { continue }
                forget.reset()
                forget.bind(1, candidate.id)
                try forget.step()
                try rows.releaseContent(candidate.contentID, of: candidate.name)
            }
            rows.forgetEpochs()  // the newest snapshot may have changed
            return snapshot.info
        }
    }

    // MARK: Reading states

    /// The epoch a state is seen at; nil for the bucket as it is now.
    private func epoch(of state: BucketState) throws -> Int64? {
        switch state {
        case .current: nil
        case .snapshot(let name): try requireSnapshot(name).epoch
        }
    }

    /// The names that may differ between two epochs (`?1` the older, `?2` the newer; NULL is now): those with a
    /// version born, or a version that died, between them. The `born` and `died` indexes find exactly those, so
    /// the cost follows the changes, not the bucket. SQLite orders them by their bytes (BINARY collation), and
    /// keeps them apart by their bytes (rule P7: canonically equivalent names are two objects).
    static let namesChangedSQL = """
        SELECT name FROM objects WHERE born > ?1 AND (?2 IS NULL OR born <= ?2)
        UNION SELECT name FROM history WHERE born > ?1 AND (?2 IS NULL OR born <= ?2)
        UNION SELECT name FROM history WHERE died > ?1 AND (?2 IS NULL OR died <= ?2)
        """

    /// Each object that differs between two states (epochs; nil is now), in name byte order, told to `body` as it
    /// is found. One statement gives the names: SQLite sorts them in its temporary store (which spills to a file),
    /// and each is read as it comes, so memory holds one change, whatever their number. (Nothing is written
    /// meanwhile: the statement reads a state that stays.)
    private func forEachChange(from old: Int64?, to new: Int64?, _ body: (ObjectChange) throws -> Void) throws {
        if old == new { return }
        let (low, high) = Self.ordered(old, new)
        let names = try connection.statement("\(Self.namesChangedSQL) ORDER BY name")
        defer { names.reset() }
        names.bind(1, low)
        names.bind(2, high)
        while try names.step() {
            let name = names.string(0) ?? ""
            if let change = ObjectChange.between(try version(of: name, at: old), try version(of: name, at: new)) {
                try body(change)
            }
        }
    }

    /// The version of `name` the snapshot at `epoch` saw that has died since (nil: none did).
    private func keptVersion(of name: String, at epoch: Int64) throws -> StoredVersion? {
        let statement = try connection.statement(
            "SELECT \(SnapshotRow.keptColumns) FROM history WHERE name = ?1 AND born <= ?2 AND died > ?2")
        defer { statement.reset() }
        statement.bind(1, name)
        statement.bind(2, epoch)
        guard try statement.step() else { return nil }
        return try StoredVersion(statement, from: 0, died: true)
    }

    /// (older, newer) of two epochs, where nil (now) is the newest.
    private static func ordered(_ a: Int64?, _ b: Int64?) -> (Int64, Int64?) {
        switch (a, b) {
        case (let a?, let b?): (min(a, b), max(a, b))
        case (let a?, nil): (a, nil)
        case (nil, let b?): (b, nil)
        case (nil, nil): (0, nil)
        }
    }

    /// The object `name` as the state at `epoch` (nil: now) sees it.
    private func version(of name: String, at epoch: Int64?) throws -> ObjectMetadata? {
        if let live = try rows.fetchRow(name), epoch == nil || live.version.born <= epoch! {
            return live.metadata
        }
        guard let epoch else { return nil }
        return try keptVersion(of: name, at: epoch)?.metadata(bucket: self.name)
    }

    private func requireSnapshot(_ name: String) throws -> SnapshotRow {
        if let row = try snapshotRow(name) { return row }
        let names = try allSnapshotNames()
        var message = "No snapshot named \(MessageText.oneLine(name).debugDescription)"
        if let near = Suggestion.nearest(to: name, among: names) {
            message += "; did you mean \(near)?"
        } else {
            message +=
                names.isEmpty
                ? "; this bucket has none (snapshot save NAME takes one)."
                : "; the bucket has \(MessageText.counted(names.count, "snapshot")), which snapshot list shows."
        }
        throw StorageError.invalidArgument(message)
    }

    private func allSnapshotNames() throws -> [String] {
        let statement = try connection.statement("SELECT name FROM snapshots ORDER BY epoch")
        defer { statement.reset() }
        var names: [String] = []
        while try statement.step() { names.append(statement.string(0) ?? "") }
        return names
    }

    private func snapshotRow(_ name: String) throws -> SnapshotRow? {
        let statement = try connection.statement("SELECT \(SnapshotRow.columns) FROM snapshots WHERE name = ?1")
        defer { statement.reset() }
        statement.bind(1, name)
        return try statement.step() ? try SnapshotRow(statement) : nil
    }
}

/// A row of `snapshots`, checked against its checksum.
struct SnapshotRow {
    static let columns = "name, epoch, created, object_count, checksum"
    /// A kept version's columns, as `StoredVersion(_:from:died:)` reads them.
    static let keptColumns = "\(BucketSchema.metadataColumns), died, checksum"

    var info: SnapshotInfo
    var epoch: Int64

    init(_ statement: SQLiteStatement) throws {
        let name = statement.string(0) ?? ""
        epoch = statement.int64(1)
        let created = statement.int64(2)
        let count = statement.int64(3)
        guard Values(name: name, epoch: epoch, created: created, count: count).isChecksummed(by: statement.int64(4))
        else {
            throw ChecksumMismatch(what: "snapshot \(name.debugDescription)")
        }
        info = SnapshotInfo(name: name, created: Timestamp(microseconds: created), objectCount: Int(count))
    }

    /// A snapshot's values as its row's checksum reads them.
    struct Values: ChecksummedRow {
        var name: String
        var epoch: Int64
        var created: Int64
        var count: Int64

        func add(to checksum: inout some RowChecksumming) {
            checksum.add(name)
            checksum.add(epoch)
            checksum.add(created)
            checksum.add(count)
        }
    }
}
