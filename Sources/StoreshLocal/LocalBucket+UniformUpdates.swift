import Foundation
import StoreshCore
import StoreshSQLite

/// A uniform update (`meta set … -- users/**`) a page of rows at a time. Each row picked is rewritten from its own
/// column bytes: merged by the rules' own code (`MetadataUpdate.merge(into:)`, as `ObjectMetadata.applying` is) over
/// the row's columns, the update's properties bound as they are, the new custom map written in the column's form,
/// the row checksum computed over the new columns. No object's metadata is built, compared or encoded, which is
/// where a bulk edit of a million objects spent most of its time.
///
/// A row whose bytes alone cannot take the update takes the whole way instead (`storeMetadata`, as
/// `updateMetadata` does): a row a snapshot sees (its version is kept first), an update of Cloud Storage's own
/// fields or one that clears the custom map, a merge the rules refuse (rule M5's limits and spellings, refused with
/// that rule's message by the whole way), a custom map that cannot be read (damage, which the whole way reports), a
/// metageneration at its largest (refused there). Each object picked takes one change time from the clock, in byte
/// order, as a call of `updateMetadata` per object would.
extension LocalBucket: UniformUpdates {
    public func updatePage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try visitPage(prefix: prefix, after: after, limit: limit, update, writing: true, picking: picking)
    }

    /// The outcomes `updatePage` would have, decided by the same visit of the same rows (`VisitedPage`), with nothing
    /// written: a dry run of a uniform update at the cost of the update's reads and decisions, not of a plan of
    /// every object (issue 55).
    public func previewPage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try visitPage(prefix: prefix, after: after, limit: limit, update, writing: false, picking: picking)
    }

    private func visitPage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, writing: Bool,
        picking: (String) throws -> Bool
    ) throws(StorageError) -> UniformUpdatePage {
        // A change of storage class makes a new generation of each object (rule M9), which a row update does not.
        guard update.cloudStorage.storageClass == nil else {
            throw StorageError.internalError(
                "A change of storage class is a rewrite of each object; it is not made as a page update.")
        }
        return try updateRows(
            prefix: prefix, after: after, limit: limit, RowUpdate(update), writing: writing, picking: picking)
    }

    /// The page's names found first (through the name index alone); then one statement over them visits each row,
    /// decides it and writes it (`VisitedPage`). One change (inside a transaction, a savepoint), so a page lands
    /// whole or not at all. Reading the page apart from writing it walked every row twice. Not `writing` (a
    /// preview), the visit is the condition of a `SELECT`, in a read: each row decided as the update would, none
    /// written.
    func updateRows(
        prefix: String, after: String?, limit: Int, _ update: RowUpdate, writing: Bool, picking: (String) throws -> Bool
    ) throws(StorageError) -> UniformUpdatePage {
        let visitAndWrite = { () throws -> UniformUpdatePage in
            guard let bounds = try self.pageBounds(prefix: prefix, after: after, limit: limit) else {
                return UniformUpdatePage(outcomes: [], resumeAfter: nil)
            }
            let epochs = try self.rows.epochs()
            // Asked for before the statements are prepared, which name them.
            let visits = try self.connection.function(VisitedPage.visits, arguments: RowColumns.count)
            let picks = try self.connection.function(VisitedPage.picks, arguments: 2)
            let columns = try self.connection.function(VisitedPage.columns, arguments: 2)
            return try withoutActuallyEscaping(picking) { picking in
                let page = VisitedPage(
                    update, epochs: epochs, bucket: self.name, clock: self.options.clock, picking: picking)
                let result = {
                    UniformUpdatePage(
                        outcomes: page.outcomes, resumeAfter: bounds.more && !page.failed ? bounds.last : nil)
                }
                guard writing else {
                    try self.rewrite(
                        VisitedPage.previewing, over: bounds, born: nil, of: nil, function: visits, page.visit, columns,
                        page)
                    return result()
                }
                try self.rewrite(
                    update.visitingStatement, over: bounds, born: nil, of: update, function: visits, page.visit,
                    columns, page)
                // The rows whose `born` changes (which also rewrites the `born` index), left by the visit.
                if page.bornChanges {
                    try self.rewrite(
                        update.rewriteWithBorn, over: bounds, born: epochs.current, of: update, function: picks,
                        page.pick, columns, page)
                    if let missed = page.firstUnwritten {
                        throw StorageError.internalError(
                            "The row of \(missed.debugDescription) changed while it was being updated; nothing was changed."
                        )
                    }
                }
                // Rows are written apart from one another: the kinds in any order.
                for (row, next) in page.wholeWrites { try self.rows.storeMetadata(next, over: row) }
                return result()
            }
        }
        return writing ? try change(.anyOrder, visitAndWrite) : try read(visitAndWrite)
    }

    /// The first and last names of the page of at most `limit` names under `prefix` after `after`, and whether
    /// more follow it; nil for an empty page. Every name between two names under a prefix is under it too.
    private func pageBounds(
        prefix: String, after: String?, limit: Int
    ) throws -> (first: String, last: String, more: Bool)? {
        let statement = try rows.pageRows(prefix: prefix, after: after, limit: limit, columns: "name")
        defer { statement.reset() }
        var first: String?
        // The last name so far, as bytes: copied as the walk passes it, made a string once.
        var last: [UInt8] = []
        var count = 0
        var more = false
        while try statement.step() {
            guard let name = statement.bytes(0), NameBytes.starts(name, with: prefix) else { break }
            if count == limit {
                more = true
                break
            }
            count += 1
            if first == nil { first = String(decoding: name, as: UTF8.self) }
            last.removeAll(keepingCapacity: true)
            last.append(bytes: name)
        }
        guard let first else { return nil }
        return (first, String(decoding: last, as: UTF8.self), more)
    }

    /// Steps `sql` (an UPDATE over the page's names, or a preview's SELECT) while `function` answers `body` and the
    /// column function answers the page's rewritten columns; `update`'s values are bound when it writes them.
    private func rewrite(
        _ sql: String, over bounds: (first: String, last: String, more: Bool), born: Int64?, of update: RowUpdate?,
        function: SQLiteFunction, _ body: @escaping (SQLiteFunctionCall) -> Void, _ columns: SQLiteFunction,
        _ page: VisitedPage
    ) throws {
        let statement = try connection.statement(sql)
        defer { statement.reset() }
        statement.bind(1, bounds.first)
        statement.bind(2, bounds.last)
        if let born { statement.bind(3, born) }
        for (offset, property) in (update?.properties ?? []).enumerated() {
            statement.bind(Int32(4 + offset), property.value)
        }
        do {
            _ = try function.answering(body) { try columns.answering(page.column) { try statement.step() } }
        } catch {
            // What the page's functions met (a damaged row, a failed pick) is the failure, not the statement's
            // "failed" that reported it.
            throw page.failure ?? error
        }
    }
}

