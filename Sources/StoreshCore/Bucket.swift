import Foundation

/// What a write of content sets besides the content itself (rules M1, M3).
public struct WriteOptions: Sendable, Equatable {
    public var properties: [WritableProperty: String]
    public var customMetadata: CustomMetadata
    /// When given, the MD5 the content must have (base64); a mismatch is non-matching-checksum.
    public var expectedMD5: String?
    /// Whether a content type not given is guessed from the name (rule M3); a compose leaves a composite without one,
    /// as the service does.
    public var guessesContentType = true
    /// Cloud Storage's own fields the new object starts with (rule M9): a custom time, holds, a storage class, contexts.
    public var cloudStorage = CloudStorageFields()

    public init(
        properties: [WritableProperty: String] = [:], customMetadata: CustomMetadata = [:],
        expectedMD5: String? = nil
    ) {
        self.properties = properties
        self.customMetadata = customMetadata
        self.expectedMD5 = expectedMD5
    }
}

/// What a change requires of the object's current state (rule G5): a remote change never overwrites a
/// concurrent one, because it says what it was computed from. A failed precondition is `precondition-failed`.
public struct Precondition: Sendable, Equatable {
    /// `ifGenerationMatch`: the object's content generation; 0 means the object must not exist.
    public var generation: Int64?
    /// `ifMetagenerationMatch`: the object's metadata generation.
    public var metageneration: Int64?
    /// S3's `If-Match`: the object's ETag, for objects without generations (rule S3).
    public var entityTag: String?
    /// The object as the caller found it (a pattern's scan, a read), when the condition was made from it. A layer
    /// or a plan that needs the object's state to decide or plan the change takes it from here (`seenState`)
    /// instead of reading the object again; the change itself is guarded by the condition, so a state that is no
    /// longer the object's is refused, never acted on. Not part of what the condition asks (`==`).
    public var seen: ObjectMetadata?

    public init(
        generation: Int64? = nil, metageneration: Int64? = nil, entityTag: String? = nil, seen: ObjectMetadata? = nil
    ) {
        self.generation = generation
        self.metageneration = metageneration
        self.entityTag = entityTag
        self.seen = seen
    }

    /// Two preconditions are equal when they ask the same of the object.
    public static func == (a: Precondition, b: Precondition) -> Bool {
        a.generation == b.generation && a.metageneration == b.metageneration && a.entityTag == b.entityTag
    }

    /// The state the caller found `object` in, when the condition names that very state (its generation and
    /// metageneration, or its ETag): what a change guarded by it starts from. Nil when the caller gave none.
    public func seenState(of object: ObjectName) -> ObjectMetadata? {
        guard let seen, NameBytes.sameBytes(seen.fullPath, object.rawValue) else { return nil }
        if !seen.hasGenerations { return entityTag != nil && entityTag == seen.entityTag ? seen : nil }
        let named =
            (metageneration == seen.metageneration && (generation ?? seen.generation) == seen.generation)
            || (generation == seen.generation && metageneration == nil)
        return named ? seen : nil
    }

    /// Whether the precondition asks anything (a change without one is never repeated, rule G4).
    public var isConditional: Bool { generation != nil || metageneration != nil || entityTag != nil }

    /// No condition: the change applies to whatever is there.
    public static let none = Precondition()
    /// A create: there must be no object of that name.
    public static let doesNotExist = Precondition(generation: 0)

    /// The object's current state, exactly (generation and metageneration; an S3 object's ETag).
    public static func matches(_ object: ObjectMetadata) -> Precondition {
        guard object.hasGenerations else { return Precondition(entityTag: object.entityTag, seen: object) }
        return Precondition(generation: object.generation, metageneration: object.metageneration, seen: object)
    }

    /// The object's current content (its generation; an S3 object's ETag), whatever became of its metadata: what a
    /// replacing write or a delete is guarded by.
    public static func sameContent(as object: ObjectMetadata) -> Precondition {
        guard object.hasGenerations else { return Precondition(entityTag: object.entityTag, seen: object) }
        return Precondition(generation: object.generation, seen: object)
    }

