import Foundation
import StoreshCore

/// A change a dry run (or, on a real bucket, the planning phase) decided on: the object, the state it was
/// computed from, and the state it would leave (nil: deleted).
package struct PlannedChange: Sendable, Equatable {
    package static func == (a: PlannedChange, b: PlannedChange) -> Bool {
        a.object == b.object && a.before == b.before && a.after == b.after && a.content == b.content && a.step == b.step
            && a.source?.origin == b.source?.origin && a.restoresGeneration == b.restoresGeneration
            && NameBytes.sameBytes(a.movesFrom, b.movesFrom) && NameBytes.sameBytes(a.movedTo, b.movedTo)
    }

    package var object: String
    package var before: ObjectMetadata?
    package var after: ObjectMetadata?
    /// The content a planned write sends; nil for a metadata change or a delete (or a write from `source`).
    package var content: Data?
    /// A planned write of a large file: its content, read a piece at a time when it is sent.
    package var source: (any ContentSource)? {
        didSet { if let origin = source?.origin { contentOrigin = origin } }
    }
    /// Where a large file's content is (its path), as a journal names it; kept when the source is not reopened.
    package var contentOrigin: String?
    /// Which of the script's commands planned it (0 for the first): apply keeps a command's changes after the
    /// changes of the commands before it (rule X2).
    package var step: Int
    /// A planned restore (rule B6): the soft-deleted generation whose content and metadata become the live object's
    /// (on S3, the noncurrent version copied back).
    package var restoresGeneration: ObjectGeneration?
    /// A planned move (`mv`) is two changes, planned one after the other and applied together by one move: the
    /// object arriving (this name, `movesFrom` the source's) and then the source leaving (`movedTo` the destination's).
    package var movesFrom: String?
    package var movedTo: String?

    package init(
        object: String, before: ObjectMetadata?, after: ObjectMetadata?, content: Data? = nil,
        source: (any ContentSource)? = nil,
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
    package var writesContent: Bool {
        content != nil || source != nil || contentOrigin != nil || restoresGeneration != nil || movesFrom != nil
    }
}

/// The bucket a dry run works on (rule X1): reads go to the real bucket with the changes planned so far laid
/// over them, and each change is computed from what was read and the pure rules (M3–M6), recorded with the state
/// it came from, and never sent. Whatever the backend, a dry run sends no request that changes anything.
///
/// Later commands of the script see the earlier ones' planned changes: `put` then `meta set` on the new object
/// plans both. What the plan cannot know is said when asked: the content of an object that a planned
/// `snapshot restore` brings back, and planned snapshots (`snapshot diff` compares stored ones).
///
/// The plan and the planned state of each object are kept in a `PlanStore`, not in memory: a bulk edit of
/// millions of objects is planned in the memory of a small one.
package final class PlannedBucket: BucketTransaction, @unchecked Sendable {
    let inner: any Bucket
    let clock: any StorageClock
    /// Every change planned, in order, and the planned state of each object.
    package let store: PlanStore
    /// The command being planned (the script's statement number), recorded with each change.
    package var step = 0
    private var plannedRules: (source: String, origin: String)?
    /// The bucket's settings as the plan changed them (`bucket set`), never stored.
    private var plannedSettings: BucketSettings?
    /// The bucket's sign-in (rule F1), which a plan never changes: a `login` in it is the plan's (`PlannedSignIn`).
    private let realSignIn: (any EndUserSignIn)?
    /// Who the plan reads as now: the bucket's sign-in when planning began, then whoever the script's `login` and
    /// `logout` made.
    package private(set) var signedIn: (any SignedInUser)?
    /// The real bucket as `signedIn` reads it.
    private var reads: any Bucket
    /// Who the planned changes are made as, once one is planned: a plan is applied as one identity.
    package private(set) var changesSignedIn: SignedInAs?
    /// Snapshots the plan saved: each with the planned changes as they stood (kept in the store under `saved`).
    fileprivate var plannedSnapshots: [(info: SnapshotInfo, saved: Int)] = []
    private var savedCount = 0

    package init(over inner: any Bucket, clock: any StorageClock, store: PlanStore? = nil) throws {
        self.inner = inner
        self.clock = clock
        self.store = try store ?? PlanStore()
        realSignIn = inner.endUserSignIn
        signedIn = realSignIn?.signedInUser
        reads = inner
    }

    /// Someone signed in to a real bucket, or no one (its own credentials): who a plan's changes are made as.
    package struct SignedInAs: Sendable {
        package var user: (any SignedInUser)?
        /// For messages.
        package var who: String { user?.who ?? "the bucket's own credentials" }
    }

    /// Makes the plan read as `user` from now on (a `login` or `logout` of the script): the bucket's own sign-in
    /// is left as it is.
    fileprivate func signIn(as user: (any SignedInUser)?) {
        signedIn = user
        reads =
            (user as AnyObject?) === (realSignIn?.signedInUser as AnyObject?)
            ? inner : realSignIn?.reads(as: user) ?? inner
    }

    /// Records `change` in the plan, made as whoever is signed in: refused when the plan's other changes are
    /// made as someone else, since the plan is applied as one identity (and applied as another, a change the
    /// rules would refuse its user would be made with the bucket's own credentials).
    private func record(_ change: PlannedChange, content: PlanStore.ContentKind) throws {
        if realSignIn != nil {
            if let earlier = changesSignedIn, (earlier.user as AnyObject?) !== (signedIn as AnyObject?) {
                let now = SignedInAs(user: signedIn)
                throw StorageError.invalidArgument(
                    "This change would be made as \(now.who), and the earlier changes of the script as \(earlier.who); the changes of a script on \(inner.scheme)://\(name) are applied together, as one identity. Run the commands after the login or logout as a script of their own."
                )
            }
            if changesSignedIn == nil { changesSignedIn = SignedInAs(user: signedIn) }
        }
        try store.plan(change, content: content)
    }

    static let planTokens = PositionPageTokens(mark: "plan:")

    package var name: String { inner.name }
    package var scheme: String { inner.scheme }
    /// A listing of a folder with planned changes gets a plan's token; the others, the bucket's own.
    package var pageTokens: any PageTokenFormat { EitherPageTokens(first: Self.planTokens, second: inner.pageTokens) }
    package func validateStorable(_ metadata: ObjectMetadata) throws { try inner.validateStorable(metadata) }
    package var storageClasses: StorageClasses { inner.storageClasses }
    // A plan has no transactions of its own (it is one) and no reads for Tab completion.
    package var capabilities: BucketCapabilities { inner.capabilities.subtracting([.transactions, .immediateReads]) }
    package var snapshotStore: (any SnapshotStore)? {
        inner.snapshotStore.map { PlannedSnapshots(plan: self, stored: $0) }
    }
    package var rulesStore: (any RulesStore)? { inner.rulesStore.map { PlannedRules(plan: self, stored: $0) } }
    /// A change of the bucket's settings (`bucket set`) is planned: read back by the plan, never stored.
    package var settingsStore: (any BucketSettingsStore)? {
        inner.settingsStore.map { PlannedSettings(plan: self, stored: $0) }
    }

    /// What the plan changed that its store of object changes does not hold (rules, snapshots, the bucket's
    /// settings), for people: a plan kept to apply later would lose them; nil when there is none.
    package var changesBeyondObjects: String? {
        var kinds: [String] = []
        if plannedRules != nil { kinds.append("the rules") }
        if !plannedSnapshots.isEmpty { kinds.append("snapshots") }
        if plannedSettings != nil { kinds.append("the bucket's settings") }
        return kinds.isEmpty ? nil : MessageText.listed(kinds)
    }
    /// Generations are read from the bucket as it is (a plan lays no planned change over them); a restore is planned.
    package var objectVersions: (any ObjectVersions)? {
        reads.objectVersions.map { PlannedVersions(plan: self, stored: $0) }
    }
    /// A move is planned as the two changes it makes, and applied by the bucket's own move.
    package var objectMoves: (any ObjectMoves)? {
        reads.objectMoves.map { PlannedMoves(plan: self, inOneStep: $0.movesInOneStep) }
    }
    /// Whose requests the plan's reads are (`whoami` after the script's `login`).
    package var accessDescription: String? { reads.accessDescription }
    /// Whether the plan's changes can be guarded: as whom they are made decides (the Firebase v0 API has no
    /// preconditions).
    package var guardsChanges: Bool {
        guard let changesSignedIn, let realSignIn else { return reads.guardsChanges }
        return realSignIn.reads(as: changesSignedIn.user).guardsChanges
    }
    /// The plan's own: a `login` makes the plan read as that user and its changes made as that user, never the
    /// bucket's sign-in, which only an apply changes (a dry run's `login` signs no one in).
    package var endUserSignIn: (any EndUserSignIn)? { realSignIn.map { PlannedSignIn(plan: self, real: $0) } }
    /// A plan is made a change at a time; batches are how it is sent.
    package var batchedChanges: (any BatchedChanges)? { nil }
    /// A plan decides each object on its own, and a dry run changes nothing; but a dry run's last command, when no
    /// plan is kept (`previewsUniformUpdates`) and nothing was planned before it, has its uniform update previewed by
    /// the bucket itself: the outcomes exactly as an apply would decide them, nothing written, at the cost of the
    /// update's reads rather than of a plan of every object (issue 55: a dry run of a million was 4.3x its apply).
    /// Nothing reads the plan after it, and nothing planned before it that it would have had to see.
    package var uniformUpdates: (any UniformUpdates)? {
        guard previewsUniformUpdates, store.count == 0, changesBeyondObjects == nil, let inner = inner.uniformUpdates
        else { return nil }
        return PreviewedUniformUpdates(inner: inner, plan: self)
    }

    /// Set by the run for a dry run's last statement when its plan is not kept (see `uniformUpdates`).
    package var previewsUniformUpdates = false
    /// The changes previewed rather than planned (`uniformUpdates`).
    package fileprivate(set) var previewedChanges = 0
    package var transactions: (any TransactionalBucket)? { nil }
    package var immediateReads: (any ImmediateReads)? { nil }
    package var asTransaction: (any BucketTransaction)? { self }
    package func close() {}

    /// The changes planned (or previewed) so far.
    package var changeCount: Int { store.count + previewedChanges }

    package func withSavepoint<Value>(_ body: () async throws -> Value) async throws -> Value {
        let saved = (plannedRules, plannedSnapshots, changesSignedIn, plannedSettings, previewedChanges)
        do {
            return try await store.withSavepoint(body)
        } catch {
            (plannedRules, plannedSnapshots, changesSignedIn, plannedSettings, previewedChanges) = saved
            throw error
        }
    }

    // MARK: Reads

    package func metadata(of object: ObjectName) async throws -> ObjectMetadata {
        try await metadata(of: object, entry: try store.entry(object.rawValue), seen: nil)
    }

    /// The planned state of `object` when the plan has one (`entry`), else the state the change carries (`seen`: a
    /// pattern's match as the scan found it, so a plan over a pattern reads each object once, not again for its
    /// change, which on a remote bucket is a request per object), else the real bucket's. The plan is made from
    /// that state; apply's preconditions catch what changed since.
    private func metadata(
        of object: ObjectName, entry: PlanStore.Entry?, seen: ObjectMetadata?
    ) async throws -> ObjectMetadata {
        if let entry {
            guard let state = entry.state else { throw StorageError.objectNotFound(object.rawValue) }
            return state
        }
        if let seen { return seen }
        return try await reads.metadata(of: object)
    }

    package func read(_ object: ObjectName) async throws -> Data {
        switch try plannedContent(of: object) {
        case nil: return try await reads.read(object)
        case .data(let data): return data
        case .source(let source): return try source.readAll()
        }
    }

    /// Streamed: the real object's from the bucket, a planned file's from the file, a piece at a time.
    package func read(_ object: ObjectName, into sink: any ContentSink) async throws -> Int64 {
        switch try plannedContent(of: object) {
        case nil: return try await reads.read(object, into: sink)
        case .data(let data):
            try sink.write(data)
            return Int64(data.count)
        case .source(let source):
            return try source.forEachPiece(of: 1 << 20) { try sink.write($0) }
        }
    }

    /// The content a plan gives `object`: nil when it is the real bucket's.
    private func plannedContent(of object: ObjectName) throws -> PlanStore.PlannedContent? {
        guard let entry = try store.entry(object.rawValue) else { return nil }
        guard entry.state != nil else { throw StorageError.objectNotFound(object.rawValue) }
        switch entry.content {
        case .real: return nil
        case .unknown:
            throw StorageError.invalidArgument(
                "The content of \(object.rawValue) is what a planned restore brings back (from a snapshot or a soft-deleted generation) or a planned move brings here; a plan does not read it before it is applied."
            )
        case .planned(let change):
            guard let content = try store.plannedContent(ofChange: change) else {
                throw StorageError.internalError("The planned content of \(object.rawValue) is missing from the plan.")
            }
            return content
        }
    }

    package func list(_ reference: StoragePath, options: ListOptions) async throws -> ListPage {
        let prefix = reference.listingPrefix
        guard try store.touches(prefix: prefix) else { return try await reads.list(reference, options: options) }
        // Planned changes under this folder: the listing rules run over the planned state of its objects, from
        // where the page starts. Of each entry only its first name is gathered, until there is one more shown
        // entry than the page holds: the page is the same as over every name, and memory holds a page however
        // large the folder.
        let maxResults = try options.validatedMaxResults()
        let start: NameBound?
        do {
            start = try Lister.startBound(prefix: prefix, bucket: name, options: options, tokens: Self.planTokens)
        } catch let error as StorageError where error == .malformedPageToken && options.pageToken != nil {
            // A token the real bucket issued before this folder had planned changes: that page as it is.
            return try await reads.list(reference, options: options)
        }
        guard let start else { return ListPage() }
        var firstNames: [String] = []
        var items: [ObjectName: ObjectMetadata] = [:]
        var shown = 0
        var current: (kind: ListPosition.EntryKind, name: String)?
        /// Takes one name in byte order; false once the page has all it needs.
        func take(_ object: ObjectMetadata) -> Bool {
            let name = object.fullPath
            if let end = options.endOffset, !NameBytes.precedes(name, end) { return false }
            let entry = Lister.entry(forName: name, prefixLength: prefix.utf8.count)
            if let current, current.kind == entry.kind, NameBytes.sameBytes(current.name, entry.name) { return true }
            current = entry
            // Hidden entries take no slot (rule L3), and the rules would pass over them: not kept.
            guard Lister.isShown(entry) else { return true }
            shown += 1
            firstNames.append(name)
            if options.includeMetadata && entry.kind == .item { items[ObjectName(stored: name)] = object }
            return shown <= maxResults
        }
        var after: String?
        var full = false
        switch start {
        case .after(let bound): after = bound
        case .atOrAfter(let bound):
            // A scan resumes after a name: a name exactly at the bound is asked for first.
            if !NameBytes.sameBytes(bound, prefix) {
                after = bound
                if let object = try? ObjectName(bound), let state = try await metadataIfPresent(of: object) {
                    full = !take(state)
                }
            }
        }
        while !full {
            let page = try await scan(prefix: prefix, after: after, limit: 1000)
            for object in page.objects where !take(object) {
                full = true
                break
            }
            guard let next = page.resumeAfter else { break }
            after = next
        }
        var page = try Lister.page(
            of: reference, bucket: name, options: options, index: SortedNameIndex(firstNames), tokens: Self.planTokens)
        if options.includeMetadata { page.itemMetadata = page.items.compactMap { items[ObjectName(stored: $0)] } }
        return page
    }

    package func scan(prefix: String, after: String?, limit: Int) async throws -> ObjectScanPage {
        let page = try await reads.scan(prefix: prefix, after: after, limit: limit)
        // The planned states in the real page's range (up to its end, or every one left when it is the last),
        // at most a page of them: past that many, the page ends where they do.
        let planned = try store.entries(prefix: prefix, after: after, through: page.resumeAfter, limit: limit + 1)
        guard !planned.isEmpty else { return page }
        let end: String? = planned.count > limit ? planned[limit - 1].name : page.resumeAfter
        func inRange(_ name: String) -> Bool { end.map { !$0.utf8.lexicographicallyPrecedes(name.utf8) } ?? true }
        var objects: [ObjectName: ObjectMetadata] = [:]
        for object in page.objects where inRange(object.fullPath) {
            objects[ObjectName(stored: object.fullPath)] = object
        }
        for (name, entry) in planned.prefix(limit) { objects[ObjectName(stored: name)] = entry.state }
        let names = objects.keys.sorted()
        let taken = names.prefix(limit)
        let more = names.count > limit ? taken.last?.rawValue : end
        return ObjectScanPage(objects: taken.compactMap { objects[$0] }, resumeAfter: more)
    }

    // MARK: Changes, planned

    package func updateMetadata(
        of object: ObjectName, _ update: MetadataUpdate, precondition: Precondition
    ) async throws
        -> UpdateResult
    {
        try await planMetadata(of: object, precondition: precondition) { current, now throws(StorageError) in
            try current.applying(update, now: now)
        }
    }

    /// Planned as the state it names (decided by the rules layer, or planned before), guarded by `before` (rule X2).
    package func applyMetadata(
        of object: ObjectName, from before: ObjectMetadata, to after: ObjectMetadata
    ) async throws
        -> ObjectMetadata
    {
        try await planMetadata(of: object, precondition: .matches(before)) { current, now throws(StorageError) in
            try current.replacingWritableMetadata(with: after, now: now)
        }.metadata
    }

    /// A planned change of an object's metadata, made by `next` from the state the change starts from and the
    /// plan's time, if that state satisfies `precondition`.
    private func planMetadata(
        of object: ObjectName, precondition: Precondition,
        _ next: (ObjectMetadata, Timestamp) throws(StorageError) -> (metadata: ObjectMetadata, changed: Bool)
    ) async throws -> UpdateResult {
        // Read once: the state the change starts from, and where the object's content is.
        let entry = try store.entry(object.rawValue)
        let existing = try await metadata(of: object, entry: entry, seen: precondition.seenState(of: object))
        try require(precondition, object, existing)
        let (next, changed) = try next(existing, clock.nextChangeTime())
        if changed {
            // A change of storage class writes the object again (rule M9): refused as a write is.
            if existing.rewrites(to: next) { try existing.refuseIfProtected(.rewritten, now: clock.now()) }
            try inner.validateStorable(next)
            try record(
                PlannedChange(object: object.rawValue, before: existing, after: next, step: step),
                content: entry?.content ?? .real)
        }
        return UpdateResult(metadata: next, previous: existing, changed: changed)
    }

    package func write(
        _ content: Data, to object: ObjectName, options: WriteOptions, precondition: Precondition
    ) async throws
        -> ObjectMetadata
    {
        try CustomMetadataLimits.validate(options.customMetadata)
        let md5 = ContentHash.md5Base64(content)
        if let expected = options.expectedMD5, expected != md5 {
            throw StorageError(
                .nonMatchingChecksum, "The content's MD5 is \(md5), not the expected \(expected); nothing was written.")
        }
        let existing = try await metadataIfPresent(of: object)
        try require(precondition, object, existing)
        try existing?.refuseIfProtected(.overwritten, now: clock.now())
        let now = clock.nextChangeTime()
        // The generation the bucket would give is its own; this one is larger than any the object had.
        let metadata = ObjectMetadata.newObject(
            bucket: name, name: object, content: content,
            generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now,
            properties: options.properties, customMetadata: options.customMetadata)
        try inner.validateStorable(metadata)
        try record(
            PlannedChange(object: object.rawValue, before: existing, after: metadata, content: content, step: step),
            content: .planned(change: store.count))
        return metadata
    }

    /// A planned write of a large file: its size and MD5 are the source's, and its content is read only when sent.
    package func write(
        from source: any ContentSource, to object: ObjectName, options: WriteOptions, precondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try CustomMetadataLimits.validate(options.customMetadata)
        if let expected = options.expectedMD5, expected != source.md5Base64 {
            throw StorageError(
                .nonMatchingChecksum,
                "The content's MD5 is \(source.md5Base64), not the expected \(expected); nothing was written.")
        }
        let existing = try await metadataIfPresent(of: object)
        try require(precondition, object, existing)
        try existing?.refuseIfProtected(.overwritten, now: clock.now())
        let now = clock.nextChangeTime()
        var metadata = ObjectMetadata.newObject(
            bucket: name, name: object, content: Data(),
            generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now,
            properties: options.properties, customMetadata: options.customMetadata)
        metadata.size = source.size
        metadata.md5Hash = source.md5Base64
        try inner.validateStorable(metadata)
        try record(
            PlannedChange(object: object.rawValue, before: existing, after: metadata, source: source, step: step),
            content: .planned(change: store.count))
        return metadata
    }

    package func delete(_ object: ObjectName, precondition: Precondition) async throws {
        let existing = try await metadata(
            of: object, entry: try store.entry(object.rawValue), seen: precondition.seenState(of: object))
        try require(precondition, object, existing)
        // Refused in the plan as the bucket would refuse it, before anything is sent.
        try existing.refuseIfProtected(.deleted, now: clock.now())
        try record(PlannedChange(object: object.rawValue, before: existing, after: nil, step: step), content: .real)
    }

    /// A planned move: the object arriving at `destination` with the source's content and metadata (a new generation,
    /// guarded by what is there now), then the source leaving; refused as the bucket would refuse it.
    fileprivate func planMove(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    ) async throws -> ObjectMetadata {
        try destination.checkNewObjectName()
        let sourceEntry = try store.entry(source.rawValue)
        let from = try await metadata(of: source, entry: sourceEntry, seen: sourcePrecondition.seenState(of: source))
        try require(sourcePrecondition, source, from)
        let existing = try await metadataIfPresent(of: destination)
        try require(destinationPrecondition, destination, existing)
        try from.refuseMove(over: existing, named: destination, now: clock.now())
        let now = clock.nextChangeTime()
        let moved = from.moved(
            to: destination, generation: max(now.microseconds, (existing?.generation ?? 0) + 1), now: now)
        try inner.validateStorable(moved)
        // The destination's content is the source's: the plan's where a planned write gives it, else the real source's,
        // which the move never sends through here and the plan does not read.
        let content: PlanStore.ContentKind
        if case .planned(let change)? = sourceEntry?.content {
            content = .planned(change: change)
        } else {
            content = .unknown
        }
        var arriving = PlannedChange(object: destination.rawValue, before: existing, after: moved, step: step)
        arriving.movesFrom = source.rawValue
        var leaving = PlannedChange(object: source.rawValue, before: from, after: nil, step: step)
        leaving.movedTo = destination.rawValue
        try record(arriving, content: content)
        try record(leaving, content: .real)
        return moved
    }

    // MARK: Helpers

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
        let named = Set(restoring.map { ObjectName(stored: $0.name) })
        var others: [String] = []
        var after: String?
        while true {
            let batch = try store.entries(prefix: "", after: after, limit: 1000)
            guard let last = batch.last else { break }
            others += batch.map(\.name).filter { !named.contains(ObjectName(stored: $0)) }
            after = last.name
        }
        for change in restoring {
            let before = try await metadataIfPresent(of: ObjectName(change.name))
            let after = change.kind == .removed ? nil : change.metadata
            if let difference = ObjectChange.between(before, after) { all.append(difference) }
            try record(
                PlannedChange(object: change.name, before: before, after: after, step: step),
                content: after == nil ? .real : .unknown)
        }
        for name in others { try await revertToReal(name, into: &all) }
        return all.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }

    /// A planned restore of a snapshot the plan saved: every object its planned changes touched, or the
    /// snapshot's did, becomes as it was then.
    fileprivate func planRestore(ofSaved saved: Int) async throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        var after: String?
        while true {
            let batch = try store.namesPlannedNowOrSaved(saved, after: after, limit: 1000)
            guard let last = batch.last else { break }
            for (name, then) in batch {
                guard let then else {
                    try await revertToReal(name, into: &all)
                    continue
                }
                let before = try await metadataIfPresent(of: ObjectName(name))
                if let change = ObjectChange.between(before, then.state) { all.append(change) }
                try record(
                    PlannedChange(object: name, before: before, after: then.state, step: step),
                    content: then.state == nil ? .real : then.content)
            }
            after = last.name
        }
        return all
    }

    /// Drops the planned state of `name`: it is the real bucket's again.
    private func revertToReal(_ name: String, into all: inout [ObjectChange]) async throws {
        let before = try await metadataIfPresent(of: ObjectName(name))
        try store.forget(name)
        let real = try await metadataIfPresent(of: ObjectName(name))
        if let change = ObjectChange.between(before, real) {
            all.append(change)
            try store.append(PlannedChange(object: name, before: before, after: real, step: step))
        }
    }

    fileprivate func saveSnapshot(_ info: SnapshotInfo) throws {
        savedCount += 1
        try store.saveEntries(as: savedCount)
        plannedSnapshots.append((info, savedCount))
    }

    fileprivate func planRules(source: String, origin: String) { plannedRules = (source, origin) }
    fileprivate func planSettings(_ settings: BucketSettings) { plannedSettings = settings }
    fileprivate var settingsPlanned: BucketSettings? { plannedSettings }
    fileprivate var rulesPlanned: (source: String, origin: String)? { plannedRules }
}