/// A page of a uniform update as the statements that write it see it, through their SQL functions:
/// - `storesh_updates_row(<RowStore.LiveRow.columns>)` is the condition of the statement over the page's names. It visits
///   each row in byte order of the names and decides it as `updateMetadata` would: its checksum verified, picked
///   or not, one change time per row picked, the rewrite made from the row's bytes (`RowUpdate.rewrite`) or the
///   whole way (`wholeWrites`, written after). It is 1 for a row that statement writes: rewritten, its `born`
///   kept. After a row that fails (rule M5) it is 0, and takes no more change times.
/// - `storesh_rewrites_row(id, checksum)` is the condition of the statement that writes the rewritten rows
///   whose `born` changes, if any: 1 for each such row still as visited (its checksum), once.
/// - `storesh_rewritten(id, column)` is a rewritten row's new column (`Column`).
///
/// Rows are looked for where the last one was found, then by their id (SQLite most often sets a row's columns
/// just after its condition, but may decide every row first).
final class VisitedPage {
    static let visits = "storesh_updates_row"
    static let picks = "storesh_rewrites_row"
    static let columns = "storesh_rewritten"

    enum Column: Int64 {
        case metageneration, updated, checksum, custom

        /// The column's name in the `objects` table.
        var name: String {
            switch self {
            case .metageneration: "metageneration"
            case .updated: "updated"
            case .checksum: "checksum"
            case .custom: "custom_metadata"
            }
        }

        /// The SQL that sets the column to its value for the row.
        var assignment: String { "\(name) = \(VisitedPage.columns)(id, \(rawValue))" }
    }

