import Foundation
import StoreshCore
import StoreshSQLite
import Testing

@testable import StoreshLocal

/// A row of test values: a column each, NULL or bytes, or a number.
private enum TestColumn {
    case number(Int64)
    case bytes([UInt8]?)
}

private struct TestRow: ChecksummedRow {
    var columns: [TestColumn]

    func add(to checksum: inout some RowChecksumming) {
        for column in columns {
            switch column {
            case .number(let value): checksum.add(value)
            case .bytes(let bytes):
                if let bytes {
                    bytes.withUnsafeBytes { checksum.add($0) }
                } else {
                    checksum.add(nil as UnsafeRawBufferPointer?)
                }
            }
        }
    }
}

@Suite("Row checksums: format 4's a word at a time, formats 2 and 3's still read")
struct RowChecksumTests {
    let directory = TemporaryDirectory()

    /// Rows whose text runs from empty to past several words, so that every place in a word and every tail length
    /// is met.
    private static func sampleRows() -> [TestRow] {
        (0..<20).map { length in
            TestRow(columns: [
                .bytes(
                    Array("users/u\(length)/".utf8) + (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }),
                .number(Int64(length) << 40 | 0x1234),
                .bytes(length % 3 == 0 ? nil : Array(repeating: UInt8(length), count: length % 9)),
            ])
        }
    }

    @Test("any one changed bit of any value changes either checksum")
    func everyBitCounts() {
        for row in Self.sampleRows() {
            let word = row.checksum(as: RowChecksum.self)
            let byte = row.checksum(as: ByteRowChecksum.self)
            for (index, column) in row.columns.enumerated() {
                var variants: [TestColumn] = []
                switch column {
                case .number(let value): variants = (0..<64).map { .number(value ^ (1 << $0)) }
                case .bytes(let bytes?):
                    for place in bytes.indices {
                        for bit in 0..<8 {
                            var changed = bytes
                            changed[place] ^= UInt8(1 << bit)
                            variants.append(.bytes(changed))
                        }
                    }
                case .bytes(nil): variants = [.bytes([])]
                }
                for variant in variants {
                    var changed = row
                    changed.columns[index] = variant
                    #expect(changed.checksum(as: RowChecksum.self) != word, "\(changed.columns)")
                    #expect(changed.checksum(as: ByteRowChecksum.self) != byte, "\(changed.columns)")
                }
            }
        }
    }

    @Test("values cannot run into each other: NULL, empty, and where one ends and the next begins")
    func valuesStayApart() {
        let bytes = { (text: String) in TestColumn.bytes(Array(text.utf8)) }
        let rows = [
            TestRow(columns: [bytes("ab"), bytes("c")]),
            TestRow(columns: [bytes("a"), bytes("bc")]),
            TestRow(columns: [bytes("abc"), bytes("")]),
            TestRow(columns: [bytes("abc"), .bytes(nil)]),
            TestRow(columns: [bytes("abc")]),
            // A value whose last word is zeros where the fill would be.
            TestRow(columns: [.bytes([0x61, 0x62, 0x63, 0]), .bytes(nil)]),
            TestRow(columns: [.bytes(nil), .bytes([])]),
            TestRow(columns: [.bytes([]), .bytes(nil)]),
        ]
        for checksum in [RowChecksum.self, ByteRowChecksum.self] as [any RowChecksumming.Type] {
            let values = rows.map { $0.checksum(as: checksum) }
            #expect(Set(values).count == rows.count, "\(checksum): \(values)")
        }
    }