    /// Whether `object` (nil: absent) satisfies the precondition.
    public func isSatisfied(by object: ObjectMetadata?) -> Bool {
        guard let object else { return generation == nil ? metageneration == nil : generation == 0 }
        if generation == 0 { return false }
        if let generation, generation != object.generation { return false }
        if let metageneration, metageneration != object.metageneration { return false }
        if let entityTag, entityTag != object.entityTag { return false }
        return true
    }
}

/// What a bucket can do beyond the operations every bucket has. Commands that need more are refused before
/// anything runs on a bucket that lacks it (rule B3).
public struct BucketCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Changes can be grouped to land together or not at all (a script is one transaction).
    public static let transactions = BucketCapabilities(rawValue: 1 << 0)
    /// Named states of the whole bucket (`snapshot …`).
    public static let snapshots = BucketCapabilities(rawValue: 1 << 1)
    /// The bucket keeps its security rules, and storesh may change them (`rules load`).
    public static let rulesAdministration = BucketCapabilities(rawValue: 1 << 2)
    /// Whole-bucket export and import, including `import --replace`.
    public static let archives = BucketCapabilities(rawValue: 1 << 3)
    /// `storesh check` and `storesh backup`.
    public static let integrityCheck = BucketCapabilities(rawValue: 1 << 4)
    /// Reads that answer without awaiting (Tab completion at the prompt).
    public static let immediateReads = BucketCapabilities(rawValue: 1 << 5)
    /// The bucket's settings are kept in its file, and storesh may change them (`bucket set`).
    public static let bucketSettings = BucketCapabilities(rawValue: 1 << 6)

    /// Names for messages: "snapshots", "rules administration", ….
    public var names: [String] {
        [
            (Self.transactions, "transactions"), (.snapshots, "snapshots"),
            (.rulesAdministration, "rules administration"),
            (.archives, "archives"), (.integrityCheck, "integrity checks"), (.immediateReads, "immediate reads"),
            (.bucketSettings, "settings kept in its file"),
        ]
        .filter { contains($0.0) }.map(\.1)
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

/// A bucket with the semantics of Cloud Storage for Firebase. The local engine implements it, and so do the
/// remote backends; everything above (language, shell, server) talks to a bucket only through it.
///
/// Nothing here has a default implementation: a backend or a layer around one states every answer, so a method it
/// forgot is a compile error, never a silent fallback that (say) reads a whole object into memory or passes a
/// change around a layer's checks. A layer that only passes the bucket's description on declares `BucketLayer`,
/// which forwards the description and nothing that moves data. Conveniences built on these requirements are in the
/// extension below; they are derived, never overridden.
///
/// Every method fails with a `StorageError`.
public protocol Bucket: AnyObject, Sendable {
    // MARK: What the bucket is

    /// The bucket's name, as in `gs://NAME/`.
    var name: String { get }

    /// How the bucket's URLs start: `gs` (a local bucket has Firebase's names), `s3` for an S3 bucket.
    var scheme: String { get }

    /// How this bucket writes page tokens (`page token` decodes them for a class).
    var pageTokens: any PageTokenFormat { get }

    /// A real bucket: where its requests go and whose credentials they carry (`whoami`); nil for a local one.
    var accessDescription: String? { get }

    /// False when the bucket cannot make a change conditional on the object's state (the Firebase v0 API has no
    /// preconditions): plans then say that a concurrent change may be overwritten.
    var guardsChanges: Bool { get }

    /// Refuses metadata this bucket cannot store as it is (S3 keeps custom keys in lower case, in at most 2 KB;
    /// rule S2), naming the limit, before any request: so a plan fails at the command that made it.
    func validateStorable(_ metadata: ObjectMetadata) throws

    /// The storage classes this bucket's objects may be given (rule M9), by its service's names: a command that
    /// names another is refused before anything runs.
    var storageClasses: StorageClasses { get }

    /// Ends the use of the bucket: a local one is left as one file, a remote one closes its connections.
    /// Every way out of a program that opened a bucket closes it; closing twice does nothing.
    func close()

    // MARK: The data path

    /// One page of the delimiter listing of `reference` (rules L1–L10). With `options.includeMetadata`, the
    /// page carries each item's metadata, read with the page (one request, as the service's list is).
    func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage

    /// Objects whose names start with `prefix` (no delimiter), in byte order, strictly after `after`,
    /// at most `limit` of them. This is what patterns (`**`) and bulk edits walk.
    func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage

    /// The metadata of one object (rule M8: object-not-found when absent).
    func metadata(of object: ObjectName) async throws -> ObjectMetadata

    /// The object's content, whole: what `cat` prints and a rules file holds. `get` and copies stream.
    func read(_ object: ObjectName) async throws -> Data

    /// Writes the object's content into `sink` a piece at a time, and answers its size: no backend holds it whole.
    func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64

    /// Writes content, creating or replacing the object (rule M3), if the object satisfies `precondition`
    /// (`.doesNotExist` for a create).
    func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata

    /// Writes content read from `source` a piece at a time (a large file), as `write` does; no backend holds it
    /// whole.
    func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata

    /// Applies a partial update (rules M4–M7), if the object satisfies `precondition` (else
    /// precondition-failed, and nothing changes), so a read-modify-write cannot overwrite a concurrent change.
    func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult

    /// Makes the object's writable metadata `after`'s, if the object is still `before` (its generation and
    /// metageneration; else precondition-failed): how a planned change, or a change the rules layer decided, is
    /// applied (rule X2). `after` is stored as it is, not merged again; the bucket stamps its own metageneration and
    /// time on it. A remote bucket does it in one request.
    func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata

    /// Deletes the object if it satisfies `precondition`; object-not-found when absent.
    func delete(_ object: ObjectName, precondition: Precondition) async throws

    // MARK: Capabilities, each a protocol of its own that the bucket hands out when it has it

    /// What this bucket can do beyond the operations above; each capability comes with its accessor below.
    var capabilities: BucketCapabilities { get }
    /// With `.transactions`: the bucket's transactions.
    var transactions: (any TransactionalBucket)? { get }
    /// With `.snapshots`: the bucket's snapshots.
    var snapshotStore: (any SnapshotStore)? { get }
    /// With `.immediateReads`: reads for Tab completion.
    var immediateReads: (any ImmediateReads)? { get }
    /// With `.rulesAdministration`: where the bucket keeps its security rules.
    var rulesStore: (any RulesStore)? { get }
    /// Where the bucket keeps its settings (rule B4): a bucket file's; nil where the service keeps them.
    var settingsStore: (any BucketSettingsStore)? { get }
    /// A bucket that keeps objects' noncurrent generations when its versioning is on (rule B5); nil otherwise.
    var objectVersions: (any ObjectVersions)? { get }
    /// Renames objects in one step (`mv`); nil where the bucket has no such call.
    var objectMoves: (any ObjectMoves)? { get }
    /// A real bucket that can be used as an end user of the app (rule F1); nil otherwise.
    var endUserSignIn: (any EndUserSignIn)? { get }
    /// A bucket that takes many changes in one request (the JSON API's batches, rule Q2); nil otherwise, and
    /// nil once a service has refused them.
    var batchedChanges: (any BatchedChanges)? { get }
    /// A bucket that makes one update on a page of objects in one step, without each object's metadata built and
    /// sent back and forth (a local bucket rewrites the rows in place); nil otherwise, and nil where each object
    /// must be decided on its own (security rules that are not open).
    var uniformUpdates: (any UniformUpdates)? { get }

    /// This bucket as a transaction, when it is one (a layer around it must stay one). A requirement rather than a
    /// cast: `as? any BucketTransaction` searches the whole binary's conformances the first time for each type,
    /// which every cold run paid (issue 23).
    var asTransaction: (any BucketTransaction)? { get }
}

/// A change of a plan as one call of a batch (rule Q2).
public enum BatchedChange: Sendable {
    /// As `applyMetadata(of:from:to:)`: the object's writable metadata made `after`'s, if it is still `before`.
    case metadata(ObjectName, from: ObjectMetadata, to: ObjectMetadata)
    /// As `delete(_:precondition:)`.
    case delete(ObjectName, precondition: Precondition)

    public var object: ObjectName {
        switch self {
        case .metadata(let object, _, _), .delete(let object, _): object
        }
    }
}

/// Changes sent many to a request (rule Q2). Each keeps its own precondition and its own answer: a change that
/// fails inside a batch fails as it would have alone, is sent again only when that is safe, and is reported on
/// its own.
public protocol BatchedChanges: AnyObject, Sendable {
    /// The most changes one request carries.
    var largestBatch: Int { get }

    /// Sends `changes` (at most `largestBatch`, each object at most once); answers, in their order, the state
    /// each change left (nil: deleted) or why it failed.
    func send(_ changes: [BatchedChange]) async -> [Result<ObjectMetadata?, StorageError>]
}

/// One metadata update made on every object a scan page holds and the caller picks, in one step: what `meta set`
/// and `meta unset` over a pattern do on a bucket that has it. The outcome of each object is exactly that of
/// `updateMetadata(of:_:precondition:)` on the object as the page found it (rules M4–M7: a change that changes
/// nothing is none, a change bumps the metageneration and stamps the time, the limits of custom metadata hold);
/// only the way there is shorter. A change of storage class (a rewrite, rule M9) is not made this way.
public protocol UniformUpdates: AnyObject, Sendable {
    /// Walks the objects whose names start with `prefix`, in byte order, strictly after `after`, at most `limit`
    /// of them (as `scan` does), and applies `update` to each whose name `picking` accepts. Answers the outcome of
    /// each object picked, in order, up to and including the first that failed (the page stops there; the
    /// changes before it are made, and are the caller's to keep or undo).
    func updatePage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage

    /// What `updatePage` would answer, with nothing changed: a dry run's uniform update.
    func previewPage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage
}

/// The outcome of one page of a uniform update.
public struct UniformUpdatePage: Sendable {
    public var outcomes: [UniformUpdateOutcome]
    /// The name to pass as `after` for the next page; nil at the end of the walk (or at a failure).
    public var resumeAfter: String?

    public init(outcomes: [UniformUpdateOutcome], resumeAfter: String?) {
        self.outcomes = outcomes
        self.resumeAfter = resumeAfter
    }
}

/// What a uniform update did to one object.
public enum UniformUpdateOutcome: Sendable, Equatable {
    /// Changed: the object's name and what changed, as `ObjectMetadata.differences(to:)` says it.
    case updated(String, [PropertyDifference])
    /// The update would have changed nothing, so nothing changed (rule M4).
    case unchanged(String)
    /// The update is refused for this object (the limits of rule M5, say); nothing of it changed.
    case failed(String, StorageError)
}

/// A bucket around another (`inner`) that passes the inner bucket's description on as its own: its name, scheme,
/// page tokens, access, guards and storable limits. Everything that moves data, the capabilities (each a way to
/// data) and `close` stay the layer's to state, so that a layer cannot pass a change or a read around itself by
/// forgetting a method.
public protocol BucketLayer: Bucket {
    /// The bucket this one is layered on (for a layer that switches buckets, the one in force now).
    var inner: any Bucket { get }
}

extension BucketLayer {
    public var name: String { inner.name }
    public var scheme: String { inner.scheme }
    public var pageTokens: any PageTokenFormat { inner.pageTokens }
    public var accessDescription: String? { inner.accessDescription }
    public var guardsChanges: Bool { inner.guardsChanges }
    public func validateStorable(_ metadata: ObjectMetadata) throws { try inner.validateStorable(metadata) }
    public var storageClasses: StorageClasses { inner.storageClasses }
}

extension Bucket {
    /// A change of a batch sent alone: the state it left (nil: deleted).
    public func apply(_ change: BatchedChange) async throws -> ObjectMetadata? {
        switch change {
        case .metadata(let object, let before, let after):
            return try await applyMetadata(of: object, from: before, to: after)
        case .delete(let object, let precondition):
            try await delete(object, precondition: precondition)
            return nil
        }
    }

    /// `gs://NAME`, `s3://NAME`: the bucket in messages.
    public var url: String { "\(scheme)://\(name)" }

    /// `applyMetadata` as an update guarded by `before`'s exact state: for a bucket whose update already takes a
    /// precondition in the same step (a local one, a plan).
    public func updateByPrecondition(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    )
        async throws -> ObjectMetadata
    {
        try await updateMetadata(of: object, MetadataUpdate(from: before, to: after), precondition: .matches(before))
            .metadata
    }

    /// An update as a remote bucket makes it (rules M4–M6): read the object, check `precondition` against it, merge
    /// the update, and send the result with `applyMetadata`, itself guarded by the state read, so that a
    /// read-modify-write never overwrites a concurrent change. An update that would change nothing sends nothing.
    public func updateByReadingThenApplying(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        let before = try await metadata(of: object)
        guard precondition.isSatisfied(by: before) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: before)
        }
        let (planned, changed) = try before.applying(update, now: before.updated)
        guard changed else { return UpdateResult(metadata: before, previous: before, changed: false) }
        let after = try await applyMetadata(of: object, from: before, to: planned)
        return UpdateResult(metadata: after, previous: before, changed: true)
    }

    /// An update with a precondition on the metageneration only (or none).
    public func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, ifMetagenerationMatch: Int64? = nil
    )
        async throws -> UpdateResult
    {
        try await updateMetadata(of: object, update, precondition: Precondition(metageneration: ifMetagenerationMatch))
    }

    /// A write whatever is there.
    public func write(
        _ content: Data, to object: ObjectName, options: WriteOptions = WriteOptions()
    ) async throws
        -> ObjectMetadata
    {
        try await write(content, to: object, options: options, precondition: .none)
    }

    /// The object's metadata, or nil when there is no such object (other failures are thrown).
    public func metadataIfPresent(of object: ObjectName) async throws -> ObjectMetadata? {
        do {
            return try await metadata(of: object)
        } catch let error as StorageError where error.code == .objectNotFound {
            return nil
        }
    }

    /// A delete whatever is there.
    public func delete(_ object: ObjectName) async throws {
        try await delete(object, precondition: .none)
    }

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

