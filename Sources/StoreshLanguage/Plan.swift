import Foundation
import StoreshCore

/// A change a dry run (or, on a real bucket, the planning phase) decided on: the object, the state it was
/// computed from, and the state it would leave (nil: deleted).
public struct PlannedChange: Sendable, Equatable {
    public static func == (a: PlannedChange, b: PlannedChange) -> Bool {
        a.object == b.object && a.before == b.before && a.after == b.after && a.content == b.content && a.step == b.step
            && a.source?.origin == b.source?.origin
    }

    public var object: String
    public var before: ObjectMetadata?
    public var after: ObjectMetadata?
    /// The content a planned write sends; nil for a metadata change or a delete (or a write from `source`).
    public var content: Data?
    /// A planned write of a large file: its content, read a piece at a time when it is sent.
    public var source: (any ContentSource)? {
        didSet { if let origin = source?.origin { contentOrigin = origin } }
    }
    /// Where a large file's content is (its path), as a journal names it; kept when the source is not reopened.
    public var contentOrigin: String?
    /// Which of the script's commands planned it (0 for the first): apply keeps a command's changes after the
    /// changes of the commands before it (rule X2).
    public var step: Int

    public init(
        object: String, before: ObjectMetadata?, after: ObjectMetadata?, content: Data? = nil, source: (any ContentSource)? = nil,
        step: Int = 0
    ) {
        self.object = object
        self.before = before
        self.after = after
        self.content = content
        self.source = source
        self.contentOrigin = source?.origin
        self.step = step
    }

    /// Whether the change writes content (a put, a copy), not only metadata.
    public var writesContent: Bool { content != nil || source != nil || contentOrigin != nil }
}

/// The bucket a dry run works on (rule X1): reads go to the real bucket with the changes planned so far laid
/// over them, and each change is computed from what was read and the pure rules (M3–M6), recorded with the state
/// it came from, and never sent. Whatever the backend, a dry run sends no request that changes anything.
///
/// Later commands of the script see the earlier ones' planned changes: `put` then `meta set` on the new object
/// plans both. What the plan cannot know is said when asked: the content of an object that a planned
/// `snapshot restore` brings back, and planned snapshots (`snapshot diff` compares stored ones).
public final class PlannedBucket: BucketTransaction, @unchecked Sendable {
    let inner: any Bucket
    let clock: any StorageClock
    /// Every change planned, in order.
    public private(set) var changes: [PlannedChange] = []
    /// The command being planned (the script's statement number), recorded with each change.
    public var step = 0
    private var overlay: [String: Entry] = [:]
    /// Whether each object the plan touched exists in the real bucket (known when it is first planned).
    private var existsInBucket: [String: Bool] = [:]
    private var plannedRules: (source: String, origin: String)?
    /// Objects as a scan of the real bucket read them: a plan over a pattern's objects reads each once, not once
    /// for the pattern and again for its change (on a remote bucket, a request per object). The plan is made from
    /// what it read; apply's preconditions catch what changed since.
    private var read: [String: ObjectMetadata] = [:]
    /// Snapshots the plan saved: each with the planned changes as they stood (the rest is the real bucket).
    fileprivate var plannedSnapshots: [(info: SnapshotInfo, overlay: [String: Entry])] = []

    enum Entry {
        /// The object as planned; its content when the plan knows it (a planned write), else the real one's.
        case present(ObjectMetadata, content: Content)
        case deleted
    }

    enum Content {
        case planned(Data)
        /// A planned write of a large file, read again when needed.
        case plannedSource(any ContentSource)
        case real
        /// Brought back by a planned restore: the content is in the snapshot, which a plan does not read.
        case unknown
    }

    public init(over inner: any Bucket, clock: any StorageClock) {
        self.inner = inner
        self.clock = clock
    }

    static let planTokens = PositionPageTokens(mark: "plan:")

    public var name: String { inner.name }
    public var scheme: String { inner.scheme }
    /// A listing of a folder with planned changes gets a plan's token; the others, the bucket's own.
    public var pageTokens: any PageTokenFormat { EitherPageTokens(first: Self.planTokens, second: inner.pageTokens) }
    public func validateStorable(_ metadata: ObjectMetadata) throws { try inner.validateStorable(metadata) }
    public var capabilities: BucketCapabilities { inner.capabilities.subtracting(.transactions) }
    public var snapshotStore: (any SnapshotStore)? { inner.snapshotStore.map { PlannedSnapshots(plan: self, stored: $0) } }
    public var rulesStore: (any RulesStore)? { inner.rulesStore.map { PlannedRules(plan: self, stored: $0) } }
    public func close() {}

