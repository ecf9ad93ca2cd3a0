import Foundation
import StoreshCore
import StoreshSQLite

/// What `storesh check` found in a bucket file.
public struct IntegrityReport: Sendable, Equatable {
    /// Each problem found, in words; empty when the bucket is sound.
    public var problems: [String] = []
    /// Problems beyond those listed (the list stops at `listedProblemLimit`).
    public var unlistedProblems = 0
    public var objects = 0
    public var snapshots = 0
    /// Object versions kept for snapshots only.
    public var keptVersions = 0
    /// Noncurrent generations kept by the bucket's versioning (rule B5).
    public var noncurrentGenerations = 0
    /// Generations kept soft-deleted by the bucket's soft delete policy (rule B6).
    public var softDeletedGenerations = 0
    /// Bytes of content checked against MD5 (shared content counted once per version).
    public var contentBytes: Int64 = 0
    /// Names Cloud Storage refuses or advises against (rule P7), each with what is wrong: not damage, but objects
    /// that a real bucket could not take as they are (the list stops at `listedProblemLimit`).
    public var nameNotes: [String] = []

    public var isSound: Bool { problems.isEmpty }

    static let listedProblemLimit = 100

    mutating func add(_ problem: String) {
        if problems.count < Self.listedProblemLimit { problems.append(problem) } else { unlistedProblems += 1 }
    }
}

extension LocalBucket {
    /// SQLite's own check of the file's structure: `[]` when it is sound, else what is wrong.
    public func integrityProblems() throws(StorageError) -> [String] {
        try read { try sqliteIntegrityProblems() }
    }

