import Foundation
import StoreshCore

/// Security rules around any bucket: every request made through it is decided by its session's rules before it
/// reaches the bucket, and before the object is looked for (rule R3: a denied `get` of a missing object is
/// unauthorized, not object-not-found).
///
/// A decision that depends on the object (`resource`, `request.resource`) is made on the object as read here,
/// and the change then goes down with a precondition on exactly that state, so a concurrent change cannot slip
/// between the decision and the change. An object whose state the change carries (`Precondition.seen`: a
/// pattern's match as its scan found it) is not read again: the change is decided on that state, and refused by
/// the bucket if the object is no longer in it.
///
/// Snapshots and rules administration pass through undecided: rules do not apply to them.
class RulesLayer: BucketLayer, TransactionalBucket, @unchecked Sendable {
    let inner: any Bucket
    let session: RulesSession

    init(_ inner: any Bucket, session: RulesSession) {
        self.inner = inner
        self.session = session
    }

    var capabilities: BucketCapabilities { inner.capabilities }
    var transactions: (any TransactionalBucket)? { inner.transactions == nil ? nil : self }
    var snapshotStore: (any SnapshotStore)? { inner.snapshotStore }
    var rulesStore: (any RulesStore)? { inner.rulesStore }
    /// A bucket's settings are its administrator's: no security rule decides them.
    var settingsStore: (any BucketSettingsStore)? { inner.settingsStore }
    /// Security rules name objects, not their generations (Firebase's SDKs have none to name): a noncurrent generation
    /// is the administrator's, reached only while the rules are open (the administrator's bucket), as the service's
    /// generations are reached by IAM, not by rules.
    var objectVersions: (any ObjectVersions)? { session.isOpen ? inner.objectVersions : nil }
    /// A move is decided as what it does (rule R2): a `get` of the source, a `create` of the destination, a `delete` of
    /// the source; then made in one step by the bucket, guarded by the states decided on.
    var objectMoves: (any ObjectMoves)? { inner.objectMoves.map { DecidedMoves(inner: $0, layer: self) } }
    var endUserSignIn: (any EndUserSignIn)? { inner.endUserSignIn }
    /// Each change is decided on its own; none goes around the rules in a batch.
    var batchedChanges: (any BatchedChanges)? { nil }
    /// Only while the rules are open (the administrator's bucket) and no one watches each decision (a server's
    /// trace), where a decision depends on nothing of the object.
    var uniformUpdates: (any UniformUpdates)? {
        guard session.isOpen, !session.isObserved, let inner = inner.uniformUpdates else { return nil }
        return DecidedUniformUpdates(inner: inner, layer: self)
    }
    /// Overridden by the layer around a transaction, which is one.
    var asTransaction: (any BucketTransaction)? { nil }
    var immediateReads: (any ImmediateReads)? {
        inner.immediateReads.map { GuardedImmediateReads(inner: $0, session: session) }
    }

    func close() { inner.close() }

    func withTransaction<Value>(
        forWriting: Bool, _ body: (any BucketTransaction) async throws -> TransactionOutcome<Value>
    ) async throws -> Value {
        guard let transactions = inner.transactions else {
            throw StorageError.invalidArgument("\(url) has no transactions.")
        }
        return try await transactions.withTransaction(forWriting: forWriting) { transaction in
            try await body(RulesLayerTransaction(transaction, session: self.session))
        }
    }

    // MARK: Reads