/// Signing in to a real bucket as an end user of the app (rule F1): requests then go through the Firebase Storage
/// API, where the project's security rules decide, as they do for the apps. A user is made without being signed in
/// (`user(idToken:)`), so that a layer can decide what a sign-in means in it: a plan records it, reads as that user
/// (`reads(as:)`) and leaves the bucket's sign-in alone until its changes are applied.
public protocol EndUserSignIn: AnyObject, Sendable {
    /// The user a Firebase ID token signs in, not signed in yet.
    func user(idToken: String) throws(StorageError) -> any SignedInUser
    /// Against an emulator only: the user of an unsigned emulator token for `uid` (claims `true`, `false` and
    /// numbers typed), as the Firebase emulator suite makes one; not signed in yet.
    func user(uid: String, claims: [String: String]) throws(StorageError) -> any SignedInUser
    /// Who is signed in now (nil: no one; requests are the bucket's own), as `restore(_:)` takes it back: a line or
    /// a script whose sign-in does not land (a dry run, a failure) puts the one before it back.
    var signedInUser: (any SignedInUser)? { get }
    /// Makes `user` (nil: no one, the bucket's own credentials) the one signed in.
    func restore(_ user: (any SignedInUser)?)
    /// The bucket as `user` reads it (nil: with the bucket's own credentials), whoever is signed in.
    func reads(as user: (any SignedInUser)?) -> any Bucket
    /// What the service answered the signed-in user's last request (`rules why` on a real bucket); nil before one
    /// or when signed out.
    var lastAnswer: ServiceAnswer? { get }
}