    /// Everything `storesh check` verifies, in one read transaction: SQLite's structure check, then every
    /// row against its checksum, every version's content against its MD5, and the links between them.
    /// Damage is reported in the result, not thrown, so that one damaged row does not hide the others.
    public func verify(counting: (any WorkCounter)? = nil) throws(StorageError) -> IntegrityReport {
        try read {
            var report = IntegrityReport()
            for problem in try sqliteIntegrityProblems() { report.add("SQLite: \(problem)") }
            let current: Int64
            do {
                for key in ["name", "last_generation", "epoch"]
                where try BucketSchema.readInfo(key, connection: connection) == nil {
                    report.add("the bucket setting \"\(key)\" is missing")
                }
                let settings = try connection.statement("SELECT key FROM bucket_info")
                var keys: [String] = []
                while try settings.step() { keys.append(settings.string(0) ?? "") }
                settings.reset()
                for key in keys { _ = try? record(&report) { try BucketSchema.readInfo(key, connection: connection) } }
                current = Int64(try BucketSchema.readInfo("epoch", connection: connection) ?? "") ?? .max
            } catch {
                report.add(describeProblem(error))
                return report
            }
            // The objects and their kept versions are what takes time: counted as they are checked.
            counting?.begin("checking", total: nil)
            defer { counting?.end() }
            let objectColumns = RowStore.LiveRow.columnsWithContentChecksum(stored: storesContentChecksums)
            scan(&report, "SELECT \(objectColumns) FROM objects ORDER BY name") { statement, report in
                let version = try StoredVersion(statement, from: 0, died: false)
                _ = try version.metadata(bucket: name)
                report.objects += 1
                counting?.advance()
                if let note = ObjectName(stored: version.name).ruleNote,
                    report.nameNotes.count < IntegrityReport.listedProblemLimit
                {
                    report.nameNotes.append("\(MessageText.name(version.name)): \(note)")
                }
                if version.born > current {
                    report.add("object \(version.name.debugDescription) is from a future epoch")
                }
                let data = try rows.content(of: version)
                report.contentBytes += Int64(data.count)
                let checksumColumn = StoredVersion.columnCount + 2
                if !statement.isNull(checksumColumn) {
                    var crc = CRC32C()
                    crc.update(data)
                    if Int64(crc.value) != statement.int64(checksumColumn) {
                        report.add(
                            "the CRC-32C kept for the content of object \(version.name.debugDescription) differs from its content"
                        )
                    }
                }
            }
            scan(&report, "SELECT \(SnapshotRow.keptColumns) FROM history ORDER BY name, born") { statement, report in
                let version = try StoredVersion(statement, from: 0, died: true)
                let died = statement.int64(StoredVersion.columnCount)
                _ = try version.metadata(bucket: name)
                report.keptVersions += 1
                counting?.advance()
                if !(version.born < died && died <= current) {
                    report.add(
                        "a kept version of \(version.name.debugDescription) has impossible epochs \(version.born)…\(died)"
                    )
                }
                report.contentBytes += Int64(try rows.content(of: version).count)
            }
            if storesNoncurrent {
                scan(&report, "SELECT \(NoncurrentRow.columns) FROM noncurrent ORDER BY name, generation") {
                    statement, report in
                    let row = try NoncurrentRow(statement, bucket: name)
                    report.noncurrentGenerations += 1
                    counting?.advance()
                    if row.died < row.version.timeCreated {
                        report.add(
                            "a noncurrent generation of \(row.version.name.debugDescription) stopped being live before it was made"
                        )
                    }
                    report.contentBytes += Int64(try rows.content(of: row.version).count)
                }
                scan(&report, "SELECT \(NoncurrentRow.softDeletedColumns) FROM soft_deleted ORDER BY name, generation")
                { statement, report in
                    let row = try NoncurrentRow(statement, bucket: name, softDeleted: true)
                    report.softDeletedGenerations += 1
                    counting?.advance()
                    if row.metadata.cloudStorage.hardDeleteTime?.microseconds != row.died {
                        report.add(
                            "a soft-deleted generation of \(row.version.name.debugDescription) has two times of deletion for good"
                        )
                    }
                    report.contentBytes += Int64(try rows.content(of: row.version).count)
                }
                // A generation is live or noncurrent, never both.
                scan(&report, "SELECT count(*) FROM noncurrent JOIN objects USING (name, generation)") {
                    statement, report in
                    if statement.int64(0) > 0 {
                        report.add("\(statement.int64(0)) generations are both live and noncurrent")
                    }
                }
            }
            scan(&report, "SELECT \(SnapshotRow.columns) FROM snapshots ORDER BY epoch") { statement, report in
                let row = try SnapshotRow(statement)
                report.snapshots += 1
                if row.epoch >= current { report.add("snapshot \(row.info.name) is from a future epoch") }
            }
            // Every version's content was found above, so the rows beyond those referenced belong to none.
            // (Counting distinct ids sorts once; a NOT EXISTS per row would scan the objects per row.)
            let referenced =
                "SELECT content_id FROM objects UNION SELECT content_id FROM history"
                + (storesNoncurrent
                    ? " UNION SELECT content_id FROM noncurrent UNION SELECT content_id FROM soft_deleted" : "")
            scan(&report, "SELECT (SELECT count(*) FROM contents) - (SELECT count(*) FROM (\(referenced)))") {
                statement, report in
                let orphans = statement.int64(0)
                if orphans > 0 { report.add("\(orphans) content rows belong to no object version") }
            }
            if storesContentChecksums {
                // Each content has its CRC-32C, and each CRC-32C a content (both tables by their primary keys).
                scan(
                    &report,
                    """
                    SELECT (SELECT count(*) FROM contents WHERE NOT EXISTS (SELECT 1 FROM content_checksums WHERE content_id = contents.id)),
                    (SELECT count(*) FROM content_checksums WHERE NOT EXISTS (SELECT 1 FROM contents WHERE id = content_checksums.content_id))
                    """
                ) { statement, report in
                    if statement.int64(0) > 0 { report.add("\(statement.int64(0)) content rows have no CRC-32C") }
                    if statement.int64(1) > 0 { report.add("\(statement.int64(1)) CRC-32C rows belong to no content") }
                }
            }
            return report
        }
    }

    /// Runs a query and checks each row; a row's damage is recorded and the scan goes on, while damage to
    /// the table itself (SQLite cannot read on) ends this table's scan.
    private func scan(
        _ report: inout IntegrityReport, _ sql: String,
        row check: (SQLiteStatement, inout IntegrityReport) throws -> Void
    ) {
        do {
            let statement = try connection.statement(sql)
            defer { statement.reset() }
            while try statement.step() {
                do {
                    try check(statement, &report)
                } catch {
                    report.add(describeProblem(error))
                }
            }
        } catch {
            report.add(describeProblem(error))
        }
    }

    /// Runs `body`, recording a damaged row as a problem.
    private func record<T>(_ report: inout IntegrityReport, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            report.add(describeProblem(error))
            throw error
        }
    }

    private func describeProblem(_ error: Error) -> String {
        switch error {
        case let mismatch as ChecksumMismatch: "the stored \(mismatch.what) does not match its checksum"
        case let sqlite as SQLiteError: "SQLite cannot read on: \(sqlite.message)"
        case let storage as StorageError: storage.message
        default: "\(error)"
        }
    }

    private func sqliteIntegrityProblems() throws -> [String] {
        let statement = try connection.statement("PRAGMA integrity_check")
        defer { statement.reset() }
        var problems: [String] = []
        while try statement.step() {
            if let line = statement.string(0), line != "ok" { problems.append(line) }
        }
        return problems
    }
}