/// Snapshots in a plan: saves, restores and removals are checked and planned, never done.
private struct PlannedSnapshots: SnapshotStore {
    let plan: PlannedBucket
    let stored: any SnapshotStore

    func saveSnapshot(named name: String) async throws -> SnapshotInfo {
        try SnapshotInfo.validate(name: name)
        if let existing = try await snapshots().first(where: { $0.name == name }) {
            throw SnapshotInfo.nameTaken(existing)
        }
        let info = SnapshotInfo(name: name, created: plan.clock.now(), objectCount: try await objectCount())
        try plan.saveSnapshot(info)
        return info
    }

    /// The stored snapshots, then those the plan saved.
    func snapshots() async throws -> [SnapshotInfo] { try await stored.snapshots() + plan.plannedSnapshots.map(\.info) }

    func changes(from old: BucketState, to new: BucketState, each body: (ObjectChange) throws -> Void) async throws {
        for state in [old, new] {
            if case .snapshot(let name) = state, plan.plannedSnapshots.contains(where: { $0.info.name == name }) {
                throw StorageError.invalidArgument(
                    "Snapshot \(name) is only planned in this dry run; snapshot diff compares snapshots that are stored."
                )
            }
        }
        try await stored.changes(from: old, to: new, each: body)
    }

    func restoreSnapshot(named name: String, each body: (ObjectChange) throws -> Void) async throws {
        let planned: [ObjectChange]
        if let saved = plan.plannedSnapshots.last(where: { $0.info.name == name }) {
            planned = try await plan.planRestore(ofSaved: saved.saved)
        } else {
            planned = try await plan.planRestore(try await stored.changes(from: .current, to: .snapshot(name)))
        }
        for change in planned { try body(change) }
    }

