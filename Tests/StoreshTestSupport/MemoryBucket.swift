import Foundation
import StoreshCore

/// A bucket in memory with no transactions, as a remote one is: each change lands when it is made. It counts
/// every request that changes something, so tests can prove that a dry run sends none. It keeps snapshots (as
/// copies) and rules, so that every changing command of the language has something to change.
public final class MemoryBucket: Bucket, SnapshotStore, RulesStore, @unchecked Sendable {
    public var pageTokens: any PageTokenFormat { TestPageTokens() }
    public let name: String
    private let clock: any StorageClock
    /// Apply sends changes from many tasks at once: every access to the objects holds the lock.
    private let lock = NSLock()
    private var storedObjects: [String: (metadata: ObjectMetadata, content: Data)] = [:]
    private var objects: [String: (metadata: ObjectMetadata, content: Data)] {
        get { lock.withLock { storedObjects } }
        _modify {
            lock.lock()
            defer { lock.unlock() }
            yield &storedObjects
        }
    }
    private var saved: [(info: SnapshotInfo, objects: [String: (metadata: ObjectMetadata, content: Data)])] = []
    private var rules: (source: String, origin: String)?
    /// Every request that changed (or tried to change) something, as "METHOD NAME".
    public var changeRequests: [String] { lock.withLock { recordedRequests } }
    private var recordedRequests: [String] = []

    public init(
        name: String = "memory",
        clock: any StorageClock = SteppingClock(start: Timestamp(rfc3339: "2026-11-21T09:30:00Z")!)
    ) {
        self.name = name
        self.clock = clock
    }

    /// Objects put in place without counting as requests (the test's starting state).
    public func seed(_ names: [String]) {
        for object in names {
            let content = Data("content of \(object)".utf8)
            let metadata = ObjectMetadata.newObject(
                bucket: name, name: try! ObjectName(object), content: content, generation: Int64(objects.count + 1),
                now: clock.now())
            objects[object] = (metadata, content)
        }
    }

    public var names: [String] { objects.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }

    public var capabilities: BucketCapabilities { [.snapshots, .rulesAdministration] }
    /// What `accessDescription` says (nil: a bucket with no remote access to describe).
    public var access: String?
    /// False: a bucket that cannot make changes conditional (as the Firebase v0 API).
    public var guardsChangesDeclared = true
    public var accessDescription: String? { access }
    public var guardsChanges: Bool { guardsChangesDeclared }
    public var snapshotStore: (any SnapshotStore)? { self }
    public var rulesStore: (any RulesStore)? { self }
    public var settingsStore: (any BucketSettingsStore)? { nil }
    public var objectVersions: (any ObjectVersions)? { nil }
    /// Moves as S3 makes them, a copy and then a delete (nil: none, as the Firebase v0 API).
    public var movesByCopying = false
    /// Sources whose delete after a copy fails (a move left half made).
    public var sourcesThatStay: Set<String> = []
    public var objectMoves: (any ObjectMoves)? { movesByCopying ? self : nil }
    public var transactions: (any TransactionalBucket)? { nil }
    public var immediateReads: (any ImmediateReads)? { nil }
    public var endUserSignIn: (any EndUserSignIn)? { nil }
    public var batchedChanges: (any BatchedChanges)? { nil }
    public var uniformUpdates: (any UniformUpdates)? { nil }
    public var asTransaction: (any BucketTransaction)? { nil }
    public var scheme: String { "gs" }
    public var storageClasses: StorageClasses { .cloudStorage }
    public func validateStorable(_ metadata: ObjectMetadata) throws {}
    public func close() {}

