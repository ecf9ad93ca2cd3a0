import Foundation
import StoreshCore

/// A transaction on a bucket file, for the work only the file's owner does (the emulator's reset), which no storage
/// API has and the `Bucket` interface therefore does not carry.
public protocol BucketFileTransaction: BucketTransaction {
    /// The bucket file, inside the transaction.
    var file: LocalBucket { get }
}

/// One transaction on a local bucket: the value `LocalBucket.withTransaction` hands its work. Everything runs
/// on the transaction's own engine (a `LocalBucket` in an explicit SQLite transaction on a row store the transaction
/// has to itself while it runs), so nothing else that uses the bucket meanwhile is inside it.
final class LocalTransaction: BucketTransaction, BucketLayer, BucketFileTransaction, @unchecked Sendable {
    let engine: LocalBucket

    /// The bucket file's engine, inside this transaction: what the file's owner does (`removeEverything`).
    public var file: LocalBucket { engine }

    init(engine: LocalBucket) {
        self.engine = engine
    }

    var inner: any Bucket { engine }
    var capabilities: BucketCapabilities { engine.capabilities.subtracting(.transactions) }
    var transactions: (any TransactionalBucket)? { nil }
    var snapshotStore: (any SnapshotStore)? { engine }
    var immediateReads: (any ImmediateReads)? { engine }
    var rulesStore: (any RulesStore)? { engine }
    var settingsStore: (any BucketSettingsStore)? { engine }
    var objectVersions: (any ObjectVersions)? { engine }
    var objectMoves: (any ObjectMoves)? { engine }
    var endUserSignIn: (any EndUserSignIn)? { nil }
    var batchedChanges: (any BatchedChanges)? { nil }
    var uniformUpdates: (any UniformUpdates)? { engine }
    var asTransaction: (any BucketTransaction)? { self }

    func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value {
        try engine.beginCommand()
        do {
            let value = try await body()
            try engine.endCommand()
            return value
        } catch {
            try? engine.undoCommand()
            throw error
        }
    }

    func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        try await engine.list(reference, options: options)
    }

    func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        try await engine.metadata(of: object)
    }

    func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        try await engine.updateMetadata(of: object, update, precondition: precondition)
    }

    func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        try await engine.write(content, to: object, options: options, precondition: precondition)
    }

    func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try await engine.write(from: source, to: object, options: options, precondition: precondition)
    }

    func read(_ object: ObjectName) async throws -> Data {
        try await engine.read(object)
    }

    func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        try await engine.read(object, into: sink)
    }

    func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        try await engine.applyMetadata(of: object, from: before, to: after)
    }

    func delete(_ object: ObjectName, precondition: Precondition) async throws {
        try await engine.delete(object, precondition: precondition)
    }

    func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        try await engine.scan(prefix: prefix, after: after, limit: limit)
    }

    /// A transaction ends with its work; closing it early would leave its outcome undecided.
    func close() {}
}