    func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        try check(.list, reference.fullPath)
        return try await inner.list(reference, options: options)
    }

    func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        // Walking names under a prefix is a listing of the folder it starts in.
        try check(.list, NameBytes.folder(ofPrefix: prefix))
        return try await inner.scan(prefix: prefix, after: after, limit: limit)
    }

    func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        if session.isOpen {
            try check(.get, object.rawValue)
            return try await inner.metadata(of: object)
        }
        let existing = try await inner.metadataIfPresent(of: object)
        try check(.get, object.rawValue, existing: existing)
        guard let existing else { throw StorageError.objectNotFound(object.rawValue) }
        return existing
    }

    func read(_ object: ObjectName) async throws -> Data {
        try await decideRead(object)
        return try await inner.read(object)
    }

    /// Streamed: decided as `read` is, then the content goes from the bucket to `sink` a piece at a time.
    func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        try await decideRead(object)
        return try await inner.read(object, into: sink)
    }

    /// A read is `get` (rule R2), decided on the object as it is when the rules need it.
    private func decideRead(_ object: ObjectName) async throws {
        guard !session.isOpen else { return try check(.get, object.rawValue) }
        let existing = try await inner.metadataIfPresent(of: object)
        try check(.get, object.rawValue, existing: existing)
        guard existing != nil else { throw StorageError.objectNotFound(object.rawValue) }
    }

    // MARK: Changes

    /// Streamed: the rules see the resource as the write will make it, known by the source's size and MD5.
    func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        if session.isOpen {
            try check(.create, object.rawValue)
            return try await inner.write(from: source, to: object, options: options, precondition: precondition)
        }
        let existing = try await inner.metadataIfPresent(of: object)
        let new = session.prospective(
            object, in: name, size: source.size, md5Hash: source.md5Base64, options: options, existing: existing)
        try check(.create, object.rawValue, new: new, existing: existing)
        try require(precondition, of: object, existing)
        let decided = existing.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
        return try await inner.write(from: source, to: object, options: options, precondition: decided)
    }

    func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        if session.isOpen {
            try check(.update, object.rawValue)
            return try await inner.updateMetadata(of: object, update, precondition: precondition)
        }
        let seen = precondition.seenState(of: object)
        guard let existing = try await seen.asyncOr({ try await inner.metadataIfPresent(of: object) }) else {
            try check(.update, object.rawValue)
            throw StorageError.objectNotFound(object.rawValue)
        }
        // Computed once: the state decided on is the state sent down, which the bucket stores as it is (its own
        // metageneration and time stamped on it).
        let (next, changed) = try existing.applying(update, now: session.clock.now())
        try check(.update, object.rawValue, new: next, existing: existing)
        try require(precondition, of: object, existing)
        guard changed else { return UpdateResult(metadata: existing, previous: existing, changed: false) }
        let stored = try await inner.applyMetadata(of: object, from: existing, to: next)
        return UpdateResult(metadata: stored, previous: existing, changed: true)
    }

    /// A planned change applied under rules: decided as the update it is, on the object as read here (rule X2).
    func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        try await updateByPrecondition(of: object, from: before, to: after)
    }

    func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        if session.isOpen {
            try check(.create, object.rawValue)
            return try await inner.write(content, to: object, options: options, precondition: precondition)
        }
        let existing = try await inner.metadataIfPresent(of: object)
        let new = session.prospective(
            object, in: name, size: Int64(content.count), md5Hash: ContentHash.md5Base64(content), options: options,
            existing: existing)
        // Rule R2: writing content, new or over an existing object, is `create`.
        try check(.create, object.rawValue, new: new, existing: existing)
        try require(precondition, of: object, existing)
        let decided = existing.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
        return try await inner.write(content, to: object, options: options, precondition: decided)
    }

    func delete(_ object: ObjectName, precondition: Precondition) async throws {
        if session.isOpen {
            try check(.delete, object.rawValue)
            return try await inner.delete(object, precondition: precondition)
        }
        let seen = precondition.seenState(of: object)
        let existing = try await seen.asyncOr({ try await inner.metadataIfPresent(of: object) })
        try check(.delete, object.rawValue, existing: existing)
        guard let existing else { throw StorageError.objectNotFound(object.rawValue) }
        try require(precondition, of: object, existing)
        try await inner.delete(object, precondition: .sameContent(as: existing))
    }

    /// A move decided as a `get` and a `delete` of the source and a `create` of the destination.
    fileprivate func decideMove(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    ) async throws -> (source: Precondition, destination: Precondition) {
        if session.isOpen {
            try check(.get, source.rawValue)
            try check(.create, destination.rawValue)
            try check(.delete, source.rawValue)
            return (sourcePrecondition, destinationPrecondition)
        }
        let seen = sourcePrecondition.seenState(of: source)
        guard let existing = try await seen.asyncOr({ try await inner.metadataIfPresent(of: source) }) else {
            try check(.get, source.rawValue)
            throw StorageError.objectNotFound(source.rawValue)
        }
        try check(.get, source.rawValue, existing: existing)
        try require(sourcePrecondition, of: source, existing)
        let replaced = try await inner.metadataIfPresent(of: destination)
        let new = existing.moved(to: destination, generation: existing.generation, now: session.clock.now())
        try check(.create, destination.rawValue, new: new, existing: replaced)
        try require(destinationPrecondition, of: destination, replaced)
        try check(.delete, source.rawValue, existing: existing)
        return (.matches(existing), replaced.map { .sameContent(as: $0) } ?? .doesNotExist)
    }

    // MARK: Helpers

    fileprivate func check(
        _ method: AccessMethod, _ path: String, new: ObjectMetadata? = nil, existing: ObjectMetadata? = nil
    ) throws {
        try session.check(method, bucket: name, path: path, new: new, existing: existing)
    }

    /// The caller's own precondition, checked against the state the decision was made on.
    private func require(_ precondition: Precondition, of object: ObjectName, _ existing: ObjectMetadata?) throws {
        guard precondition.isSatisfied(by: existing) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing)
        }
    }
}