    func removeSnapshot(named name: String) async throws -> SnapshotInfo {
        if let index = plan.plannedSnapshots.firstIndex(where: { $0.info.name == name }) {
            let removed = plan.plannedSnapshots.remove(at: index)
            try plan.store.dropSavedEntries(removed.saved)
            return removed.info
        }
        // An unknown name gets the store's own message (with its suggestion).
        _ = try await stored.changes(from: .snapshot(name), to: .snapshot(name))
        guard let info = try await stored.snapshots().first(where: { $0.name == name }) else {
            throw StorageError.invalidArgument("No snapshot named \(name).")
        }
        return info
    }

    func objectCount() async throws -> Int { try await stored.objectCount() + plan.store.objectCountChange() }
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

/// The bucket's settings in a plan: a change is read back by the plan's later commands, and never stored.
private final class PlannedSettings: BucketSettingsStore {
    let plan: PlannedBucket
    let stored: any BucketSettingsStore

    init(plan: PlannedBucket, stored: any BucketSettingsStore) {
        self.plan = plan
        self.stored = stored
    }

    func storedSettings() throws -> BucketSettings? { try plan.settingsPlanned ?? stored.storedSettings() }
    func storeSettings(_ settings: BucketSettings) throws { plan.planSettings(settings) }
}

/// A `login` or `logout` in a plan: the plan reads as the user from then on, and its changes are made as that user
/// when it is applied; the bucket's own sign-in is not touched (a dry run signs no one in, and a script that fails
/// leaves whoever was signed in before).
final class PlannedSignIn: EndUserSignIn, @unchecked Sendable {
    private let plan: PlannedBucket
    private let real: any EndUserSignIn

