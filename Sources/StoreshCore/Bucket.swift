import Foundation

/// What a write of content sets besides the content itself (rules M1, M3).
public struct WriteOptions: Sendable, Equatable {
    public var properties: [WritableProperty: String]
    public var customMetadata: [String: String]
    /// When given, the MD5 the content must have (base64); a mismatch is non-matching-checksum.
    public var expectedMD5: String?

    public init(
        properties: [WritableProperty: String] = [:], customMetadata: [String: String] = [:],
        expectedMD5: String? = nil
    ) {
        self.properties = properties
        self.customMetadata = customMetadata
        self.expectedMD5 = expectedMD5
    }
}

/// The outcome of a metadata update (rule M6).
public struct UpdateResult: Sendable, Equatable {
    public var metadata: ObjectMetadata
    /// The object before the update, so that a caller can say what changed without a read of its own (a read
    /// would be a `get` that security rules may deny where the `update` is allowed).
    public var previous: ObjectMetadata
    /// False when the update would have changed nothing, and so changed nothing.
    public var changed: Bool

    public init(metadata: ObjectMetadata, previous: ObjectMetadata, changed: Bool) {
        self.metadata = metadata
        self.previous = previous
        self.changed = changed
    }
}

/// A page of a flat (delimiter-less) scan of object names with their metadata, in byte order.
public struct ObjectScanPage: Sendable {
    public var objects: [ObjectMetadata]
    /// The name to pass as `after` for the next page; nil at the end.
    public var resumeAfter: String?

    public init(objects: [ObjectMetadata], resumeAfter: String?) {
        self.objects = objects
        self.resumeAfter = resumeAfter
    }
}

/// A bucket with the semantics of Cloud Storage for Firebase. The local engine implements it, and so
/// will remote backends; everything above (language, shell) talks to a bucket only through it.
///
/// Every method fails with a `StorageError`.
public protocol Bucket: AnyObject, Sendable {
    /// The bucket's name, as in `gs://NAME/`.
    var name: String { get }

    /// One page of the delimiter listing of `reference` (rules L1–L10).
    func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage

    /// The metadata of one object (rule M8: object-not-found when absent).
    func metadata(of object: ObjectName) async throws -> ObjectMetadata

    /// Applies a partial update (rules M4–M7). With `ifMetagenerationMatch`, the update fails unless the
    /// object's metageneration is that value, so a read-modify-write cannot overwrite a concurrent change.
    func updateMetadata(of object: ObjectName, _ update: MetadataUpdate, ifMetagenerationMatch: Int64?)
        async throws -> UpdateResult

    /// Writes content, creating or replacing the object (rule M3).
    func write(_ content: Data, to object: ObjectName, options: WriteOptions) async throws -> ObjectMetadata

    /// The object's content.
    func read(_ object: ObjectName) async throws -> Data

    /// Deletes the object; object-not-found when absent.
    func delete(_ object: ObjectName) async throws

    /// Objects whose names start with `prefix` (no delimiter), in byte order, strictly after `after`,
    /// at most `limit` of them. This is what patterns (`**`) and bulk edits walk.
    func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage
}

extension Bucket {
    /// listAll (rule L11): every page gathered. Holds everything in memory and is not a consistent
    /// snapshot if the bucket changes meanwhile; use pages for large folders.
    public func listAll(_ reference: StoragePath) async throws -> ListPage {
        var all = ListPage()
        var token: String?
        repeat {
            let page = try await list(reference, options: ListOptions(pageToken: token))
            all.prefixes += page.prefixes
            all.items += page.items
            token = page.nextPageToken
        } while token != nil
        return all
    }
}

/// A bucket whose changes can be grouped so they land together or not at all: a script is one
/// transaction (contract, Scripts).
public protocol TransactionalBucket: Bucket {
    /// Starts a transaction; changes made until `commitTransaction` are seen by this bucket object only.
    /// `forWriting: false` promises no change: other writers are not blocked, and a bucket the user may not
    /// write can still be read.
    func beginTransaction(forWriting: Bool) async throws
    /// Makes every change since `beginTransaction` durable at once.
    func commitTransaction() async throws
    /// Forgets every change since `beginTransaction`.
    func rollbackTransaction() async throws
    /// True between begin and commit/rollback.
    var isInTransaction: Bool { get async }

    /// Inside a transaction, marks where one command starts, so that a command that fails halfway (a bulk
    /// edit whose 300th object fails, say) can be undone alone while earlier commands keep their changes.
    func beginCommand() async throws
    /// Keeps the changes of the command begun last.
    func endCommand() async throws
    /// Undoes the changes of the command begun last.
    func undoCommand() async throws
}

/// Reads that answer at once, without awaiting: what a key press can afford, since Tab is answered inside
/// the line editor's callback. A local bucket has them; a remote one would answer from what it holds.
public protocol ImmediateReads {
    var name: String { get }
    func listPage(_ reference: StoragePath, options: ListOptions) throws(StorageError) -> ListPage
    func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata
    /// The names of the bucket's snapshots, oldest first (none for a bucket without snapshots).
    func snapshotNames() throws(StorageError) -> [String]
}

extension ImmediateReads {
    public func snapshotNames() throws(StorageError) -> [String] { [] }
}