    public func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        var page = try Lister.page(
            of: reference, bucket: name, options: options, index: SortedNameIndex(objects.keys),
            tokens: TestPageTokens())
        if options.includeMetadata { page.itemMetadata = page.items.compactMap { objects[$0]?.metadata } }
        return page
    }

    public func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        guard let stored = objects[object.rawValue] else { throw StorageError.objectNotFound(object.rawValue) }
        return stored.metadata
    }

    public func read(_ object: ObjectName) async throws -> Data {
        guard let stored = objects[object.rawValue] else { throw StorageError.objectNotFound(object.rawValue) }
        return stored.content
    }

    public func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        let content = try await read(object)
        try sink.write(content)
        return Int64(content.count)
    }

    public func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try await write(try source.readAll(), to: object, options: options, precondition: precondition)
    }

    public func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        try await updateByPrecondition(of: object, from: before, to: after)
    }

    public func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        let matching = names.filter { name in
            name.utf8.starts(with: prefix.utf8) && (after.map { $0.utf8.lexicographicallyPrecedes(name.utf8) } ?? true)
        }
        let page = matching.prefix(limit)
        return ObjectScanPage(
            objects: page.compactMap { objects[$0]?.metadata }, resumeAfter: matching.count > limit ? page.last : nil)
    }

    public func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        lock.withLock { recordedRequests.append("update \(object.rawValue)") }
        guard let stored = objects[object.rawValue] else { throw StorageError.objectNotFound(object.rawValue) }
        guard precondition.isSatisfied(by: stored.metadata) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: stored.metadata)
        }
        let (next, changed) = try stored.metadata.applying(update, now: clock.nextChangeTime())
        if changed { objects[object.rawValue] = (next, stored.content) }
        return UpdateResult(metadata: next, previous: stored.metadata, changed: changed)
    }

    public func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        lock.withLock { recordedRequests.append("write \(object.rawValue)") }
        let existing = objects[object.rawValue]?.metadata
        guard precondition.isSatisfied(by: existing) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing)
        }
        let now = clock.nextChangeTime()
        let metadata = ObjectMetadata.newObject(
            bucket: name, name: object, content: content,
            generation: max(now.microseconds, (existing?.generation ?? 0) + 1),
            now: now, properties: options.properties, customMetadata: options.customMetadata)
        objects[object.rawValue] = (metadata, content)
        return metadata
    }

    public func delete(_ object: ObjectName, precondition: Precondition) async throws {
        lock.withLock { recordedRequests.append("delete \(object.rawValue)") }
        guard let stored = objects[object.rawValue] else { throw StorageError.objectNotFound(object.rawValue) }
        guard precondition.isSatisfied(by: stored.metadata) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: stored.metadata)
        }
        objects[object.rawValue] = nil
    }

    // MARK: Snapshots, as copies

    public func saveSnapshot(named name: String) async throws -> SnapshotInfo {
        lock.withLock { recordedRequests.append("snapshot save \(name)") }
        try SnapshotInfo.validate(name: name)
        if let existing = saved.first(where: { $0.info.name == name }) { throw SnapshotInfo.nameTaken(existing.info) }
        let info = SnapshotInfo(name: name, created: clock.now(), objectCount: objects.count)
        saved.append((info, objects))
        return info
    }

    public func snapshots() async throws -> [SnapshotInfo] { saved.map(\.info) }

    public func changes(
        from old: BucketState, to new: BucketState, each body: (ObjectChange) throws -> Void
    ) async throws {
        let (before, after) = (try state(old), try state(new))
        for name in Set(before.keys).union(after.keys).sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            if let change = ObjectChange.between(before[name]?.metadata, after[name]?.metadata) { try body(change) }
        }
    }

    /// Rule S2: only the objects that differ from the snapshot get its versions back.
    public func restoreSnapshot(named name: String, each body: (ObjectChange) throws -> Void) async throws {
        lock.withLock { recordedRequests.append("snapshot restore \(name)") }
        let then = try state(.snapshot(name))
        for change in try await changes(from: .current, to: .snapshot(name)) {
            objects[change.name] = then[change.name]
            try body(change)
        }
    }

    public func removeSnapshot(named name: String) async throws -> SnapshotInfo {
        lock.withLock { recordedRequests.append("snapshot rm \(name)") }
        guard let index = saved.firstIndex(where: { $0.info.name == name }) else {
            throw StorageError.invalidArgument("No snapshot named \"\(name)\".")
        }
        return saved.remove(at: index).info
    }

    public func objectCount() async throws -> Int { objects.count }

    private func state(_ state: BucketState) throws -> [String: (metadata: ObjectMetadata, content: Data)] {
        switch state {
        case .current: return objects
        case .snapshot(let name):
            guard let snapshot = saved.first(where: { $0.info.name == name }) else {
                throw StorageError.invalidArgument("No snapshot named \"\(name)\".")
            }
            return snapshot.objects
        }
    }

    // MARK: Rules

    public func storedRules() throws -> (source: String, origin: String)? { rules }

    public func storeRules(source: String, origin: String) throws {
        lock.withLock { recordedRequests.append("rules load \(origin)") }
        rules = (source, origin)
    }
}

/// A copy, then a delete of the source as copied (S3's way, rule M10).
extension MemoryBucket: ObjectMoves {
    public var movesInOneStep: Bool { false }

    public func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        guard let stored = objects[source.rawValue] else { throw StorageError.objectNotFound(source.rawValue) }
        guard sourcePrecondition.isSatisfied(by: stored.metadata) else {
            throw StorageError.preconditionFailed(source.rawValue, sourcePrecondition, actual: stored.metadata)
        }
        var options = WriteOptions(customMetadata: stored.metadata.customMetadata)
        for property in WritableProperty.allCases { options.properties[property] = stored.metadata[property] }
        let arrived = try await write(
            stored.content, to: destination, options: options, precondition: destinationPrecondition)
        if sourcesThatStay.contains(source.rawValue) {
            throw HalfMove(
                arrived: arrived, failure: StorageError(.unknown, "\(source.rawValue) stays (the test's failure)."))
        }
        try await delete(source, precondition: .sameContent(as: stored.metadata))
        return arrived
    }
}
