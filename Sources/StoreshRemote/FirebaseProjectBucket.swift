import Foundation
import StoreshCore
import Synchronization

/// A `gs://` bucket as a session uses it: through the Cloud Storage JSON API with the bucket's credentials
/// (`CloudStorageBucket`), until `login` makes requests an end user's, through the Firebase v0 API where the
/// project's security rules decide (`FirebaseStorageBucket`, rule F1); `logout` goes back. Each mode is a bucket
/// of its own; this one forwards every request to the one in force, and keeps Tab completion's short-lived reads,
/// forgotten at every change and every sign-in.
package final class FirebaseProjectBucket: BucketLayer, EndUserSignIn, @unchecked Sendable {
    /// The bucket through the JSON API, with the credentials found (rule G2).
    package let administrator: CloudStorageBucket
    private let signedIn = Mutex<FirebaseStorageBucket?>(nil)
    /// The service's answer to the signed-in user's last request.
    private let answers = LastServiceAnswer()
    private var completions: CompletionReads!

    package init(_ administrator: CloudStorageBucket) {
        self.administrator = administrator
        completions = CompletionReads(bucket: self)
    }

    /// The bucket requests go to now.
    var current: any Bucket { signedIn.withLock { $0 } ?? administrator }
    package var inner: any Bucket { current }

    package var capabilities: BucketCapabilities { [.immediateReads] }
    package var endUserSignIn: (any EndUserSignIn)? { self }
    /// The JSON API's batches, while requests are the administrator's: the Firebase v0 API has none, so a
    /// signed-in user's changes go one by one.
    package var batchedChanges: (any BatchedChanges)? {
        guard signedIn.withLock({ $0 }) == nil, let batches = administrator.batchedChanges else { return nil }
        return CompletionForgettingBatches(batches, completions: completions)
    }
    package var uniformUpdates: (any UniformUpdates)? { nil }
    package var immediateReads: (any ImmediateReads)? { completions }
    package var transactions: (any TransactionalBucket)? { nil }
    package var snapshotStore: (any SnapshotStore)? { nil }
    package var rulesStore: (any RulesStore)? { nil }
    package var settingsStore: (any BucketSettingsStore)? { nil }
    /// The administrator's (the JSON API names generations); none while signed in (the v0 API names none).
    package var objectVersions: (any ObjectVersions)? {
        current.objectVersions.map { CompletionForgettingVersions($0, completions: completions) }
    }
    /// The administrator's (the JSON API's objects.move); none while signed in (the v0 API has none).
    package var objectMoves: (any ObjectMoves)? {
        current.objectMoves.map { CompletionForgettingMoves($0, completions: completions) }
    }
    package var asTransaction: (any BucketTransaction)? { nil }
    /// The signed-in mode shares the administrator's connections: closed with it.
    package func close() { administrator.close() }

    /// Checks that the bucket is there and the credentials work (rule B2).
    package func verify() async throws { try await administrator.verify() }

    package func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        try await current.list(reference, options: options)
    }

    package func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        try await current.scan(prefix: prefix, after: after, limit: limit)
    }

    package func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        try await current.metadata(of: object)
    }

    package func read(_ object: ObjectName) async throws -> Data { try await current.read(object) }

    package func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        try await current.read(object, into: sink)
    }

    // Changes: what completion read before may be stale after.

    package func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        defer { completions.forget() }
        return try await current.updateMetadata(of: object, update, precondition: precondition)
    }

    package func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        defer { completions.forget() }
        return try await current.applyMetadata(of: object, from: before, to: after)
    }

    package func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        defer { completions.forget() }
        return try await current.write(content, to: object, options: options, precondition: precondition)
    }

    package func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        defer { completions.forget() }
        return try await current.write(from: source, to: object, options: options, precondition: precondition)
    }

    package func delete(_ object: ObjectName, precondition: Precondition) async throws {
        defer { completions.forget() }
        try await current.delete(object, precondition: precondition)
    }

    // MARK: Signing in (rule F1)

    private func user(_ user: EndUser) -> any SignedInUser {
        FirebaseStorageBucket(
            bucket: name, baseURL: administrator.firebaseBaseURL, http: administrator.http, user: user, answers: answers
        )
    }

    package func user(idToken: String) throws(StorageError) -> any SignedInUser {
        let token = idToken.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty, !token.contains(" ") else {
            throw .invalidArgument("An ID token is one word (a JWT, as the Firebase SDKs' getIdToken() gives it).")
        }
        return user(EndUser(idToken: token, uid: EndUser.uid(of: token), emulatorToken: false))
    }

    package func user(uid: String, claims: [String: String]) throws(StorageError) -> any SignedInUser {
        guard administrator.endpoint.isEmulator else {
            throw .invalidArgument(
                "login UID makes an unsigned emulator token, which only an emulator accepts; on a real project sign in with login --id-token TOKEN (a user's Firebase ID token)."
            )
        }
        let project = Self.projectID(ofBucket: name)
        return user(
            EndUser(
                idToken: EndUser.emulatorToken(uid: uid, claims: claims, project: project), uid: uid,
                emulatorToken: true))
    }

    package var lastAnswer: ServiceAnswer? { answers.last }

    package var signedInUser: (any SignedInUser)? { signedIn.withLock { $0 } }

    package func restore(_ user: (any SignedInUser)?) {
        answers.keep(nil)
        signedIn.withLock { $0 = user as? FirebaseStorageBucket }
        completions.forget()
    }

    package func reads(as user: (any SignedInUser)?) -> any Bucket { (user as? FirebaseStorageBucket) ?? administrator }

    /// The Firebase project a default bucket belongs to (`my-app.appspot.com`, `my-app.firebasestorage.app`).
    static func projectID(ofBucket bucket: String) -> String {
        for suffix in [".appspot.com", ".firebasestorage.app"] where bucket.hasSuffix(suffix) {
            return String(bucket.dropLast(suffix.count))
        }
        return bucket
    }
}

