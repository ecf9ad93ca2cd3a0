import Foundation

/// A bucket's objects by generation (rule B5): while the bucket's versioning is on, an object overwritten or deleted
/// is kept as a *noncurrent* generation, with its content and metadata and the time it stopped being live
/// (`timeDeleted`), until that generation is deleted by number. Cloud Storage's object versioning.
///
/// A generation named here is either the live object's or a noncurrent one; the plain `Bucket` calls address the
/// live object only.
public protocol ObjectVersions: AnyObject, Sendable {
    /// The generation `text` names in this bucket (what follows the `#` of NAME#GENERATION): a whole number above
    /// zero where generations are numbered, an S3 version id on S3; nil for a word that names none here.
    func generation(named text: String) -> ObjectGeneration?

    /// The metadata of the object's generation `generation`: the live object's when it has that generation, else the
    /// noncurrent one's (with `timeDeleted`).
    func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata

    /// Streams the content of generation `generation` into `sink` and answers its metadata.
    func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata

    /// Updates the metadata of one generation, live or noncurrent, if it satisfies `precondition` (rules M4–M6).
    func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult

    /// Deletes one generation for good, live or noncurrent, if it satisfies `precondition`: a live generation deleted
    /// by number leaves no noncurrent generation behind (as on the service).
    func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws

    /// The metadata of a soft-deleted generation (rule B6), with its `softDeleteTime` and `hardDeleteTime`.
    func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata

    /// Brings a soft-deleted generation back as the live object, a new generation (rule B6), if the live object (or
    /// its absence) satisfies `precondition`.
    func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata

    /// Whether the bucket keeps any noncurrent generation (a bucket that does is not empty).
    func hasNoncurrentGenerations() async throws -> Bool

    /// How the bucket keeps an object a delete removes now, as its settings say (rules B5, B6): what a plan of
    /// deletes tells before anything is deleted, and what an undo can bring back.
    func deletionsKept() async throws -> DeletionKeeping

    /// One page of every generation under `prefix`, live and noncurrent, by name and then generation (oldest first;
    /// S3 lists a key's versions newest first), as the JSON API lists them with `versions=true`; with `softDeleted`,
    /// the soft-deleted generations instead (rule B6). With `delimited`, names past the next `/` collapse into
    /// prefixes (without their `/`). The page always carries each generation's metadata (`itemMetadata`).
    func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool
    ) async throws -> ListPage
}

/// Which generation of an object (rules B5, B6): Cloud Storage's number (a bucket file's too), or an S3 version id
/// (rule S2), as NAME#GENERATION writes it after the `#`.
public enum ObjectGeneration: Hashable, Sendable, CustomStringConvertible {
    case number(Int64)
    case version(String)

    public var description: String {
        switch self {
        case .number(let number): String(number)
        case .version(let id): id
        }
    }

    /// A whole number above zero, as Cloud Storage numbers generations; nil for any other text.
    public static func number(named text: String) -> ObjectGeneration? {
        guard let number = Int64(text), number > 0, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return .number(number)
    }

    /// The number, where generations are numbered; a version id names none of them (object-not-found, as a number
    /// the bucket never gave would be).
    public func numbered(_ object: ObjectName) throws(StorageError) -> Int64 {
        switch self {
        case .number(let number): return number
        case .version(let id):
            throw StorageError(
                .objectNotFound,
                "\(MessageText.name(object.rawValue))#\(id) names no generation: this bucket numbers its generations.")
        }
    }
}

extension ObjectVersions {
    /// Whether any generation listed is noncurrent, walking every generation a page at a time (bounded by the
    /// service's token, which must change at every page): `hasNoncurrentGenerations` where the bucket has no
    /// quicker way.
    public func listsNoncurrentGeneration() async throws -> Bool {
        var token: String?
        while true {
            let page = try await listGenerations(
                prefix: "", delimited: false, options: ListOptions(maxResults: 1000, pageToken: token),
                softDeleted: false)
            if page.itemMetadata?.contains(where: { $0.timeDeleted != nil }) == true { return true }
            guard let next = page.nextPageToken, next != token else { return false }
            token = next
        }
    }

    // Cloud Storage's numbered generations, as its APIs name them (storesh serve's requests).
    public func metadata(of object: ObjectName, generation: Int64) async throws -> ObjectMetadata {
        try await metadata(of: object, generation: .number(generation))
    }
    public func read(_ object: ObjectName, generation: Int64, into sink: any ContentSink) async throws -> ObjectMetadata
    {
        try await read(object, generation: .number(generation), into: sink)
    }
    public func updateMetadata(
        of object: ObjectName, generation: Int64, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        try await updateMetadata(of: object, generation: .number(generation), update, precondition: precondition)
    }
    public func delete(_ object: ObjectName, generation: Int64, precondition: Precondition) async throws {
        try await delete(object, generation: .number(generation), precondition: precondition)
    }
    public func softDeletedMetadata(of object: ObjectName, generation: Int64) async throws -> ObjectMetadata {
        try await softDeletedMetadata(of: object, generation: .number(generation))
    }
    public func restore(
        _ object: ObjectName, generation: Int64, precondition: Precondition
    ) async throws -> ObjectMetadata {
        try await restore(object, generation: .number(generation), precondition: precondition)
    }
}

extension ObjectMetadata {
    /// Which generation this is: S3's version id where the object has one, else its number (rule S2).
    public var generationID: ObjectGeneration { versionID.map { .version($0) } ?? .number(generation) }
}

/// How a bucket keeps an object a delete removes (rules B5, B6), as its settings say now.
public enum DeletionKeeping: Sendable, Equatable {
    /// As a noncurrent generation (versioning is on): listed by `ls -a`, until it is deleted by number.
    case noncurrent
    /// As a noncurrent version that a restore copies back as the live object (S3's versioning, rule S2).
    case noncurrentRestorable
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
            return
                "\(bucket) keeps deleted objects soft-deleted for \(MessageText.duration(seconds: seconds)): storesh undo JOURNAL (or restore NAME#GENERATION) brings \(them) back until then"
        case .noncurrent:
            return
                "\(bucket) keeps deleted objects as noncurrent generations (versioning is on): ls -a lists \(them), until deleted by number"
        case .noncurrentRestorable:
            return
                "\(bucket) keeps deleted objects as noncurrent versions (versioning is on): storesh undo JOURNAL (or restore NAME#VERSIONID) copies \(them) back"
        case .notKept:
            return
                "\(count == 1 ? "this delete" : "these deletes") cannot be undone: \(bucket) keeps deleted objects neither soft-deleted (it has no soft delete policy) nor as noncurrent generations (versioning is off)"
        case .unknown(let why):
            return
                "whether \(bucket) keeps deleted objects (soft delete, versioning) is not known (\(why)): \(count == 1 ? "this delete" : "these deletes") may not be undoable"
        }
    }

}