    @Test("formats 2 and 3's checksum is FNV-1a as they wrote it")
    func byteChecksumAsWritten() {
        // FNV-1a (64-bit) of 0x01, the length in eight bytes low first, the bytes, for "name" then "b": worked out
        // apart from storesh (Python, from the algorithm's published constants).
        #expect(BucketSchema.InfoRow(key: "name", value: "b").isChecksummed(by: -3_494_245_807_984_524_121))
        #expect(
            BucketSchema.InfoRow(key: "name", value: "b").checksum(as: ByteRowChecksum.self)
                == -3_494_245_807_984_524_121)
        // Format 4 writes its own.
        #expect(BucketSchema.InfoRow(key: "name", value: "b").checksum != -3_494_245_807_984_524_121)
    }

    /// Rewrites every row's checksum as format 3 wrote it, and marks the file format 3.
    private func makeFormat3(_ path: String) throws {
        let raw = try SQLiteConnection(path: path, flags: 0x02)
        defer { raw.close() }
        try raw.execute("BEGIN")
        func rewrite(_ select: String, table: String, checksum: (SQLiteStatement) throws -> Int64) throws {
            let rows = try raw.statement(select)
            var checksums: [(Int64, Int64)] = []
            while try rows.step() { checksums.append((rows.int64(0), try checksum(rows))) }
            rows.reset()
            for (rowid, value) in checksums {
                try raw.execute("UPDATE \(table) SET checksum = \(value) WHERE rowid = \(rowid)")
            }
        }
        try rewrite("SELECT id, \(BucketSchema.metadataColumns), checksum FROM objects", table: "objects") {
            StoredVersion.Values(version: try StoredVersion($0, from: 1, died: false), died: nil).checksum(
                as: ByteRowChecksum.self)
        }
        try rewrite("SELECT id, \(SnapshotRow.keptColumns) FROM history", table: "history") {
            StoredVersion.Values(
                version: try StoredVersion($0, from: 1, died: true), died: $0.int64(1 + StoredVersion.columnCount)
            ).checksum(as: ByteRowChecksum.self)
        }
        try rewrite("SELECT rowid, name, epoch, created, object_count FROM snapshots", table: "snapshots") {
            SnapshotRow.Values(name: $0.string(1)!, epoch: $0.int64(2), created: $0.int64(3), count: $0.int64(4))
                .checksum(as: ByteRowChecksum.self)
        }
        try rewrite("SELECT rowid, key, value FROM bucket_info", table: "bucket_info") {
            BucketSchema.InfoRow(key: $0.string(1)!, value: $0.string(2)!).checksum(as: ByteRowChecksum.self)
        }
        try raw.execute("PRAGMA user_version = 3; COMMIT")
    }

    /// The stored checksum of a live object's row and the one format 4 gives its values.
    private func checksums(_ bucket: LocalBucket, _ name: String) throws -> (stored: Int64, format4: Int64) {
        try bucket.withConnection { connection in
            let statement = try connection.statement(
                "SELECT \(BucketSchema.metadataColumns), checksum FROM objects WHERE name = ?1")
            defer { statement.reset() }
            statement.bind(1, name)
            guard try statement.step() else { throw StorageError.objectNotFound(name) }
            let version = try StoredVersion(statement, from: 0, died: false)
            return (statement.int64(StoredVersion.columnCount), version.checksum(died: nil))
        }
    }

    @Test(
        "a format-3 bucket opens as the current format: read and checked as it is, its rows take the new checksum when written"
    )
    func format3Upgraded() async throws {
        let path = directory.file("v3.bucket")
        var bucket: LocalBucket? = try openBucket(path)
        try await bucket!.put((0..<12).map { "d/\($0).txt" })
        _ = try bucket!.saveSnapshotNow(named: "before")
        _ = try await bucket!.updateMetadata(
            of: objectName("d/0.txt"), MetadataUpdate(properties: [.contentLanguage: .set("it")]), precondition: .none)
        bucket!.close()
        bucket = nil
        try makeFormat3(path)

        let upgraded = try openBucket(path)
        #expect(try upgraded.withConnection { try $0.integer("PRAGMA user_version") } == BucketSchema.version)
        #expect(try upgraded.verify().isSound)
        #expect(try upgraded.snapshotNames() == ["before"])
        #expect(try checksums(upgraded, "d/5.txt").stored != checksums(upgraded, "d/5.txt").format4)
        // A uniform update verifies the old checksums and writes new ones; so does a single update.
        let page = try await upgraded.updatePage(
            prefix: "d/", after: nil, limit: 6, MetadataUpdate(properties: [.cacheControl: .set("no-cache")])
        ) { _ in true }
        #expect(page.outcomes.count == 6)
        _ = try await upgraded.updateMetadata(
            of: objectName("d/9.txt"), MetadataUpdate(properties: [.cacheControl: .set("x")]), precondition: .none)
        for name in ["d/0.txt", "d/10.txt", "d/9.txt"] {
            let (stored, format4) = try checksums(upgraded, name)
            #expect(stored == format4, "\(name)")
        }
        #expect(try upgraded.verify().isSound)
        // An old checksum still finds damage.
        try upgraded.withConnection {
            try $0.execute("UPDATE objects SET content_type = 'text/evil' WHERE name = 'd/8.txt'")
        }
        let report = try upgraded.verify()
        #expect(
            report.problems.count == 1 && report.problems.first?.contains("\"d/8.txt\"") == true, "\(report.problems)")
        upgraded.close()
    }
}