/// The rules layer around a transaction: the same decisions, and the transaction's savepoints.
final class RulesLayerTransaction: RulesLayer, BucketTransaction, @unchecked Sendable {
    private let transaction: any BucketTransaction

    init(_ transaction: any BucketTransaction, session: RulesSession) {
        self.transaction = transaction
        super.init(transaction, session: session)
    }

    override var asTransaction: (any BucketTransaction)? { self }

    func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value {
        try await transaction.withSavepoint(body)
    }
}

/// A uniform update through the rules layer while the rules are open. The walk is decided as `scan` is (stored
/// rules that cannot be used refuse it, and so everything, before anything changes); every update is then allowed
/// whatever its object, so the page's updates are decided as one: the last, as `updateMetadata` decides it, which is
/// also the request `rules why` explains afterwards, as it would after one update per object. (Deciding each of a
/// million objects on its own cost a tenth of the edit, for the same answer.)
final class DecidedUniformUpdates: UniformUpdates, Sendable {
    let inner: any UniformUpdates
    let layer: RulesLayer

    init(inner: any UniformUpdates, layer: RulesLayer) {
        self.inner = inner
        self.layer = layer
    }

    func updatePage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try await page(writing: true, prefix: prefix, after: after, limit: limit, update, picking: picking)
    }

    func previewPage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try await page(writing: false, prefix: prefix, after: after, limit: limit, update, picking: picking)
    }

    /// A page's update (or its preview) as the rules decide it: the listing of its folder, and the update of the
    /// last object picked (open rules decide every object alike).
    private func page(
        writing: Bool, prefix: String, after: String?, limit: Int, _ update: MetadataUpdate,
        picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try layer.check(.list, NameBytes.folder(ofPrefix: prefix))
        var lastPicked: String?
        let page = try await (writing ? inner.updatePage : inner.previewPage)(prefix, after, limit, update) { name in
            guard try picking(name) else { return false }
            lastPicked = name
            return true
        }
        if let lastPicked { try layer.check(.update, lastPicked) }
        return page
    }
}

/// Tab completion's reads under the rules: decided, never recorded (Tab does not change what `rules why` explains).
struct GuardedImmediateReads: ImmediateReads {
    let inner: any ImmediateReads
    let session: RulesSession

    var name: String { inner.name }

    func listPage(_ reference: StoragePath, options: ListOptions) throws(StorageError) -> ListPage {
        try decided(.list, reference.fullPath)
        return try inner.listPage(reference, options: options)
    }

    func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata {
        let existing = try? inner.currentMetadata(of: object)
        try decided(.get, object.rawValue, existing: existing)
        guard let existing else { throw .objectNotFound(object.rawValue) }
        return existing
    }

    func snapshotNames() throws(StorageError) -> [String] { try inner.snapshotNames() }

    private func decided(_ method: AccessMethod, _ path: String, existing: ObjectMetadata? = nil) throws(StorageError) {
        do {
            try session.check(method, bucket: inner.name, path: path, existing: existing, record: false)
        } catch let error as StorageError {
            throw error
        } catch {
            throw .internalError("\(error)")
        }
    }
}

extension Optional {
    /// The value, or what `fallback` finds (`??` with an async right side).
    fileprivate func asyncOr(_ fallback: () async throws -> Wrapped?) async rethrows -> Wrapped? {
        if let self { return self }
        return try await fallback()
    }
}

/// Moves through the rules layer: each decided before the bucket makes it.
private final class DecidedMoves: ObjectMoves, @unchecked Sendable {
    let inner: any ObjectMoves
    let layer: RulesLayer
    var movesInOneStep: Bool { inner.movesInOneStep }

    init(inner: any ObjectMoves, layer: RulesLayer) {
        self.inner = inner
        self.layer = layer
    }

    func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        let decided = try await layer.decideMove(
            source, to: destination, sourcePrecondition: sourcePrecondition,
            destinationPrecondition: destinationPrecondition)
        return try await inner.move(
            source, to: destination, sourcePrecondition: decided.source, destinationPrecondition: decided.destination)
    }
}