extension EndUserSignIn {
    /// Signs in with a Firebase ID token; answers who is signed in, for messages (never the token).
    public func signIn(idToken: String) throws(StorageError) -> String {
        let user = try user(idToken: idToken)
        restore(user)
        return user.who
    }

    /// Against an emulator only: signs in with an unsigned emulator token for `uid`.
    public func signIn(uid: String, claims: [String: String]) throws(StorageError) -> String {
        let user = try user(uid: uid, claims: claims)
        restore(user)
        return user.who
    }

    /// Back to the bucket's own credentials.
    public func signOut() { restore(nil) }
}

/// Someone signed in to a real bucket (`EndUserSignIn`): kept whole, to be put back as it was.
public protocol SignedInUser: AnyObject, Sendable {
    /// Who, for messages (never the token).
    var who: String { get }
}

/// A real service's answer to an end user's request: the service's security rules decided it, not storesh.
public struct ServiceAnswer: Sendable {
    /// `GET gs://BUCKET/NAME`, as people read it.
    public var request: String
    public var status: Int
    /// The decision in words, when the server says it: `storesh serve` does (`X-Storesh-Rules`); Cloud Storage
    /// gives only the status.
    public var decision: String?

    public init(request: String, status: Int, decision: String?) {
        self.request = request
        self.status = status
        self.decision = decision
    }
}