    /// Savepoints cost nothing here: the plan so far is a value.
    public func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value {
        let saved = (overlay, existsInBucket, changes, plannedRules, plannedSnapshots)
        do {
            return try await body()
        } catch {
            (overlay, existsInBucket, changes, plannedRules, plannedSnapshots) = saved
            throw error
        }
    }

    // MARK: Reads

    public func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        switch overlay[object.rawValue] {
        case .present(let metadata, _): return metadata
        case .deleted: throw StorageError.objectNotFound(object.rawValue)
        case nil:
            if let known = read[object.rawValue] { return known }
            return try await inner.metadata(of: object)
        }
    }

    public func read(_ object: ObjectName) async throws -> Data {
        switch overlay[object.rawValue] {
        case .present(_, .planned(let content)): return content
        case .present(_, .plannedSource(let source)): return try source.readAll()
        case .present(_, .unknown):
            throw StorageError.invalidArgument(
                "The content of \(object.rawValue) is in the snapshot a planned restore brings it back from; a dry run does not read it.")
        case .deleted: throw StorageError.objectNotFound(object.rawValue)
        case .present(_, .real), nil: return try await inner.read(object)
        }
    }

    public func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        let prefix = reference.listingPrefix
        let touched = overlay.keys.filter { $0.utf8.starts(with: prefix.utf8) }
        guard !touched.isEmpty else { return try await inner.list(reference, options: options) }
        // Planned changes under this folder: list the planned state of its objects, with the same listing rules.
        var objects: [String: ObjectMetadata] = [:]
        var after: String?
        repeat {
            let page = try await inner.scan(prefix: prefix, after: after, limit: 1000)
            for object in page.objects { objects[object.fullPath] = object }
            after = page.resumeAfter
        } while after != nil
        for name in touched {
            switch overlay[name] {
            case .present(let metadata, _): objects[name] = metadata
            case .deleted, nil: objects[name] = nil
            }
        }
        let index = SortedNameIndex(objects.keys)
        var page: ListPage
        do {
            page = try Lister.page(of: reference, bucket: name, options: options, index: index, tokens: Self.planTokens)
        } catch let error as StorageError where error == .malformedPageToken && options.pageToken != nil {
            // A token the real bucket issued before this folder had planned changes: that page as it is.
            return try await inner.list(reference, options: options)
        }
        if options.includeMetadata { page.itemMetadata = page.items.compactMap { objects[$0] } }
        return page
    }

    public func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        let page = try await inner.scan(prefix: prefix, after: after, limit: limit)
        for object in page.objects { read[object.fullPath] = object }
        let touched = overlay.keys.filter { name in
            name.utf8.starts(with: prefix.utf8) && (after.map { $0.utf8.lexicographicallyPrecedes(name.utf8) } ?? true)
        }
        guard !touched.isEmpty else { return page }
        // The real page's range, with the planned state of the names in it (and, past the real page's end when
        // it is the last, every planned name left).
        let end = page.resumeAfter
        var objects: [String: ObjectMetadata] = Dictionary(page.objects.map { ($0.fullPath, $0) }) { $1 }
        for name in touched where end.map({ !$0.utf8.lexicographicallyPrecedes(name.utf8) }) ?? true {
            switch overlay[name] {
            case .present(let metadata, _): objects[name] = metadata
            case .deleted, nil: objects[name] = nil
            }
        }
        let names = objects.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let taken = names.prefix(limit)
        let more = end != nil || names.count > limit
        return ObjectScanPage(objects: taken.compactMap { objects[$0] }, resumeAfter: more ? (taken.last ?? end) : nil)
    }

    // MARK: Changes, planned

    public func updateMetadata(of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition) async throws
        -> UpdateResult
    {
        let existing = try await metadata(of: object)
        try require(precondition, object, existing)
        let (next, changed) = try existing.applying(update, now: clock.nextChangeTime())
        if changed {
            try inner.validateStorable(next)
            plan(object.rawValue, before: existing, after: next, content: content(of: object.rawValue))
        }
        return UpdateResult(metadata: next, previous: existing, changed: changed)
    }

    public func write(_ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition) async throws
        -> ObjectMetadata
    {
        try CustomMetadataLimits.validate(options.customMetadata)
        let md5 = ContentHash.md5Base64(content)
        if let expected = options.expectedMD5, expected != md5 {
            throw StorageError(.nonMatchingChecksum, "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        let existing = try await metadataIfPresent(of: object)
        try require(precondition, object, existing)
        let now = clock.nextChangeTime()
        // The generation the bucket would give is its own; this one is larger than any the object had.
        let metadata = ObjectMetadata.newObject(
            bucket: name, name: object, content: content,
            generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now,
            properties: options.properties, customMetadata: options.customMetadata)
        try inner.validateStorable(metadata)
        plan(object.rawValue, before: existing, after: metadata, content: .planned(content))
        changes[changes.count - 1].content = content
        return metadata
    }

    /// A planned write of a large file: its size and MD5 are the source's, and its content is read only when sent.
    public func write(from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition)
        async throws -> ObjectMetadata
    {
        try CustomMetadataLimits.validate(options.customMetadata)
        if let expected = options.expectedMD5, expected != source.md5Base64 {
            throw StorageError(
                .nonMatchingChecksum, "The content's MD5 is \(source.md5Base64), not the expected \(expected); nothing was written.")
        }
        let existing = try await metadataIfPresent(of: object)
        try require(precondition, object, existing)
        let now = clock.nextChangeTime()
        var metadata = ObjectMetadata.newObject(
            bucket: name, name: object, content: Data(), generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now,
            properties: options.properties, customMetadata: options.customMetadata)
        metadata.size = source.size
        metadata.md5Hash = source.md5Base64
        try inner.validateStorable(metadata)
        plan(object.rawValue, before: existing, after: metadata, content: .plannedSource(source))
        changes[changes.count - 1].source = source
        return metadata
    }

    public func delete(_ object: ObjectName, precondition: Precondition) async throws {
        let existing = try await metadata(of: object)
        try require(precondition, object, existing)
        plan(object.rawValue, before: existing, after: nil, content: .real)
    }

    // MARK: Helpers

    private func plan(_ object: String, before: ObjectMetadata?, after: ObjectMetadata?, content: Content) {
        // Before its first planned change, an object's state is the real bucket's.
        if existsInBucket[object] == nil { existsInBucket[object] = before != nil }
        changes.append(PlannedChange(object: object, before: before, after: after, step: step))
        overlay[object] = after.map { .present($0, content: content) } ?? .deleted
    }

    private func content(of object: String) -> Content {
        if case .present(_, let content) = overlay[object] { return content }
        return .real
    }


    private func require(_ precondition: Precondition, _ object: ObjectName, _ existing: ObjectMetadata?) throws {
        guard precondition.isSatisfied(by: existing) else {
            throw StorageError.preconditionFailed(object.rawValue, precondition, actual: existing)
        }
    }

    /// A planned restore of a stored snapshot: the objects become as `restoring` (from the real bucket now to the
    /// snapshot) says, and a planned change to any other object is undone (the snapshot has it as the bucket
    /// has it). Returns every change, in name order.
    fileprivate func planRestore(_ restoring: [ObjectChange]) async throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        let named = Set(restoring.map(\.name))
        for change in restoring {
            let before = try await metadataIfPresent(of: ObjectName(change.name))
            let after = change.kind == .removed ? nil : change.metadata
            if let difference = ObjectChange.between(before, after) { all.append(difference) }
            plan(change.name, before: before, after: after, content: after == nil ? .real : .unknown)
        }
        for name in overlay.keys where !named.contains(name) {
            try await revertToReal(name, into: &all)
        }
        return all.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// A planned restore of a snapshot the plan saved: every object its planned changes touched, or the
    /// snapshot's did, becomes as it was then.
    fileprivate func planRestore(of saved: [String: Entry]) async throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        for name in Set(overlay.keys).union(saved.keys).sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let then = saved[name] else {
                try await revertToReal(name, into: &all)
                continue
            }
            let before = try await metadataIfPresent(of: ObjectName(name))
            switch then {
            case .present(let metadata, let content):
                if let change = ObjectChange.between(before, metadata) { all.append(change) }
                plan(name, before: before, after: metadata, content: content)
            case .deleted:
                if let change = ObjectChange.between(before, nil) { all.append(change) }
                plan(name, before: before, after: nil, content: .real)
            }
        }
        return all
    }

    /// Drops the planned state of `name`: it is the real bucket's again.
    private func revertToReal(_ name: String, into all: inout [ObjectChange]) async throws {
        let before = try await metadataIfPresent(of: ObjectName(name))
        overlay[name] = nil
        let real = try await metadataIfPresent(of: ObjectName(name))
        if let change = ObjectChange.between(before, real) {
            all.append(change)
            changes.append(PlannedChange(object: name, before: before, after: real, step: step))
        }
    }

    fileprivate var currentOverlay: [String: Entry] { overlay }

    fileprivate var plannedObjectCountChange: Int {
        // Each planned change, against the real bucket: a name planned present that is not there, and back.
        var delta = 0
        for (name, entry) in overlay {
            let wasThere = existsInBucket[name] ?? false
            switch entry {
            case .present: if !wasThere { delta += 1 }
            case .deleted: if wasThere { delta -= 1 }
            }
        }
        return delta
    }

    fileprivate func planRules(source: String, origin: String) { plannedRules = (source, origin) }
    fileprivate var rulesPlanned: (source: String, origin: String)? { plannedRules }
}