/// The administrator's batches, through the layer that keeps Tab completion's reads: a batch's changes make what
/// completion read before stale, as every other change does.
final class CompletionForgettingBatches: BatchedChanges, @unchecked Sendable {
    private let batches: any BatchedChanges
    private let completions: CompletionReads

    init(_ batches: any BatchedChanges, completions: CompletionReads) {
        self.batches = batches
        self.completions = completions
    }

    var largestBatch: Int { batches.largestBatch }

    func send(_ changes: [BatchedChange]) async -> [Result<ObjectMetadata?, StorageError>] {
        defer { completions.forget() }
        return await batches.send(changes)
    }
}

/// A bucket's generations whose changes (a restore, a change of one generation) forget Tab completion's reads, as the
/// bucket's own changes do.
final class CompletionForgettingVersions: ObjectVersions, @unchecked Sendable {
    private let versions: any ObjectVersions
    private let completions: CompletionReads

    init(_ versions: any ObjectVersions, completions: CompletionReads) {
        self.versions = versions
        self.completions = completions
    }

    func generation(named text: String) -> ObjectGeneration? { versions.generation(named: text) }

    func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await versions.metadata(of: object, generation: generation)
    }

    func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata {
        try await versions.read(object, generation: generation, into: sink)
    }

    func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await versions.softDeletedMetadata(of: object, generation: generation)
    }

    func hasNoncurrentGenerations() async throws -> Bool { try await versions.hasNoncurrentGenerations() }

    func deletionsKept() async throws -> DeletionKeeping { try await versions.deletionsKept() }

    func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool
    ) async throws -> ListPage {
        try await versions.listGenerations(
            prefix: prefix, delimited: delimited, options: options, softDeleted: softDeleted)
    }

    func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        defer { completions.forget() }
        return try await versions.updateMetadata(of: object, generation: generation, update, precondition: precondition)
    }

    func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws {
        defer { completions.forget() }
        try await versions.delete(object, generation: generation, precondition: precondition)
    }

    func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata {
        defer { completions.forget() }
        return try await versions.restore(object, generation: generation, precondition: precondition)
    }
}

/// Moves that make Tab completion read the bucket again, as every other change does.
final class CompletionForgettingMoves: ObjectMoves, @unchecked Sendable {
    private let moves: any ObjectMoves
    private let completions: CompletionReads
    var movesInOneStep: Bool { moves.movesInOneStep }

    init(_ moves: any ObjectMoves, completions: CompletionReads) {
        self.moves = moves
        self.completions = completions
    }

    func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        defer { completions.forget() }
        return try await moves.move(
            source, to: destination, sourcePrecondition: sourcePrecondition,
            destinationPrecondition: destinationPrecondition)
    }
}