    init(plan: PlannedBucket, real: any EndUserSignIn) {
        self.plan = plan
        self.real = real
    }

    func user(idToken: String) throws(StorageError) -> any SignedInUser { try real.user(idToken: idToken) }
    func user(uid: String, claims: [String: String]) throws(StorageError) -> any SignedInUser {
        try real.user(uid: uid, claims: claims)
    }
    var signedInUser: (any SignedInUser)? { plan.signedIn }
    func restore(_ user: (any SignedInUser)?) { plan.signIn(as: user) }
    func reads(as user: (any SignedInUser)?) -> any Bucket { real.reads(as: user) }
    var lastAnswer: ServiceAnswer? { real.lastAnswer }
}

/// The generations of a planned bucket (rules B5, B6): read from the bucket as it is; a restore is a planned change
/// like a write, applied as `objects.restore` under the state it was planned from. A change of one generation by
/// number is not planned: it is refused before anything is sent.
private final class PlannedVersions: ObjectVersions {
    let plan: PlannedBucket
    let stored: any ObjectVersions

    init(plan: PlannedBucket, stored: any ObjectVersions) {
        self.plan = plan
        self.stored = stored
    }

    func generation(named text: String) -> ObjectGeneration? { stored.generation(named: text) }

    func metadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await stored.metadata(of: object, generation: generation)
    }

