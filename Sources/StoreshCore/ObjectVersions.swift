import Foundation

/// A bucket's objects by generation (rule B5): while the bucket's versioning is on, an object overwritten or deleted
/// is kept as a *noncurrent* generation, with its content and metadata and the time it stopped being live
/// (`timeDeleted`), until that generation is deleted by number. Cloud Storage's object versioning.
///
/// A generation named here is either the live object's or a noncurrent one; the plain `Bucket` calls address the
/// live object only.
public protocol ObjectVersions: AnyObject, Sendable {
    /// The metadata of the object's generation `generation`: the live object's when it has that generation, else the
    /// noncurrent one's (with `timeDeleted`).
    func metadata(of object: ObjectName, generation: Int64) async throws -> ObjectMetadata

    /// Streams the content of generation `generation` into `sink` and answers its metadata.
    func read(_ object: ObjectName, generation: Int64, into sink: any ContentSink) async throws -> ObjectMetadata

    /// Updates the metadata of one generation, live or noncurrent, if it satisfies `precondition` (rules M4–M6).
    func updateMetadata(of object: ObjectName, generation: Int64, _ update: MetadataUpdate, precondition: Precondition)
        async throws -> UpdateResult

    /// Deletes one generation for good, live or noncurrent, if it satisfies `precondition`: a live generation deleted
    /// by number leaves no noncurrent generation behind (as on the service).
    func delete(_ object: ObjectName, generation: Int64, precondition: Precondition) async throws

    /// The metadata of a soft-deleted generation (rule B6), with its `softDeleteTime` and `hardDeleteTime`.
    func softDeletedMetadata(of object: ObjectName, generation: Int64) async throws -> ObjectMetadata

    /// Brings a soft-deleted generation back as the live object, a new generation (rule B6), if the live object (or
    /// its absence) satisfies `precondition`.
    func restore(_ object: ObjectName, generation: Int64, precondition: Precondition) async throws -> ObjectMetadata

    /// Whether the bucket keeps any noncurrent generation (a bucket that does is not empty).
    func hasNoncurrentGenerations() async throws -> Bool

    /// How the bucket keeps an object a delete removes now, as its settings say (rules B5, B6): what a plan of
    /// deletes tells before anything is deleted, and what an undo can bring back.
    func deletionsKept() async throws -> DeletionKeeping

    /// One page of every generation under `prefix`, live and noncurrent, by name and then generation (oldest first),
    /// as the JSON API lists them with `versions=true`; with `softDeleted`, the soft-deleted generations instead (rule
    /// B6). With `delimited`, names past the next `/` collapse into prefixes (without their `/`). The page always
    /// carries each generation's metadata (`itemMetadata`).
    func listGenerations(prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool) async throws -> ListPage
}

/// How a bucket keeps an object a delete removes (rules B5, B6), as its settings say now.
public enum DeletionKeeping: Sendable, Equatable {
    /// As a noncurrent generation (versioning is on): listed by `ls -a`, until it is deleted by number.
    case noncurrent
    /// Soft-deleted for this many seconds (the soft delete policy), restorable (`restore`, `storesh undo`) until then.
    case softDeleted(seconds: Int64)
    /// Not at all: the delete cannot be undone.
    case notKept
    /// The bucket did not say (the credentials may not read its settings), and why.
    case unknown(String)

    /// What a plan of `count` deletes on `bucket` says of them: whether and how they can be brought back.
    public func planNote(count: Int, bucket: String) -> String {
        let them = count == 1 ? "it" : "them"
        switch self {
        case .softDeleted(let seconds):
            return "\(bucket) keeps deleted objects soft-deleted for \(MessageText.duration(seconds: seconds)): storesh undo JOURNAL (or restore NAME#GENERATION) brings \(them) back until then"
        case .noncurrent:
            return "\(bucket) keeps deleted objects as noncurrent generations (versioning is on): ls -a lists \(them), until deleted by number"
        case .notKept:
            return "\(count == 1 ? "this delete" : "these deletes") cannot be undone: \(bucket) keeps deleted objects neither soft-deleted (it has no soft delete policy) nor as noncurrent generations (versioning is off)"
        case .unknown(let why):
            return "whether \(bucket) keeps deleted objects (soft delete, versioning) is not known (\(why)): \(count == 1 ? "this delete" : "these deletes") may not be undoable"
        }
    }

}
