/// Objects renamed by the bucket (`mv`): the destination gets the source's content and metadata as a new object, and
/// the source goes. A bucket file and Cloud Storage (objects.move) do it in one step, so that either both happen or
/// neither; S3, which has no move, in two (a copy, then a delete of the source as copied), and a failure between them
/// is a `HalfMove`; a bucket with neither has none (`Bucket.objectMoves` is nil).
public protocol ObjectMoves: AnyObject, Sendable {
    /// Whether a move is one step (nothing in between to fail), or a copy and then a delete.
    var movesInOneStep: Bool { get }

    /// Moves `source`, if it satisfies `sourcePrecondition`, to `destination`, if the object there (or its absence)
    /// satisfies `destinationPrecondition`; answers the new object. The source is not kept as a noncurrent or
    /// soft-deleted generation (as on the service: a move is a rename); an object the destination replaces is kept as
    /// a write keeps it. A held or retained source cannot be deleted, nor a held or retained destination overwritten,
    /// so neither moves.
    func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
}

extension ObjectMetadata {
    /// The object a move of `self` to `destination` makes (at `now`, as `generation`): the same content and metadata
    /// (properties, custom metadata, Cloud Storage's own fields), a new name, a new generation, metageneration 1, and
    /// created and updated now. A soft-deleted generation's times and a bucket policy's expiration are not carried.
    public func moved(to destination: ObjectName, generation: Int64, now: Timestamp) -> ObjectMetadata {
        var moved = self
        moved.fullPath = destination.rawValue
        moved.generation = generation
        moved.metageneration = 1
        moved.timeCreated = now
        moved.updated = now
        moved.timeDeleted = nil
        moved.cloudStorage.softDeleteTime = nil
        moved.cloudStorage.hardDeleteTime = nil
        moved.cloudStorage.retentionExpirationTime = nil
        return moved
    }

    /// Refuses a move of `self` (the source) over `destination` (nil: none) at `now`, as the service refuses it: onto
    /// itself, or when a hold or a retention keeps the source from going or the destination from being replaced.
    public func refuseMove(
        over destination: ObjectMetadata?, named destinationName: ObjectName, now: Timestamp
    ) throws(StorageError) {
        guard !NameBytes.sameBytes(fullPath, destinationName.rawValue) else {
            throw .invalidArgument("\(MessageText.name(fullPath)) cannot be moved onto itself.")
        }
        try refuseIfProtected(.deleted, now: now)
        try destination?.refuseIfProtected(.overwritten, now: now)
    }
}

/// A move made as a copy and then a delete whose delete failed: the object arrived (`arrived`) and the source is
/// still there, as `failure` says.
public struct HalfMove: Error, Sendable {
    public var arrived: ObjectMetadata
    public var failure: StorageError

    public init(arrived: ObjectMetadata, failure: StorageError) {
        self.arrived = arrived
        self.failure = failure
    }
}