    func read(
        _ object: ObjectName, generation: ObjectGeneration, into sink: any ContentSink
    ) async throws -> ObjectMetadata {
        try await stored.read(object, generation: generation, into: sink)
    }

    func softDeletedMetadata(of object: ObjectName, generation: ObjectGeneration) async throws -> ObjectMetadata {
        try await stored.softDeletedMetadata(of: object, generation: generation)
    }

    func hasNoncurrentGenerations() async throws -> Bool { try await stored.hasNoncurrentGenerations() }

    func deletionsKept() async throws -> DeletionKeeping { try await stored.deletionsKept() }

    func listGenerations(
        prefix: String, delimited: Bool, options: ListOptions, softDeleted: Bool
    ) async throws -> ListPage {
        try await stored.listGenerations(
            prefix: prefix, delimited: delimited, options: options, softDeleted: softDeleted)
    }

    func updateMetadata(
        of object: ObjectName, generation: ObjectGeneration, _ update: MetadataUpdate, precondition: Precondition
    )
        async throws -> UpdateResult
    {
        throw Self.notPlanned("a change of one generation's metadata", on: plan)
    }

    func delete(_ object: ObjectName, generation: ObjectGeneration, precondition: Precondition) async throws {
        throw Self.notPlanned("a delete of one generation", on: plan)
    }

