import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite

/// A plan's working state: its changes in order, the planned state of every object they touch (what later commands
/// of the script read), and what apply made of each change. It lives in a private temporary SQLite database, which
/// SQLite keeps in memory up to its cache (16 MiB here) and spills to a file of its own past that, deleted when the
/// plan is closed: a plan of 10 million changes needs no more memory than one of ten.
///
/// Changes are numbered from 0 in the order they were planned. Thread-safe: apply records outcomes from many tasks.
package final class PlanStore: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let lock = NSLock()
    /// Large files that planned writes send, by change: their content stays in its file until it is sent.
    private var sources: [Int: any ContentSource] = [:]
    private var changeCount = 0
    /// How many of the changes are a move's object arriving (`movesFrom`): the move's second change, its source
    /// leaving, follows it.
    private var moveCount = 0
    private var savepointDepth = 0

    /// How much of the plan SQLite keeps in memory before it spills to its file.
    static let cacheKiB = 16 * 1024

    /// Where an object's planned content is.
    package enum ContentKind: Sendable, Equatable {
        /// The object's content is the real bucket's (a metadata change).
        case real
        /// The content the planned change numbered so sends.
        case planned(change: Int)
        /// Brought back by a planned restore: the content is in a snapshot, which a plan does not read.
        case unknown
    }

    /// The planned state of one object.
    package struct Entry: Sendable {
        /// Nil: the plan deletes it.
        package var state: ObjectMetadata?
        package var content: ContentKind
        /// Whether the object was in the real bucket before its first planned change.
        package var existed: Bool
        /// How many planned changes touch it (apply guards a later one by what the earlier one left).
        package var touches: Int
    }

    package init() throws(StorageError) {
        do {
            // "": a private temporary database, deleted when closed.
            connection = try SQLiteConnection(path: "", flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            try connection.execute(
                """
                PRAGMA cache_size = -\(Self.cacheKiB); PRAGMA synchronous = OFF; PRAGMA temp_store = FILE;
                CREATE TABLE changes (
                    id INTEGER PRIMARY KEY, step INTEGER NOT NULL, object TEXT NOT NULL, before BLOB, after BLOB,
                    content BLOB, origin TEXT, restores INTEGER, moves_from TEXT, moved_to TEXT);
                CREATE TABLE overlay (
                    name TEXT PRIMARY KEY, state BLOB, content INTEGER NOT NULL, content_change INTEGER,
                    existed INTEGER NOT NULL, touches INTEGER NOT NULL, landed BLOB, has_landed INTEGER NOT NULL DEFAULT 0)
                    WITHOUT ROWID;
                CREATE TABLE outcomes (
                    change INTEGER PRIMARY KEY, applied INTEGER NOT NULL, result BLOB, found INTEGER NOT NULL,
                    code TEXT, message TEXT);
                CREATE TABLE saved_overlays (
                    saved INTEGER NOT NULL, name TEXT NOT NULL, state BLOB, content INTEGER NOT NULL,
                    content_change INTEGER, PRIMARY KEY (saved, name)) WITHOUT ROWID;
                BEGIN;
                """)
        } catch {
            throw StorageError.internalError("Cannot make a plan's working file: \(error.message).")
        }
    }

    deinit { connection.close() }

    /// Runs `body` under the lock, turning SQLite failures into storage errors.
    private func locked<T>(_ body: () throws -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            return try body()
        } catch let error as StorageError {
            throw error
        } catch let error as SQLiteError {
            if error.isDiskFull {
                throw StorageError(
                    .unknown,
                    "The plan's working file filled the disk of the temporary directory (TMPDIR): \(error.message).")
            }
            throw StorageError.internalError("The plan's working file: \(error.message).")
        } catch let error as PackedReader.Malformed {
            throw StorageError.internalError("The plan's working file holds a damaged record (\(error)).")
        } catch {
            throw StorageError.internalError("\(error)")
        }
    }

    // MARK: Changes

    /// How many changes the plan holds (and numbers).
    package var count: Int { lock.withLock { changeCount } }

    /// How many changes of the bucket the plan holds, as every message counts them: a move (`mv`) is one, though the
    /// plan holds two changes for it (its object arriving, then its source leaving) that land in one step.
    package var countedChanges: Int { lock.withLock { changeCount - moveCount } }

    /// Adds a change after the others; returns its number.
    @discardableResult
    package func append(_ change: PlannedChange) throws(StorageError) -> Int {
        try locked { try insert(change, packedAfter: change.after?.packed) }
    }

    /// Adds a change after the others, and makes the state it leaves its object in that object's planned state
    /// (its content where `content` says); returns its number.
    @discardableResult
    package func plan(_ change: PlannedChange, content: ContentKind) throws(StorageError) -> Int {
        try locked {
            // Packed once: the change's `after` and the object's planned state are the same bytes.
            let packedAfter = change.after?.packed
            let index = try insert(change, packedAfter: packedAfter)
            let upsert = try connection.statement(
                """
                INSERT INTO overlay (name, state, content, content_change, existed, touches) VALUES (?1, ?2, ?3, ?4, ?5, 1)
                ON CONFLICT (name) DO UPDATE SET state = excluded.state, content = excluded.content,
                content_change = excluded.content_change, touches = touches + 1
                """)
            defer { upsert.reset() }
            upsert.bind(1, change.object)
            upsert.bind(2, bytes: packedAfter)
            Self.bind(content, upsert, at: 3)
            // Counts only on the object's first change.
            upsert.bind(5, Int64(change.before != nil ? 1 : 0))
            try upsert.step()
            return index
        }
    }

    /// Inserts a change (under the lock).
    private func insert(_ change: PlannedChange, packedAfter: [UInt8]?) throws -> Int {
        let insert = try connection.statement(
            "INSERT INTO changes (id, step, object, before, after, content, origin, restores, moves_from, moved_to) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        )
        defer { insert.reset() }
        let index = changeCount
        insert.bind(1, Int64(index))
        insert.bind(2, Int64(change.step))
        insert.bind(3, change.object)
        insert.bind(4, bytes: change.before?.packed)
        insert.bind(5, bytes: packedAfter)
        insert.bind(6, change.content)
        insert.bind(7, change.contentOrigin)
        switch change.restoresGeneration {
        case .number(let number)?: insert.bind(8, number)
        // Text, marked: a version id may be all digits.
        case .version(let id)?: insert.bind(8, Self.versionMark + id)
        case nil: insert.bind(8, nil as Int64?)
        }
        insert.bind(9, change.movesFrom)
        insert.bind(10, change.movedTo)
        try insert.step()
        if let source = change.source { sources[index] = source }
        changeCount += 1
        if change.movesFrom != nil { moveCount += 1 }
        return index
    }

    /// How the `restores` column marks an S3 version id, which it keeps as text beside Cloud Storage's numbers.
    static let versionMark = "version:"

    /// The generation a `restores` value names (a number's column text is its digits).
    static func generation(_ text: String) -> ObjectGeneration? {
        if text.hasPrefix(versionMark) { return .version(String(text.dropFirst(versionMark.count))) }
        return Int64(text).map { .number($0) }
    }

    /// Up to `limit` changes from number `start` on, in order.
    package func changes(from start: Int, limit: Int) throws(StorageError) -> [(index: Int, change: PlannedChange)] {
        try locked {
            let select = try connection.statement(
                "SELECT id, step, object, before, after, content, origin, restores, moves_from, moved_to FROM changes WHERE id >= ?1 ORDER BY id LIMIT ?2"
            )
            defer { select.reset() }
            select.bind(1, Int64(start))
            select.bind(2, Int64(limit))
            var found: [(Int, PlannedChange)] = []
            while try select.step() {
                let index = Int(select.int64(0))
                var change = PlannedChange(
                    object: select.string(2) ?? "", before: try Self.metadata(select, 3),
                    after: try Self.metadata(select, 4),
                    content: select.isNull(5) ? nil : select.data(5), source: sources[index], step: Int(select.int64(1))
                )
                change.contentOrigin = select.string(6)
                change.restoresGeneration = select.isNull(7) ? nil : Self.generation(select.string(7) ?? "")
                change.movesFrom = select.string(8)
                change.movedTo = select.string(9)
                found.append((index, change))
            }
            return found
        }
    }

    /// The change numbered `index`.
    package func change(_ index: Int) throws(StorageError) -> PlannedChange? {
        try changes(from: index, limit: 1).first { $0.index == index }?.change
    }

    /// Every change, in order, a batch at a time (a plan may not fit in memory).
    package func forEachChange(_ body: (Int, PlannedChange) throws -> Void) throws {
        var next = 0
        while true {
            let batch = try changes(from: next, limit: 1000)
            guard let last = batch.last else { return }
            for (index, change) in batch { try body(index, change) }
            next = last.index + 1
        }
    }

    /// The content a planned write sends, when the plan holds it.
    func plannedContent(ofChange index: Int) throws(StorageError) -> PlannedContent? {
        try locked {
            if let source = sources[index] { return .source(source) }
            let select = try connection.statement("SELECT content FROM changes WHERE id = ?1")
            defer { select.reset() }
            select.bind(1, Int64(index))
            guard try select.step(), !select.isNull(0) else { return nil }
            return .data(select.data(0))
        }
    }

    enum PlannedContent {
        case data(Data)
        case source(any ContentSource)
    }

    private static func metadata(_ statement: SQLiteStatement, _ column: Int32) throws -> ObjectMetadata? {
        guard !statement.isNull(column) else { return nil }
        let data = statement.data(column)
        return try data.withUnsafeBytes { buffer throws(PackedReader.Malformed) in try ObjectMetadata(packed: buffer) }
    }

    // MARK: The planned state of objects

    /// The planned state of `name`; nil when no change touched it.
    package func entry(_ name: String) throws(StorageError) -> Entry? {
        try locked {
            let select = try connection.statement(
                "SELECT state, content, content_change, existed, touches FROM overlay WHERE name = ?1")
            defer { select.reset() }
            select.bind(1, name)
            guard try select.step() else { return nil }
            return try Self.entry(select, from: 0)
        }
    }

    private static func entry(_ statement: SQLiteStatement, from column: Int32) throws -> Entry {
        Entry(
            state: try metadata(statement, column), content: contentKind(statement, column + 1),
            existed: statement.int64(column + 3) != 0, touches: Int(statement.int64(column + 4)))
    }

    private static func contentKind(_ statement: SQLiteStatement, _ column: Int32) -> ContentKind {
        switch statement.int64(column) {
        case 1: .planned(change: Int(statement.int64(column + 1)))
        case 2: .unknown
        default: .real
        }
    }

    private static func bind(_ kind: ContentKind, _ statement: SQLiteStatement, at index: Int32) {
        switch kind {
        case .real:
            statement.bind(index, Int64(0))
            statement.bind(index + 1, nil as Int64?)
        case .planned(let change):
            statement.bind(index, Int64(1))
            statement.bind(index + 1, Int64(change))
        case .unknown:
            statement.bind(index, Int64(2))
            statement.bind(index + 1, nil as Int64?)
        }
    }

    /// Forgets the planned state of `name`: it is the real bucket's again.
    package func forget(_ name: String) throws(StorageError) {
        try locked {
            let delete = try connection.statement("DELETE FROM overlay WHERE name = ?1")
            defer { delete.reset() }
            delete.bind(1, name)
            try delete.step()
        }
    }

    /// Planned states of names that start with `prefix`, after `after` and up to `through` (nil: no bound), in
    /// byte order, at most `limit`.
    package func entries(
        prefix: String, after: String?, through: String? = nil, limit: Int
    ) throws(StorageError) -> [(name: String, entry: Entry)] {
        try locked {
            // Names with the prefix are one run in byte order; the end is checked here, not in SQL (a prefix's
            // successor need not be valid UTF-8).
            // Each bound alone in its comparison, so that the name index bounds the walk at both ends (an `IS
            // NULL OR` form would make SQLite walk every earlier name on each page).
            let resumes = after.map { !NameBytes.precedes($0, prefix) } ?? false
            let select = try connection.statement(
                """
                SELECT name, state, content, content_change, existed, touches FROM overlay
                WHERE name \(resumes ? ">" : ">=") ?1 \(through == nil ? "" : "AND name <= ?3") ORDER BY name LIMIT ?2
                """)
            defer { select.reset() }
            select.bind(1, resumes ? after : prefix)
            select.bind(2, Int64(limit))
            if let through { select.bind(3, through) }
            var found: [(String, Entry)] = []
            while try select.step() {
                let name = select.string(0) ?? ""
                guard name.utf8.starts(with: prefix.utf8) else { break }
                found.append((name, try Self.entry(select, from: 1)))
            }
            return found
        }
    }

    /// Whether any planned change touches a name that starts with `prefix`.
    package func touches(prefix: String) throws(StorageError) -> Bool {
        !(try entries(prefix: prefix, after: nil, limit: 1).isEmpty)
    }

    /// How many objects the plan adds, less those it deletes, against the real bucket.
    package func objectCountChange() throws(StorageError) -> Int {
        try locked {
            let added =
                try connection.integer("SELECT count(*) FROM overlay WHERE state IS NOT NULL AND existed = 0") ?? 0
            let removed =
                try connection.integer("SELECT count(*) FROM overlay WHERE state IS NULL AND existed = 1") ?? 0
            return Int(added - removed)
        }
    }

    // MARK: Planned states saved with a planned snapshot

    /// Keeps the planned state of every object as it stands, under `saved`.
    package func saveEntries(as saved: Int) throws(StorageError) {
        try locked {
            let copy = try connection.statement(
                "INSERT INTO saved_overlays SELECT ?1, name, state, content, content_change FROM overlay")
            defer { copy.reset() }
            copy.bind(1, Int64(saved))
            try copy.step()
        }
    }

    package func dropSavedEntries(_ saved: Int) throws(StorageError) {
        try locked {
            let delete = try connection.statement("DELETE FROM saved_overlays WHERE saved = ?1")
            defer { delete.reset() }
            delete.bind(1, Int64(saved))
            try delete.step()
        }
    }

    /// Names either planned now or saved under `saved`, after `after`, at most `limit`, in byte order; with the
    /// saved state (nil: not planned then).
    package func namesPlannedNowOrSaved(
        _ saved: Int, after: String?, limit: Int
    ) throws(StorageError)
        -> [(name: String, then: (state: ObjectMetadata?, content: ContentKind)?)]
    {
        try locked {
            let select = try connection.statement(
                """
                SELECT n.name, s.name IS NOT NULL, s.state, s.content, s.content_change FROM
                (SELECT name FROM overlay UNION SELECT name FROM saved_overlays WHERE saved = ?1) n
                LEFT JOIN saved_overlays s ON s.saved = ?1 AND s.name = n.name
                WHERE ?2 IS NULL OR n.name > ?2 ORDER BY n.name LIMIT ?3
                """)
            defer { select.reset() }
            select.bind(1, Int64(saved))
            select.bind(2, after)
            select.bind(3, Int64(limit))
            var found: [(String, (ObjectMetadata?, ContentKind)?)] = []
            while try select.step() {
                let name = select.string(0) ?? ""
                found.append(
                    (name, select.int64(1) != 0 ? (try Self.metadata(select, 2), Self.contentKind(select, 3)) : nil))
            }
            return found
        }
    }

    // MARK: Savepoints

    /// Runs `body`; when it throws, the plan is as it was before (changes, planned states, saved ones).
    package func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value {
        let name = try locked { () -> String in
            savepointDepth += 1
            let name = "plan\(savepointDepth)"
            try connection.execute("SAVEPOINT \(name)")
            return name
        }
        let (countBefore, movesBefore) = lock.withLock { (changeCount, moveCount) }
        do {
            let value = try await body()
            try locked {
                try connection.execute("RELEASE \(name)")
                savepointDepth -= 1
            }
            return value
        } catch {
            try locked {
                try connection.execute("ROLLBACK TO \(name); RELEASE \(name)")
                savepointDepth -= 1
                (changeCount, moveCount) = (countBefore, movesBefore)
                sources = sources.filter { $0.key < countBefore }
            }
            throw error
        }
    }

    // MARK: Outcomes (apply)

    /// A change apply has still to send, and how many changes touch its object.
    package struct PendingChange: Sendable {
        package var index: Int
        package var change: PlannedChange
        package var touches: Int
    }

    /// Of the `limit` changes from number `start` on, those not applied yet, in order; and the number to read
    /// on from (nil: the plan ends here).
    package func pending(from start: Int, limit: Int) throws(StorageError) -> (changes: [PendingChange], next: Int?) {
        let batch = try changes(from: start, limit: limit)
        return try locked {
            let state = try connection.statement(
                "SELECT (SELECT applied FROM outcomes WHERE change = ?1), (SELECT touches FROM overlay WHERE name = ?2)"
            )
            defer { state.reset() }
            var found: [PendingChange] = []
            for (index, change) in batch {
                state.reset()
                state.bind(1, Int64(index))
                state.bind(2, change.object)
                _ = try state.step()
                if !state.isNull(0) && state.int64(0) == 1 { continue }
                found.append(
                    PendingChange(index: index, change: change, touches: state.isNull(1) ? 1 : Int(state.int64(1))))
            }
            return (found, batch.last.map { $0.index + 1 })
        }
    }

    /// What the last applied change of `object` left (`.some(nil)`: deleted it); nil when none has landed.
    package func landed(_ object: String) throws(StorageError) -> ObjectMetadata?? {
        try locked {
            let select = try connection.statement("SELECT landed FROM overlay WHERE name = ?1 AND has_landed = 1")
            defer { select.reset() }
            select.bind(1, object)
            guard try select.step() else { return nil }
            return .some(try Self.metadata(select, 0))
        }
    }

    /// Records what the applied change numbered `index` left, for a later change of its object to be guarded by;
    /// kept only for objects that more than one change touches.
    package func setLanded(ofChange index: Int, _ result: ObjectMetadata?) throws(StorageError) {
        try locked {
            let update = try connection.statement(
                "UPDATE overlay SET landed = ?2, has_landed = 1 WHERE name = (SELECT object FROM changes WHERE id = ?1) AND touches > 1"
            )
            defer { update.reset() }
            update.bind(1, Int64(index))
            update.bind(2, bytes: result?.packed)
            try update.step()
        }
    }

    /// What apply made of a change.
    package enum Outcome: Sendable {
        /// It landed, leaving the object as `result` (nil: deleted); `found` when a resumed run found it landed.
        case applied(result: ObjectMetadata?, found: Bool)
        case failed(StorageError)
    }

    package func record(_ outcome: Outcome, ofChange index: Int) throws(StorageError) {
        try locked {
            let insert = try connection.statement(
                "INSERT OR REPLACE INTO outcomes (change, applied, result, found, code, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            )
            defer { insert.reset() }
            insert.bind(1, Int64(index))
            switch outcome {
            case .applied(let result, let found):
                insert.bind(2, Int64(1))
                insert.bind(3, bytes: result?.packed)
                insert.bind(4, Int64(found ? 1 : 0))
            case .failed(let error):
                insert.bind(2, Int64(0))
                insert.bind(4, Int64(0))
                insert.bind(5, error.code.name)
                insert.bind(6, error.message)
            }
            try insert.step()
        }
    }

    /// The state an applied change left (`.some(nil)`: deleted); nil when it was not applied.
    package func appliedResult(ofChange index: Int) throws(StorageError) -> ObjectMetadata?? {
        try locked {
            let select = try connection.statement("SELECT result FROM outcomes WHERE change = ?1 AND applied = 1")
            defer { select.reset() }
            select.bind(1, Int64(index))
            guard try select.step() else { return nil }
            return .some(try Self.metadata(select, 0))
        }
    }

    /// How many changes were applied and how many failed (in this run or the runs it resumes), counted as
    /// `countedChanges` counts them: a move by its source's change, which lands last (a move copied and not deleted,
    /// on a bucket that moves in two steps, failed).
    package func outcomeCounts() throws(StorageError) -> (applied: Int, failed: Int) {
        try locked {
            func count(applied: Bool) throws -> Int64 {
                // Without moves, the outcomes alone: a plan of millions of changes is not joined to count them.
                guard moveCount > 0 else {
                    return try connection.integer("SELECT count(*) FROM outcomes WHERE applied = \(applied ? 1 : 0)")
                        ?? 0
                }
                return try connection.integer(
                    """
                    SELECT count(*) FROM outcomes o JOIN changes c ON c.id = o.change
                    WHERE o.applied = \(applied ? 1 : 0) AND c.moves_from IS NULL
                    """) ?? 0
            }
            return (Int(try count(applied: true)), Int(try count(applied: false)))
        }
    }

    /// What became of the changes of each step (the statement that planned them), in step order: how many were
    /// planned, applied and failed (a move counted once, as `outcomeCounts` counts it); the first `limit` steps, and
    /// how many steps the plan has in all.
    package func outcomesByStep(limit: Int) throws(StorageError) -> (steps: [StepOutcome], stepCount: Int) {
        try locked {
            let select = try connection.statement(
                """
                SELECT c.step, count(*), count(CASE WHEN o.applied = 1 THEN 1 END), count(CASE WHEN o.applied = 0 THEN 1 END)
                FROM changes c LEFT JOIN outcomes o ON o.change = c.id WHERE c.moves_from IS NULL GROUP BY c.step ORDER BY c.step
                """)
            defer { select.reset() }
            var steps: [StepOutcome] = []
            var stepCount = 0
            while try select.step() {
                stepCount += 1
                if steps.count < limit {
                    steps.append(
                        StepOutcome(
                            step: Int(select.int64(0)), planned: Int(select.int64(1)), applied: Int(select.int64(2)),
                            failed: Int(select.int64(3))))
                }
            }
            return (steps, stepCount)
        }
    }

    /// What became of one step's changes.
    package struct StepOutcome: Sendable, Equatable {
        package var step: Int
        package var planned: Int
        package var applied: Int
        package var failed: Int
    }

    /// Forgets failures (a resumed run tries those changes again).
    package func forgetFailures() throws(StorageError) {
        try locked { try connection.execute("DELETE FROM outcomes WHERE applied = 0") }
    }

    /// For undo: each object applied changes touched, newest last change first, with the state before its first
    /// applied change, the state its last one left, and the other object of a move among them (`mv`), if any.
    package func appliedObjects(
        _ body: (_ object: String, _ before: ObjectMetadata?, _ result: ObjectMetadata?, _ movedWith: String?) throws ->
            Void
    ) throws {
        try locked { try connection.execute("CREATE INDEX IF NOT EXISTS changes_object ON changes (object, id)") }
        var afterLast: Int64 = .max
        while true {
            // A batch at a time, newest first, by each object's last applied change.
            let batch: [(String, ObjectMetadata?, ObjectMetadata?, Int64, String?)] = try locked {
                let select = try connection.statement(
                    """
                    SELECT c.object, min(c.id), max(c.id) AS last, max(coalesce(c.moves_from, c.moved_to))
                    FROM changes c JOIN outcomes o ON o.change = c.id AND o.applied = 1
                    GROUP BY c.object HAVING last < ?1 ORDER BY last DESC LIMIT 1000
                    """)
                defer { select.reset() }
                select.bind(1, afterLast)
                var rows: [(String, Int64, Int64, String?)] = []
                while try select.step() {
                    rows.append((select.string(0) ?? "", select.int64(1), select.int64(2), select.string(3)))
                }
                return try rows.map { object, first, last, movedWith in
                    let before = try connection.statement("SELECT before FROM changes WHERE id = ?1")
                    before.bind(1, first)
                    _ = try before.step()
                    let old = try Self.metadata(before, 0)
                    before.reset()
                    let result = try connection.statement("SELECT result FROM outcomes WHERE change = ?1")
                    result.bind(1, last)
                    _ = try result.step()
                    let now = try Self.metadata(result, 0)
                    result.reset()
                    return (object, old, now, last, movedWith)
                }
            }
            guard let last = batch.last?.3 else { return }
            for (object, before, result, _, movedWith) in batch { try body(object, before, result, movedWith) }
            afterLast = last
        }
    }

    /// What the applied changes of `object` did (as `appliedObjects` gives each object): the state before the first,
    /// the state the last left, and the other object of a move among them; nil when none of its changes was applied.
    package func appliedObject(
        _ object: String
    ) throws(StorageError) -> (before: ObjectMetadata?, result: ObjectMetadata?, movedWith: String?)? {
        try locked {
            let select = try connection.statement(
                """
                SELECT min(c.id), max(c.id), max(coalesce(c.moves_from, c.moved_to)), count(*)
                FROM changes c JOIN outcomes o ON o.change = c.id AND o.applied = 1 WHERE c.object = ?1
                """)
            defer { select.reset() }
            select.bind(1, object)
            guard try select.step(), select.int64(3) > 0 else { return nil }
            let (first, last, movedWith) = (select.int64(0), select.int64(1), select.string(2))
            let before = try connection.statement("SELECT before FROM changes WHERE id = ?1")
            defer { before.reset() }
            before.bind(1, first)
            _ = try before.step()
            let result = try connection.statement("SELECT result FROM outcomes WHERE change = ?1")
            defer { result.reset() }
            result.bind(1, last)
            _ = try result.step()
            return (try Self.metadata(before, 0), try Self.metadata(result, 0), movedWith)
        }
    }

    /// The first `limit` failures, in change order.
    package func failures(limit: Int) throws(StorageError) -> [(index: Int, error: StorageError)] {
        try locked {
            let select = try connection.statement(
                "SELECT change, code, message FROM outcomes WHERE applied = 0 ORDER BY change LIMIT ?1")
            defer { select.reset() }
            select.bind(1, Int64(limit))
            var found: [(Int, StorageError)] = []
            while try select.step() {
                let code = StorageErrorCode(rawValue: select.string(1) ?? "") ?? .unknown
                found.append((Int(select.int64(0)), StorageError(code, select.string(2) ?? "")))
            }
            return found
        }
    }

    /// Whether any failure has one of these codes.
    package func hasFailures(where matches: (StorageErrorCode) -> Bool) throws(StorageError) -> Bool {
        try locked {
            let select = try connection.statement("SELECT DISTINCT code FROM outcomes WHERE applied = 0")
            defer { select.reset() }
            while try select.step() {
                if matches(StorageErrorCode(rawValue: select.string(0) ?? "") ?? .unknown) { return true }
            }
            return false
        }
    }
}