/// How a transaction ends when its work returns: its changes land, or are forgotten (a dry run, a failure).
public enum TransactionOutcome<Value> {
    case commit(Value)
    case rollback(Value)
}

/// A bucket whose changes can be grouped so they land together or not at all: a script is one transaction
/// (contract, Scripts).
public protocol TransactionalBucket: Bucket {
    /// Runs `body` in a transaction of its own: a bucket value that sees its own changes, which no one else sees
    /// until `body` returns `.commit`; `.rollback`, or an error thrown by `body`, forgets them all. The value is
    /// `body`'s alone and unusable afterwards; other users of this bucket (another request of a server, Tab
    /// completion) are never inside it. `forWriting: false` promises no change: other writers are not blocked,
    /// and a bucket the user may not write can still be read.
    func withTransaction<Value>(
        forWriting: Bool, _ body: (any BucketTransaction) async throws -> TransactionOutcome<Value>
    ) async throws -> Value
}

/// The bucket a transaction's work runs on.
public protocol BucketTransaction: Bucket {
    /// Runs `body` as one step of the transaction: when it throws, the step's changes are undone and the
    /// transaction goes on with those of earlier steps (a script's `--keep-going`: a bulk edit whose 300th object
    /// fails is undone alone).
    func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value
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

/// Where long work counts what it has done, for a progress line on a terminal (`ProgressMeter`). Work that takes
/// one calls `begin`, `advance` as it goes (from one task at a time), and `end`.
public protocol WorkCounter: AnyObject, Sendable {
    /// A piece of work starts: what it does, as a line starts ("exporting"), how many there are, when known, and of
    /// what (`object`, `record`: counted as "1,000 records").
    func begin(_ activity: String, total: Int?, unit: String)
    /// `count` more are done, `failed` of them failed.
    func advance(by count: Int, failed: Int)
    /// The work ended (its line goes).
    func end()
}

extension WorkCounter {
    public func begin(_ activity: String, total: Int?) { begin(activity, total: total, unit: "object") }
    public func advance() { advance(by: 1, failed: 0) }
}