    func restore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition
    ) async throws -> ObjectMetadata {
        try await plan.planRestore(object, generation: generation, precondition: precondition, from: stored)
    }

    private static func notPlanned(_ what: String, on plan: PlannedBucket) -> StorageError {
        .invalidArgument(
            "\(what.prefix(1).uppercased() + what.dropFirst()) is not planned on \(plan.scheme)://\(plan.name); nothing was sent."
        )
    }
}

extension PlannedBucket {
    /// A planned restore of a soft-deleted generation (rule B6): the live object becomes that generation's content
    /// and metadata as a new generation, if the object as planned satisfies `precondition` and nothing keeps it.
    fileprivate func planRestore(
        _ object: ObjectName, generation: ObjectGeneration, precondition: Precondition, from stored: any ObjectVersions
    )
        async throws -> ObjectMetadata
    {
        // S3 restores a noncurrent version (a copy of it), Cloud Storage a soft-deleted generation.
        let soft =
            if case .version = generation {
                try await stored.metadata(of: object, generation: generation)
            } else {
                try await stored.softDeletedMetadata(of: object, generation: generation)
            }
        let existing = try await metadataIfPresent(of: object)
        try require(precondition, object, existing)
        try existing?.refuseIfProtected(.overwritten, now: clock.now())
        let now = clock.nextChangeTime()
        var restored = soft
        if case .number(let number) = generation {
            restored.generation = max(now.microseconds, (existing?.generation ?? 0) + 1, number + 1)
        }
        restored.metageneration = 1
        restored.timeCreated = now
        restored.updated = now
        restored.cloudStorage.softDeleteTime = nil
        restored.cloudStorage.hardDeleteTime = nil
        var change = PlannedChange(object: object.rawValue, before: existing, after: restored, step: step)
        change.restoresGeneration = generation
        try record(change, content: .unknown)
        return restored
    }
}