    /// The condition of the statement that visits the page (?1 and ?2: its first and last names).
    static let visiting = "name >= ?1 AND name <= ?2 AND \(visits)(\(RowStore.LiveRow.columns))"
    /// A preview's statement: the visit alone, each row decided and none written.
    static let previewing = "SELECT count(*) FROM objects WHERE \(visiting)"
    /// The condition of the statement that writes the rows whose `born` changes.
    static let bornChanging = "name >= ?1 AND name <= ?2 AND \(picks)(id, checksum)"

    private let update: RowUpdate
    private let epochs: RowStore.Epochs
    private let bucket: String
    private let clock: any StorageClock
    private let picking: (String) throws -> Bool

    // The state below is unchecked for exclusive access at run time (the checks were 7% of a million-row edit's
    // instructions). Safe because only this page's own methods touch it, SQLite calls them one at a time on its
    // statement's thread, and none calls another while it mutates a property: `picking` is the session's closure,
    // which cannot reach the page.

    /// Each picked row's outcome, in byte order of the names.
    @exclusivity(unchecked) private(set) var outcomes: [UniformUpdateOutcome] = []
    /// The rows that take the whole way, with what they become.
    @exclusivity(unchecked) private(set) var wholeWrites: [(row: RowStore.LiveRow, next: ObjectMetadata)] = []
    /// A picked row failed its update: the page ends with it.
    @exclusivity(unchecked) private(set) var failed = false
    /// What stopped the visit, reported by the statement as a failure: a damaged row, a pick that threw.
    @exclusivity(unchecked) private(set) var failure: (any Error)?
    @exclusivity(unchecked) private var rewrites: [RowRewrite] = []
    /// Whether each rewrite is written: by the visit (its `born` kept), or by the second statement.
    @exclusivity(unchecked) private var written: [Bool] = []
    @exclusivity(unchecked) private var customBytes = PackedWriter()
    @exclusivity(unchecked) private var differences = SharedDifferences()
    /// The last visited name's bytes (a buffer used again for every row).
    @exclusivity(unchecked) private var previous: [UInt8] = []
    @exclusivity(unchecked) private var lastPosition = -1
    /// The rewrites' positions by id, of the first `indexed` rewrites.
    @exclusivity(unchecked) private var positions: [Int64: Int] = [:]
    @exclusivity(unchecked) private var indexed = 0

    init(
        _ update: RowUpdate, epochs: RowStore.Epochs, bucket: String, clock: any StorageClock,
        picking: @escaping (String) throws -> Bool
    ) {
        self.update = update
        self.epochs = epochs
        self.bucket = bucket
        self.clock = clock
        self.picking = picking
        outcomes.reserveCapacity(1024)
        rewrites.reserveCapacity(1024)
        written.reserveCapacity(1024)
    }

    /// Whether some rewritten rows wait for the statement that changes their `born`.
    var bornChanges: Bool { written.contains(false) }

    /// The first rewritten row not written, if any.
    var firstUnwritten: String? { written.firstIndex(of: false).map { rewrites[$0].name } }

    func visit(_ row: SQLiteFunctionCall) {
        guard failure == nil, !failed else { return row.result(0) }
        do {
            row.result(try decide(row) ? 1 : 0)
        } catch {
            failure = error
            row.fail("\(Self.visits): the page's update stopped")
        }
    }

    /// Decides one row: true when the visiting statement writes it.
    private func decide(_ row: SQLiteFunctionCall) throws -> Bool {
        guard let nameBytes = row.bytes(RowColumns.name) else { throw ChecksumMismatch(what: "object with no name") }
        // The outcomes and the change times follow the names' order, which the name index gives.
        if !previous.isEmpty {
            guard previous.withUnsafeBytes({ NameBytes.precedes($0, nameBytes) }) else {
                throw StorageError.internalError(
                    "A uniform update met the rows of a page out of the order of their names; nothing was changed.")
            }
        }
        previous.removeAll(keepingCapacity: true)
        previous.append(bytes: nameBytes)
        let name = String(decoding: nameBytes, as: UTF8.self)
        guard RowColumns.Stored(row: row).isChecksummed(by: row.int64(RowColumns.checksum)) else {
            throw ChecksumMismatch(what: "object \(name.debugDescription)")
        }
        guard try picking(name) else { return false }
        let now = clock.nextChangeTime()
        let snapshotted = epochs.newestSnapshot.map { row.int64(RowColumns.born) <= $0 } ?? false
        if !snapshotted,
            let rewrite = update.rewrite(
                row, name: name, now: now, born: epochs.current,
                customBytes: &customBytes, differences: &differences)
        {
            guard let rewrite else {
                outcomes.append(.unchanged(name))
                return false
            }
            outcomes.append(.updated(name, differences.last))
            rewrites.append(rewrite)
            written.append(!rewrite.bornChanges)
            return !rewrite.bornChanges
        }
        // Decided now, so that a failure ends the page before a later row takes a change time.
        let whole = try RowStore.LiveRow(row, bucket: bucket)
        do throws(StorageError) {
            let next = try whole.metadata.applying(update.update, now: now)
            guard next.changed else {
                outcomes.append(.unchanged(name))
                return false
            }
            outcomes.append(.updated(name, whole.metadata.differences(to: next.metadata)))
            wholeWrites.append((whole, next.metadata))
        } catch {
            outcomes.append(.failed(name, error))
            failed = true
        }
        return false
    }

