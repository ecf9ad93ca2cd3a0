import Foundation
import StoreshCore
import StoreshSQLite
import StoreshTestSupport
import Testing

@testable import StoreshLocal

/// Rule M10 in the bucket file: a move is one change; the destination takes the source's content row itself when no
/// other version of the source's name keeps it (a rename copies no byte), and a copy otherwise, so that versions of
/// one name alone ever share content.
@Suite("Moves in the bucket file (rule M10)")
struct MoveTests {
    let directory = TemporaryDirectory()

    func contentRows(_ file: String) throws -> Int64 {
        let reader = try SQLiteConnection(path: directory.file(file), flags: 0x01)
        defer { reader.close() }
        return try reader.integer("SELECT count(*) FROM contents") ?? -1
    }

    @Test(
        "rule M10: an object whose content is its alone is renamed without a copy, content, metadata and check intact")
    func renamedInPlace() async throws {
        let bucket = try openBucket(directory.file("rename.bucket"))
        let content = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let written = try await bucket.write(
            content, to: objectName("a/big.bin"),
            options: WriteOptions(properties: [.contentType: "application/x-thing"]))
        let rows = try contentRows("rename.bucket")
        let moved = try await bucket.move(
            objectName("a/big.bin"), to: objectName("b/big.bin"), sourcePrecondition: .matches(written),
            destinationPrecondition: .doesNotExist)
        #expect(try contentRows("rename.bucket") == rows)
        #expect(
            moved.md5Hash == written.md5Hash && moved.crc32c == written.crc32c
                && moved.contentType == "application/x-thing")
        #expect(try await bucket.read(objectName("b/big.bin")) == content)
        #expect(try await bucket.metadataIfPresent(of: objectName("a/big.bin")) == nil)
        #expect(try bucket.verify().isSound)
    }

    @Test("rule M10: content a snapshot keeps (a version of the source's name) is copied, and stays the snapshot's")
    func copiedWhenShared() async throws {
        // A snapshot sees the source: the destination gets a copy; restoring the snapshot brings the source back whole.
        let bucket = try openBucket(directory.file("shared.bucket"))
        let written = try await bucket.write(Data("kept".utf8), to: objectName("a"), options: WriteOptions())
        _ = try bucket.saveSnapshotNow(named: "before")
        let rows = try contentRows("shared.bucket")
        _ = try await bucket.move(
            objectName("a"), to: objectName("b"), sourcePrecondition: .matches(written),
            destinationPrecondition: .doesNotExist)
        #expect(try contentRows("shared.bucket") == rows + 1)
        #expect(try bucket.verify().isSound)
        _ = try bucket.restoreSnapshotNow(named: "before")
        #expect(try await bucket.read(objectName("a")) == Data("kept".utf8))

    }
}