/// Snapshots in a plan: saves, restores and removals are checked and planned, never done.
private struct PlannedSnapshots: SnapshotStore {
    let plan: PlannedBucket
    let stored: any SnapshotStore

    func saveSnapshot(named name: String) async throws -> SnapshotInfo {
        try SnapshotInfo.validate(name: name)
        if let existing = try await snapshots().first(where: { $0.name == name }) { throw SnapshotInfo.nameTaken(existing) }
        let info = SnapshotInfo(name: name, created: plan.clock.now(), objectCount: try await objectCount())
        plan.plannedSnapshots.append((info, plan.currentOverlay))
        return info
    }

    /// The stored snapshots, then those the plan saved.
    func snapshots() async throws -> [SnapshotInfo] { try await stored.snapshots() + plan.plannedSnapshots.map(\.info) }

    func changes(from old: BucketState, to new: BucketState) async throws -> [ObjectChange] {
        for state in [old, new] {
            if case .snapshot(let name) = state, plan.plannedSnapshots.contains(where: { $0.info.name == name }) {
                throw StorageError.invalidArgument(
                    "Snapshot \(name) is only planned in this dry run; snapshot diff compares snapshots that are stored.")
            }
        }
        return try await stored.changes(from: old, to: new)
    }

    func restoreSnapshot(named name: String) async throws -> [ObjectChange] {
        if let saved = plan.plannedSnapshots.last(where: { $0.info.name == name }) {
            return try await plan.planRestore(of: saved.overlay)
        }
        return try await plan.planRestore(try await stored.changes(from: .current, to: .snapshot(name)))
    }

    func removeSnapshot(named name: String) async throws -> SnapshotInfo {
        if let index = plan.plannedSnapshots.firstIndex(where: { $0.info.name == name }) {
            return plan.plannedSnapshots.remove(at: index).info
        }
        // An unknown name gets the store's own message (with its suggestion).
        _ = try await stored.changes(from: .snapshot(name), to: .snapshot(name))
        guard let info = try await stored.snapshots().first(where: { $0.name == name }) else {
            throw StorageError.invalidArgument("No snapshot named \(name).")
        }
        return info
    }

    func objectCount() async throws -> Int { try await stored.objectCount() + plan.plannedObjectCountChange }
}

/// The rules a plan would store: checked and kept in the plan.
private final class PlannedRules: RulesStore {
    let plan: PlannedBucket
    let stored: any RulesStore

    init(plan: PlannedBucket, stored: any RulesStore) {
        self.plan = plan
        self.stored = stored
    }

    func storedRules() throws -> (source: String, origin: String)? { try plan.rulesPlanned ?? stored.storedRules() }
    func storeRules(source: String, origin: String) throws { plan.planRules(source: source, origin: origin) }
}