    func pick(_ call: SQLiteFunctionCall) {
        guard let position = position(of: call.int64(0)), !written[position],
            rewrites[position].checksumBefore == call.int64(1)
        else { return call.result(0) }
        written[position] = true
        call.result(1)
    }

    func column(_ call: SQLiteFunctionCall) {
        guard let position = position(of: call.int64(0)), let column = Column(rawValue: call.int64(1)) else {
            return call.fail("\(Self.columns): not a row or a column of the page being written")
        }
        switch column {
        case .metageneration: call.result(rewrites[position].metageneration)
        case .updated: call.result(rewrites[position].updated)
        case .checksum: call.result(rewrites[position].checksum)
        case .custom:
            guard let range = rewrites[position].custom else { return call.result(blob: nil) }
            customBytes.bytes.withUnsafeBytes { call.result(blob: UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    private func position(of id: Int64) -> Int? {
        if lastPosition >= 0, lastPosition < rewrites.count, rewrites[lastPosition].id == id { return lastPosition }
        let next = lastPosition + 1
        if next < rewrites.count, rewrites[next].id == id {
            lastPosition = next
            return next
        }
        // The rows added since the last miss are indexed now: each row once, however the misses fall (a page whose
        // rows' `born` changes every other row misses at every row written).
        while indexed < rewrites.count {
            positions[rewrites[indexed].id] = indexed
            indexed += 1
        }
        guard let found = positions[id] else { return nil }
        lastPosition = found
        return found
    }
}

/// The columns of a row read by `RowStore.LiveRow.columns`, by position.
enum RowColumns {
    static let name: Int32 = 0
    static let generation: Int32 = 1
    static let metageneration: Int32 = 2
    static let size: Int32 = 3
    static let timeCreated: Int32 = 4
    static let updated: Int32 = 5
    static let md5Hash: Int32 = 6
    /// The first of the five writable properties, in `StoredVersion.propertyColumns`' order.
    static let firstProperty: Int32 = 7
    static let custom: Int32 = 12
    static let contentID: Int32 = 13
    static let born: Int32 = 14
    /// Cloud Storage's own fields (rule M9), NULL when none.
    static let service: Int32 = 15
    /// After the version's columns (`StoredVersion.columnCount`), as `RowStore.LiveRow` reads them.
    static let checksum: Int32 = StoredVersion.columnCount
    static let id: Int32 = StoredVersion.columnCount + 1
    /// How many there are.
    static let count: Int32 = id + 1

    /// A row's values as they are stored, from its bytes, as its checksum reads them (`StoredVersion.Values`).
    struct Stored<Row: SQLiteRow>: ChecksummedRow {
        var row: Row

        func add(to checksum: inout some RowChecksumming) {
            checksum.add(row.bytes(name))
            for column in generation...updated { checksum.add(row.int64(column)) }
            checksum.add(row.bytes(md5Hash))
            for column in firstProperty..<custom { checksum.add(row.bytes(column)) }
            checksum.add(row.bytes(custom))
            checksum.add(row.int64(contentID))
            checksum.add(row.int64(born))
            if let fields = row.bytes(service) { checksum.add(fields) }
        }
    }
}

/// A row rewritten by a uniform update: its new columns, besides the update's properties (the same for every row).
struct RowRewrite {
    var name: String
    var id: Int64
    /// The row's checksum as visited: a row whose `born` changes is written, by the second statement, only if it
    /// still has it.
    var checksumBefore: Int64
    var metageneration: Int64
    var updated: Int64
    /// Whether the row's `born` is not the bucket's current epoch, which it takes.
    var bornChanges: Bool
    /// The new custom map's bytes in the page's buffer; nil for none (NULL). Unused when the update names no key.
    var custom: Range<Int>?
    var checksum: Int64
}

/// The differences of the rows of a page, as `ObjectMetadata.differences(to:)` gives them. A bulk edit most often
/// makes one of a few changes to every object, so a row's differences are compared, as they are found, with the last
/// few distinct ones kept: a row that makes one of them shares its array, and only a new one makes strings and an
/// array. (The summary by change then counts the others by the identity of their buffers.)
///
/// Each difference comes from a *slot* of the update (a property or a custom key it names), which fixes its key and
/// new value for the whole page: two differences of the same slot are the same when their old values' bytes are.
struct SharedDifferences {
    private struct Known {
        var differences: [PropertyDifference]
        var slots: [Int]
        /// The row that last made them.
        var row: Int
    }

    /// The differences of the last row that ended.
    private(set) var last: [PropertyDifference] = []
    private var recent: [Known] = []
    static let recentKept = 4
    private var rows = 0
    /// The row's slots so far.
    private var slots: [Int] = []
    /// Which of `recent` start with the row's differences so far (a bit each).
    private var matching: UInt8 = 0
    /// Once none does: the row's differences.
    private var made: [PropertyDifference]?

    var isEmpty: Bool { slots.isEmpty }

    mutating func begin() {
        slots.removeAll(keepingCapacity: true)
        matching = UInt8((1 << recent.count) - 1)
        made = recent.isEmpty ? [] : nil
    }

    /// Adds the difference of update slot `slot`: its key, the stored value's bytes (nil: none), and the value it
    /// takes (nil: none).
    mutating func append(slot: Int, key: String, old: UnsafeRawBufferPointer?, new: String?) {
        let count = slots.count
        slots.append(slot)
        if made == nil {
            var still: UInt8 = 0
            for index in recent.indices where matching & (1 << index) != 0 {
                if count < recent[index].slots.count, recent[index].slots[count] == slot,
                    NameBytes.sameBytes(recent[index].differences[count].old, old)
                {
                    still |= 1 << index
                }
            }
            if still == 0 { make(count) } else { matching = still }
        }
        if made != nil {
            made!.append(PropertyDifference(key: key, old: old.map { String(decoding: $0, as: UTF8.self) }, new: new))
        }
    }

    /// Ends the row: `last` is its differences.
    mutating func end() {
        rows += 1
        let count = slots.count
        if made == nil,
            let index = recent.indices.first(where: { matching & (1 << $0) != 0 && recent[$0].slots.count == count })
        {
            recent[index].row = rows
            last = recent[index].differences
            return
        }
        if made == nil { make(count) }
        last = made ?? []
        made = nil
        let known = Known(differences: last, slots: slots, row: rows)
        if recent.count < Self.recentKept {
            recent.append(known)
        } else if let oldest = recent.indices.min(by: { recent[$0].row < recent[$1].row }) {
            recent[oldest] = known
        }
    }

    /// The row's first `count` differences as an array of their own: the start of one of `recent` that they match.
    private mutating func make(_ count: Int) {
        guard count > 0, let index = recent.indices.first(where: { matching & (1 << $0) != 0 }) else {
            made = []
            return
        }
        made = Array(recent[index].differences[..<count])
    }
}

/// A metadata update in the form a row takes it: what the page's statements bind and set, and the rewrite of one
/// row, merged by `MetadataUpdate.merge(into:)` (rules M4, M5) over the row's column bytes (`RowMerge`) and stamped
/// by rule M6's `ObjectMetadata.metageneration(after:)`, as `ObjectMetadata.applying` merges and stamps an object's
/// metadata: the rules are that code, once, and this only reads and writes rows.
struct RowUpdate {
    let update: MetadataUpdate
    /// The update ready to merge, once for every row.
    let merging: MetadataMerge
    /// The properties it names, in rule M1's order (which is the columns' order): each one's column and new value.
    let properties: [(property: WritableProperty, column: Int32, value: String?)]
    /// A writable property's column (of five: a look along them costs less than hashing).
    static func column(of property: WritableProperty) -> Int32? {
        StoredVersion.propertyColumns.firstIndex { $0.property == property }.map {
            RowColumns.firstProperty + Int32($0)
        }
    }
    /// How a difference names each custom key the update names, in byte order of the keys.
    let differenceKeys: [String]
    /// Every row takes the whole way: an update of Cloud Storage's own fields (rule M9, kept in one column as a
    /// whole), or one that clears the custom map (its differences name keys the update does not).
    let wholeWayOnly: Bool
    /// The statement that visits a page's rows and writes those whose `born` stays (`VisitedPage`).
    let visitingStatement: String
    /// The statement that writes the rewritten rows whose `born` changes.
    let rewriteWithBorn: String

    /// Whether the update names custom keys, and so writes the custom map's column.
    var namesCustomKeys: Bool { !differenceKeys.isEmpty }

    init(_ update: MetadataUpdate) {
        self.update = update
        merging = MetadataMerge(update)
        properties = merging.properties.compactMap { named in
            Self.column(of: named.property).map { (named.property, $0, named.value) }
        }
        differenceKeys = update.customMetadata.keys.map { "custom.\($0)" }
        wholeWayOnly = update.clearsCustomMetadata || !update.cloudStorage.isEmpty
        // ?1 and ?2: the page's first and last names; ?3: the new `born`; then the properties' values.
        var columns = [VisitedPage.Column.metageneration, .updated, .checksum].map(\.assignment)
        columns += properties.enumerated().map { offset, property in
            "\(StoredVersion.propertyColumns[Int(property.column - RowColumns.firstProperty)].column) = ?\(4 + offset)"
        }
        if !differenceKeys.isEmpty { columns.append(VisitedPage.Column.custom.assignment) }
        let set = columns.joined(separator: ", ")
        visitingStatement = "UPDATE objects SET \(set) WHERE \(VisitedPage.visiting)"
        rewriteWithBorn = "UPDATE objects SET \(set), born = ?3 WHERE \(VisitedPage.bornChanging)"
    }

    /// The row's rewrite, its new custom map appended to `customBytes` and its differences made in `differences`;
    /// `.some(nil)` when the update changes nothing in it, nil when the row must take the whole way (which then
    /// gives the outcome: a refusal by rule M5, a damaged row).
    func rewrite(
        _ row: some SQLiteRow, name: String, now: Timestamp, born: Int64,
        customBytes: inout PackedWriter, differences: inout SharedDifferences
    ) -> RowRewrite?? {
        guard !wholeWayOnly else { return nil }
        let customBefore = row.bytes(RowColumns.custom)
        var merge = RowMerge(row: row, custom: customBefore, differenceKeys: differenceKeys)
        // The page's buffers, lent to the merge while it runs (swapped, not copied).
        swap(&merge.customBytes, &customBytes)
        swap(&merge.differences, &differences)
        defer {
            swap(&merge.customBytes, &customBytes)
            swap(&merge.differences, &differences)
        }
        let start = merge.customBytes.count
        merge.differences.begin()
        do throws(MetadataMergeFailure) {
            guard try merging.merge(into: &merge) else {
                merge.customBytes.removeBytes(from: start)
                return .some(nil)
            }
        } catch {
            merge.customBytes.removeBytes(from: start)
            return nil
        }
        guard !merge.wholeWay,
            let metageneration = try? ObjectMetadata.metageneration(after: row.int64(RowColumns.metageneration))
        else {
            merge.customBytes.removeBytes(from: start)
            return nil
        }
        merge.differences.end()
        var rewrite = RowRewrite(
            name: name, id: row.int64(RowColumns.id), checksumBefore: row.int64(RowColumns.checksum),
            metageneration: metageneration, updated: now.microseconds,
            bornChanges: born != row.int64(RowColumns.born), custom: nil, checksum: 0)
        if namesCustomKeys && !merge.customChanged {
            // Unchanged: written back as it was (the statement sets the column when the update names a key).
            merge.customBytes.removeBytes(from: start)
            if let customBefore { merge.customBytes.raw(customBefore) }
        }
        if namesCustomKeys, merge.customBytes.count > start { rewrite.custom = start..<merge.customBytes.count }
        // The new row's values in `StoredVersion.Values`' order.
        var checksum = RowChecksum()
        checksum.add(row.bytes(RowColumns.name))
        checksum.add(row.int64(RowColumns.generation))
        checksum.add(metageneration)
        checksum.add(row.int64(RowColumns.size))
        checksum.add(row.int64(RowColumns.timeCreated))
        checksum.add(rewrite.updated)
        checksum.add(row.bytes(RowColumns.md5Hash))
        // A property the update names has its value after the merge (changed, or the same bytes already), which the
        // statement binds; the others keep theirs.
        var named = properties.makeIterator()
        var next = named.next()
        for column in RowColumns.firstProperty..<RowColumns.custom {
            if let property = next, property.column == column {
                checksum.add(property.value)
                next = named.next()
            } else {
                checksum.add(row.bytes(column))
            }
        }
        if let custom = rewrite.custom {
            merge.customBytes.bytes.withUnsafeBytes { checksum.add(UnsafeRawBufferPointer(rebasing: $0[custom])) }
        } else if namesCustomKeys {
            checksum.add(nil as UnsafeRawBufferPointer?)
        } else {
            checksum.add(customBefore)
        }
        checksum.add(row.int64(RowColumns.contentID))
        checksum.add(born)
        // Unchanged by a uniform update (an update of these fields takes the whole way).
        if let fields = row.bytes(RowColumns.service) { checksum.add(fields) }
        rewrite.checksum = checksum.value
        return rewrite
    }
}

/// A stored row as an update's merge target (`MetadataMergeTarget`): its properties and custom map read from its
/// columns' bytes, the custom map it is left with written in the column's form (`CustomMetadataColumn`) to the
/// page's buffer, and each change made a difference of the page's (`SharedDifferences`), slot by slot: a property's
/// column, or -1 - the index of a custom key the update names.
struct RowMerge<Row: SQLiteRow>: MetadataMergeTarget {
    let row: Row
    /// `RowUpdate`'s: the update's custom keys as differences name them; whether there are any.
    private let differenceKeys: [String]
    private let namesCustomKeys: Bool
    private var reader: PackedReader
    var customBytes = PackedWriter()
    var differences = SharedDifferences()
    private(set) var customChanged = false
    /// The merge made something a row's slots cannot say (a key removed by clearing the map).
    private(set) var wholeWay = false

    /// The stored custom map's bytes.
    private let stored: UnsafeRawBufferPointer

    init(row: Row, custom: UnsafeRawBufferPointer?, differenceKeys: [String]) {
        self.row = row
        self.differenceKeys = differenceKeys
        namesCustomKeys = !differenceKeys.isEmpty
        stored = custom ?? UnsafeRawBufferPointer(start: nil, count: 0)
        reader = PackedReader(stored)
    }

    mutating func rewindCustomEntries() { reader = PackedReader(stored) }

    func value(of property: WritableProperty) -> UnsafeRawBufferPointer? {
        RowUpdate.column(of: property).flatMap { row.bytes($0) }
    }

    mutating func nextCustomEntry() throws(MetadataMergeFailure) -> (
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer
    )? {
        guard !reader.isAtEnd else { return nil }
        do {
            return (try reader.stringBytes(), try reader.stringBytes())
        } catch {
            throw .unreadable
        }
    }

    mutating func change(_ property: WritableProperty, from old: UnsafeRawBufferPointer?, to new: String?) {
        guard let column = RowUpdate.column(of: property) else { return }
        differences.append(slot: Int(column), key: property.rawValue, old: old, new: new)
    }

    mutating func custom(_ entry: MergedCustomEntry<UnsafeRawBufferPointer>) {
        switch entry {
        case .kept(let key, let value):
            guard namesCustomKeys else { return }
            customBytes.string(bytes: key)
            customBytes.string(bytes: value)
        case .set(let index, let key, let value, let old):
            customBytes.string(key)
            customBytes.string(value)
            differences.append(slot: -1 - index, key: differenceKeys[index], old: old, new: value)
            customChanged = true
        case .removed(let index?, _, let old):
            differences.append(slot: -1 - index, key: differenceKeys[index], old: old, new: nil)
            customChanged = true
        case .removed(nil, _, _):
            wholeWay = true
        }
    }
}
