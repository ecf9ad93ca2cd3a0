import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite

/// `mv` on a bucket file: one change, so the destination appears and the source goes together, or neither.
extension LocalBucket: ObjectMoves {
    public var movesInOneStep: Bool { true }

    public func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try destination.checkNewObjectName()
        return try change {
            guard let from = try rows.fetchRow(source.rawValue) else {
                throw StorageError.objectNotFound(source.rawValue)
            }
            guard sourcePrecondition.isSatisfied(by: from.metadata) else {
                throw StorageError.preconditionFailed(source.rawValue, sourcePrecondition, actual: from.metadata)
            }
            let existing = try rows.fetchRow(destination.rawValue)
            guard destinationPrecondition.isSatisfied(by: existing?.metadata) else {
                throw StorageError.preconditionFailed(
                    destination.rawValue, destinationPrecondition, actual: existing?.metadata)
            }
            try from.metadata.refuseMove(over: existing?.metadata, named: destination, now: options.clock.now())
            try refuseIfProtected(from.metadata, .deleted)
            try refuseIfProtected(existing?.metadata, .overwritten)
            let now = options.clock.nextChangeTime()
            let moved = from.metadata.moved(to: destination, generation: try rows.nextGeneration(now: now), now: now)
            // Renamed, not deleted: no noncurrent or soft-deleted generation is left behind (a snapshot that sees the
            // source still keeps it).
            if try rows.isSnapshotted(from.version) || contentIsShared(from.version) {
                // Only versions of one name share content: the destination gets a copy, made a piece at a time.
                let contentID = try copyContent(from.version.contentID)
                try store(moved, contentID: contentID, replacing: existing, noncurrentSince: now)
                try removeLive(from.version, noncurrentSince: nil)
            } else {
                // The source's content is its live version's alone: the destination takes it as it is, and a move
                // of any size copies no byte (a rename).
                try rows.deleteLive(from.version)
                try store(moved, contentID: from.version.contentID, replacing: existing, noncurrentSince: now)
            }
            return moved
        }
    }

    /// Whether a version's content is kept by another row of its name too: a version kept for snapshots, a noncurrent
    /// or a soft-deleted generation (metadata changes keep the content they do not change).
    private func contentIsShared(_ version: StoredVersion) throws -> Bool {
        let tables = storesNoncurrent ? ["history", "noncurrent", "soft_deleted"] : ["history"]
        let shared = try connection.statement(
            "SELECT "
                + tables.map { "EXISTS (SELECT 1 FROM \($0) WHERE name = ?1 AND content_id = ?2)" }.joined(
                    separator: " OR "))
        defer { shared.reset() }
        shared.bind(1, version.name)
        shared.bind(2, version.contentID)
        _ = try shared.step()
        return shared.int64(0) != 0
    }

    /// A new content row with the bytes and CRC-32C of `contentID`'s, copied a piece at a time.
    private func copyContent(_ contentID: Int64) throws -> Int64 {
        let reader = try SQLiteBlob(connection, table: "contents", column: "data", row: contentID, writable: false)
        defer { reader.close() }
        let insert = try connection.statement("INSERT INTO contents (data) VALUES (zeroblob(?1))")
        insert.bind(1, Int64(reader.size))
        try insert.step()
        insert.reset()
        let copy = connection.lastInsertedRowID
        let writer = try SQLiteBlob(connection, table: "contents", column: "data", row: copy, writable: true)
        defer { writer.close() }
        var offset = 0
        var crc = CRC32C()
        try reader.forEachPiece(of: Self.streamedPieceBytes) { piece in
            try writer.write(piece, at: offset)
            crc.update(piece)
            offset += piece.count
        }
        reader.close()
        writer.close()
        try BucketSchema.keepContentChecksum(crc.value, of: copy, connection: connection)
        return copy
    }
}