/// The plan's moves: each planned (`PlannedBucket.planMove`), none sent.
private final class PlannedMoves: ObjectMoves, @unchecked Sendable {
    let plan: PlannedBucket
    /// As the bucket will make them.
    let movesInOneStep: Bool

    init(plan: PlannedBucket, inOneStep: Bool) {
        self.plan = plan
        movesInOneStep = inOneStep
    }

    func move(
        _ source: ObjectName, to destination: ObjectName, sourcePrecondition: Precondition,
        destinationPrecondition: Precondition
    )
        async throws -> ObjectMetadata
    {
        try await plan.planMove(
            source, to: destination, sourcePrecondition: sourcePrecondition,
            destinationPrecondition: destinationPrecondition)
    }
}

/// A dry run's uniform update, previewed by the bucket (`PlannedBucket.uniformUpdates`): what an apply would do to
/// each object, counted as the plan's, nothing written.
final class PreviewedUniformUpdates: UniformUpdates, Sendable {
    let inner: any UniformUpdates
    let plan: PlannedBucket

    init(inner: any UniformUpdates, plan: PlannedBucket) {
        self.inner = inner
        self.plan = plan
    }

    func updatePage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        let page = try await inner.previewPage(prefix: prefix, after: after, limit: limit, update, picking: picking)
        plan.previewedChanges += page.outcomes.count { if case .updated = $0 { true } else { false } }
        return page
    }

    func previewPage(
        prefix: String, after: String?, limit: Int, _ update: MetadataUpdate, picking: (String) throws -> Bool
    ) async throws -> UniformUpdatePage {
        try await inner.previewPage(prefix: prefix, after: after, limit: limit, update, picking: picking)
    }
}
