import Foundation
import StoreshCore
import Synchronization

/// Where apply records what it did (rule X4): each applied change before the run reports it, so that a run
/// stopped anywhere (Ctrl-C, kill -9, a lost network) can be finished or undone.
package protocol ApplyJournal: AnyObject, Sendable {
    /// Where the journal is, for messages (`storesh run --resume PATH`).
    var location: String { get }
    /// The change numbered `index` landed, leaving the object as `result` (nil: deleted), where the plan expected
    /// `planned`. `found` when a resumed run found it already applied (its first run applied it and stopped
    /// before recording it).
    func applied(_ index: Int, result: ObjectMetadata?, planned: ObjectMetadata?, found: Bool) throws
    /// The change numbered `index` failed and was not applied.
    func failed(_ index: Int, _ error: StorageError) throws
    /// How the run ended.
    func ended(_ outcome: ApplyOutcome) throws
}

/// How far apply has come, for a progress line.
package struct ApplyProgress: Sendable {
    package var done: Int
    package var total: Int
    package var failed: Int
    package var started: ContinuousClock.Instant
}

/// How an apply ended.
package struct ApplyOutcome: Sendable {
    package enum End: String, Sendable {
        /// Every change was applied.
        case complete
        /// A change failed (without `--keep-going`): the rest were not sent.
        case stopped
        /// Ctrl-C: what was in flight finished; the rest were not sent.
        case interrupted
        /// With `--keep-going`: every change was tried; some failed.
        case finishedWithFailures = "finished-with-failures"
    }

    package var end: End
    /// How many changes are applied, in this run or before it (a resumed run).
    package var applied: Int
    /// How many failed.
    package var failed: Int
    /// How many were not sent.
    package var notSent: Int
    /// The first failures, in change order (at most `shownFailures`), with why: a run of millions may fail
    /// millions of times, and the journal holds them all.
    package var failures: [(index: Int, error: StorageError)]
    /// Whether a failure was a passing fault (unavailable, cancelled, …) that resuming may get past.
    package var hasPassingFailures: Bool
    /// Whether a failure was a refusal or a change overtaken by another writer, which resuming does not mend.
    package var hasLastingFailures: Bool

    /// How many changes landed otherwise than planned (`PlanApplier.landedOtherwise`), and the first of them with
    /// what differs (result against plan): applied, and said apart.
    package var landedOtherwiseCount = 0
    package var landedOtherwise: [(object: String, differences: [PropertyDifference])] = []

    package static let shownFailures = 100
    /// Failures that resuming may get past.
    package static let passingCodes: Set<StorageErrorCode> = [.unavailable, .cancelled, .internalError, .unknown]
}

/// Sends a plan's changes to a bucket (rules X2–X5): each with the precondition of the state it was planned from
/// (G5), many at once but never two for one object together and never a command's before the previous
/// command's, recorded in the journal as each lands.
///
/// The plan is read from its store a batch at a time, and what each change became is recorded there: memory
/// holds the changes in flight, not the plan.
package final class PlanApplier: @unchecked Sendable {
    let bucket: any Bucket
    let plan: PlanStore
    let parallel: Int
    let batchSize: Int
    let keepGoing: Bool
    let journal: (any ApplyJournal)?
    let isCancelled: @Sendable () -> Bool
    let progress: (@Sendable (ApplyProgress) -> Void)?

    /// How far the run has come, shared by the changes in flight.
    private struct Tally {
        var done = 0
        var failed = 0
        var total = 0
        var landedOtherwiseCount = 0
        var landedOtherwise: [(object: String, differences: [PropertyDifference])] = []
    }

    private let tally = Mutex(Tally())

    package init(
        bucket: any Bucket, plan: PlanStore, parallel: Int, batchSize: Int = ApplySettings.defaultBatchSize,
        keepGoing: Bool,
        journal: (any ApplyJournal)?, isCancelled: @escaping @Sendable () -> Bool,
        progress: (@Sendable (ApplyProgress) -> Void)? = nil
    ) {
        self.bucket = bucket
        self.plan = plan
        self.parallel = max(1, parallel)
        self.batchSize = max(1, batchSize)
        self.keepGoing = keepGoing
        self.journal = journal
        self.isCancelled = isCancelled
        self.progress = progress
    }

    /// In a resumed run a change may have landed before the journal heard of it (the first run was killed in
    /// between): a refused precondition is then checked against the planned state.
    private var checkForLanded = false

    /// How many changes are read from the plan at a time.
    static let batchSize = 512

    /// Applies every change not applied yet, in order: a command's changes after the previous command's have all
    /// ended, and a change to an object only once the earlier change to it has; up to `parallel` at a time.
    package func apply(resumed: Bool = false) async -> ApplyOutcome {
        checkForLanded = resumed
        let started = ContinuousClock.now
        var stopped = false
        var interrupted = false
        var readFailure: StorageError?
        do {
            // A resumed run tries again what failed before.
            try plan.forgetFailures()
            let counts = try plan.outcomeCounts()
            let total = plan.countedChanges
            tally.withLock { ($0.total, $0.done) = (total, counts.applied) }
        } catch {
            readFailure = error
        }
        // Rule Q2: metadata changes and deletes go many to a request where the bucket takes batches.
        let batching = batchSize > 1 ? bucket.batchedChanges : nil
        let largestBatch = min(batchSize, batching?.largestBatch ?? 1)
        // Eight batches in flight are hundreds of changes, more than any documented rate needs at any round trip;
        // more would only hold more answers in memory.
        let inFlightLimit = batching == nil ? parallel : min(parallel, Self.batchesInFlight)
        await withTaskGroup(of: [String].self) { group in
            // By bytes (rule P7): two canonically equivalent names are two objects, changed in parallel.
            var inFlight: Set<ObjectName> = []
            var running = 0
            var step: Int?
            var next = 0
            // The batch being filled: its objects count as in flight, and it is sent when full, when a change
            // cannot join it, and at the end.
            var batch: [PlanStore.PendingChange] = []
            var batched: Set<ObjectName> = []
            // The moves this run sends: their sources' changes are settled by them.
            var movesSent: Set<Int> = []
            func finishOne() async {
                guard let objects = await group.next() else { return }
                running -= 1
                for object in objects { inFlight.remove(ObjectName(stored: object)) }
            }
            func sendBatch() {
                guard let batching, !batch.isEmpty else { return }
                let taken = batch
                batch = []
                batched = []
                running += 1
                group.addTask {
                    // A batch of one is the request alone: what `explain` shows, without the batch's envelope.
                    if taken.count == 1 {
                        await self.send(taken[0], started: started)
                    } else {
                        await self.send(taken, through: batching, started: started)
                    }
                    return taken.map(\.change.object)
                }
            }
            reading: while readFailure == nil {
                let page: (changes: [PlanStore.PendingChange], next: Int?)
                do {
                    page = try plan.pending(from: next, limit: Self.batchSize)
                } catch let error as StorageError {
                    readFailure = error
                    break
                } catch {
                    readFailure = .internalError("\(error)")
                    break
                }
                guard let following = page.next else { break }
                next = following
                for pending in page.changes {
                    let change = pending.change
                    // The source leaving in a move is applied with its move (the change before it).
                    if change.movedTo != nil {
                        if !movesSent.contains(pending.index - 1) { settleLeavingOfLandedMove(pending) }
                        continue
                    }
                    let object = ObjectName(stored: change.object)
                    // A move changes two objects: both wait for the changes of either in flight.
                    let objects = [object] + (change.movesFrom.map { [ObjectName(stored: $0)] } ?? [])
                    if change.step != step {
                        sendBatch()
                        while running > 0 { await finishOne() }
                        step = change.step
                    }
                    // A later change of an object waits for the earlier one, in the batch being filled too.
                    if objects.contains(where: batched.contains) { sendBatch() }
                    while running >= inFlightLimit || objects.contains(where: inFlight.contains) { await finishOne() }
                    if isCancelled() { interrupted = true }
                    if tally.withLock({ $0.failed > 0 }) && !keepGoing { stopped = true }
                    if interrupted || stopped { break reading }
                    inFlight.formUnion(objects)
                    if batching != nil, Self.isBatchable(change) {
                        batch.append(pending)
                        batched.insert(object)
                        if batch.count >= largestBatch { sendBatch() }
                    } else {
                        running += 1
                        if change.movesFrom != nil { movesSent.insert(pending.index) }
                        group.addTask {
                            if change.movesFrom != nil {
                                await self.sendMove(pending, started: started)
                            } else {
                                await self.send(pending, started: started)
                            }
                            return objects.map(\.rawValue)
                        }
                    }
                }
            }
            if !interrupted && !stopped { sendBatch() }
            while running > 0 { await finishOne() }
        }
        if tally.withLock({ $0.failed > 0 }) && !keepGoing { stopped = true }
        let counts: (applied: Int, failed: Int) =
            (try? plan.outcomeCounts()) ?? tally.withLock { ($0.done - $0.failed, $0.failed) }
        var failures = (try? plan.failures(limit: ApplyOutcome.shownFailures)) ?? []
        // The plan's own file failing (a full disk) stops the run: said first, at no change of the plan.
        if let readFailure { failures.insert((0, readFailure), at: 0) }
        let outcome = ApplyOutcome(
            end: interrupted
                ? .interrupted
                : stopped || readFailure != nil ? .stopped : counts.failed == 0 ? .complete : .finishedWithFailures,
            applied: counts.applied, failed: counts.failed,
            notSent: max(0, tally.withLock { $0.total } - counts.applied - counts.failed),
            failures: failures,
            hasPassingFailures: (try? plan.hasFailures { ApplyOutcome.passingCodes.contains($0) }) ?? true,
            hasLastingFailures: (try? plan.hasFailures { !ApplyOutcome.passingCodes.contains($0) }) ?? false,
            landedOtherwiseCount: tally.withLock { $0.landedOtherwiseCount },
            landedOtherwise: tally.withLock { $0.landedOtherwise })
        try? journal?.ended(outcome)
        return outcome
    }

    private func send(_ pending: PlanStore.PendingChange, started: ContinuousClock.Instant) async {
        let outcome: Result<ObjectMetadata?, Error>
        do {
            outcome = .success(try await perform(pending.change, from: currentState(pending)))
        } catch {
            outcome = .failure(error)
        }
        await settle(pending, outcome)
        reportProgress(started: started)
    }

    /// A move: the source leaving (the change after `arriving`) and the object arriving, in one call of the bucket's
    /// move, guarded by the states the two changes go from; both are settled by its outcome.
    private func sendMove(_ arriving: PlanStore.PendingChange, started: ContinuousClock.Instant) async {
        let leaving = (try? plan.pending(from: arriving.index + 1, limit: 1))?.changes.first
        let outcome: Result<ObjectMetadata?, Error>
        do {
            guard let leaving, leaving.index == arriving.index + 1, let destination = leaving.change.movedTo,
                NameBytes.sameBytes(destination, arriving.change.object), let origin = arriving.change.movesFrom
            else {
                throw StorageError.internalError(
                    "The plan's move to \(arriving.change.object) has lost the change of its source; nothing was moved."
                )
            }
            guard let moves = bucket.objectMoves else {
                throw StorageError.invalidArgument("\(bucket.url) moves no objects; \(origin) was not moved.")
            }
            guard let source = currentState(leaving) else { throw StorageError.objectNotFound(origin) }
            outcome = .success(
                try await moves.move(
                    try ObjectName(origin), to: try ObjectName(arriving.change.object),
                    sourcePrecondition: .matches(source),
                    destinationPrecondition: Self.writePrecondition(current: currentState(arriving))))
        } catch let half as HalfMove {
            // Copied, not deleted (a bucket that moves in two steps): the object arrived, and the source stays.
            await settle(arriving, .success(half.arrived))
            if let leaving { await settle(leaving, .failure(half.failure)) }
            reportProgress(started: started)
            return
        } catch {
            outcome = .failure(error)
        }
        await settle(arriving, outcome)
        if let leaving, leaving.change.movedTo != nil { await settle(leaving, outcome.map { _ in nil }) }
        reportProgress(started: started)
    }

    /// The source leaving in a move whose arriving change a run before this one recorded, and stopped before it
    /// recorded this one: applied with it. (A move this run sends settles its source's change itself.)
    private func settleLeavingOfLandedMove(_ leaving: PlanStore.PendingChange) {
        guard leaving.index > 0, let landed = try? plan.appliedResult(ofChange: leaving.index - 1), landed != nil else {
            return
        }
        try? record(leaving, result: nil, found: true)
    }

    /// Changes sent as one batch (rule Q2); each is settled on its own, as it would have been alone.
    private func send(
        _ pendings: [PlanStore.PendingChange], through batching: any BatchedChanges, started: ContinuousClock.Instant
    ) async {
        var calls: [BatchedChange] = []
        var sent: [PlanStore.PendingChange] = []
        for pending in pendings {
            do {
                calls.append(try Self.batchedChange(pending.change, from: currentState(pending)))
                sent.append(pending)
            } catch {
                await settle(pending, .failure(error))
            }
        }
        let outcomes = calls.isEmpty ? [] : await batching.send(calls)
        for (pending, outcome) in zip(sent, outcomes) {
            await settle(pending, outcome.map { $0 }.mapError { $0 as Error })
        }
        reportProgress(started: started)
    }

    /// The most batch requests in flight at once.
    static let batchesInFlight = 8

    /// Whether a change can go in a batch: a metadata change or a delete (content goes on its own, and so does a
    /// change of storage class, a rewrite of the object).
    static func isBatchable(_ change: PlannedChange) -> Bool {
        guard !change.writesContent, change.movedTo == nil, let before = change.before else { return false }
        return change.after.map { !before.rewrites(to: $0) } ?? true
    }

    /// The state a change goes from: a later change of an object is guarded by what the earlier one left, not by
    /// the plan's guess (a write's generation is the service's to choose).
    private func currentState(_ pending: PlanStore.PendingChange) -> ObjectMetadata? {
        if pending.touches > 1, let landed = try? plan.landed(pending.change.object) { return landed }
        return pending.change.before
    }

    /// Records how a change ended: applied (journal first), or failed. In a resumed run, a refusal may mean the
    /// first run applied it and stopped before recording it: the object is then checked against the plan.
    private func settle(_ pending: PlanStore.PendingChange, _ outcome: Result<ObjectMetadata?, Error>) async {
        let change = pending.change
        do {
            try record(pending, result: try outcome.get(), found: false)
        } catch let error as StorageError {
            // Read as it is now: present, or absent (a delete, a move's source, that landed), or unread (nil).
            if checkForLanded, error.code == .preconditionFailed || error.code == .objectNotFound,
                case .some(let now) = await currentObject(change.object), Self.isAsPlanned(now, change)
            {
                try? record(pending, result: now, found: true)
            } else {
                fail(pending, error)
            }
        } catch {
            fail(pending, StorageError.internalError("\(error)"))
        }
    }

    /// The object as the bucket has it now (`.some(nil)`: it has none), or nil when it could not be read.
    private func currentObject(_ name: String) async -> ObjectMetadata?? {
        do {
            return .some(try await bucket.metadataIfPresent(of: ObjectName(name)))
        } catch {
            return nil
        }
    }

    private func reportProgress(started: ContinuousClock.Instant) {
        guard let progress else { return }
        progress(tally.withLock { ApplyProgress(done: $0.done, total: $0.total, failed: $0.failed, started: started) })
    }

    private func fail(_ pending: PlanStore.PendingChange, _ error: StorageError) {
        // A move is counted once, by its source's change (as `PlanStore.outcomeCounts` counts it).
        if pending.change.movesFrom == nil {
            tally.withLock {
                $0.done += 1
                $0.failed += 1
            }
        }
        try? plan.record(.failed(error), ofChange: pending.index)
        try? journal?.failed(pending.index, error)
    }

    private func record(_ pending: PlanStore.PendingChange, result: ObjectMetadata?, found: Bool) throws {
        // Journal first: a change is reported only once it is recorded (rule X4).
        try journal?.applied(pending.index, result: result, planned: pending.change.after, found: found)
        try plan.record(.applied(result: result, found: found), ofChange: pending.index)
        if pending.touches > 1 { try plan.setLanded(ofChange: pending.index, result) }
        // A metadata change names exactly what it makes; a write's object is the service's to describe (its type,
        // its own defaults), so only a metadata change is held to its plan.
        let otherwise =
            pending.change.writesContent
            ? []
            : result.flatMap { result in pending.change.after.map { Self.landedOtherwise(result, planned: $0) } } ?? []
        tally.withLock { tally in
            if pending.change.movesFrom == nil { tally.done += 1 }
            if !otherwise.isEmpty {
                tally.landedOtherwiseCount += 1
                if tally.landedOtherwise.count < ApplyOutcome.shownFailures {
                    tally.landedOtherwise.append((pending.change.object, otherwise))
                }
            }
        }
    }

    /// What the bucket kept otherwise than the plan said (a service that drops a field it does not know, or changes
    /// one on its own): each writable property, custom key and Cloud
    /// Storage field that differs, the service's download tokens (rule G7) aside, and a custom time that is the
    /// planned one to the millisecond (as the service's resources write times).
    static func landedOtherwise(_ result: ObjectMetadata, planned: ObjectMetadata) -> [PropertyDifference] {
        result.withoutDownloadTokens.differences(to: planned.withoutDownloadTokens).filter { difference in
            guard difference.key == CloudStorageWritableField.customTime.key, let kept = result.cloudStorage.customTime,
                let wanted = planned.cloudStorage.customTime
            else { return true }
            return kept.microseconds / 1000 != wanted.microseconds / 1000
        }
    }

    /// One change, guarded by the state it goes from (rule G5).
    private func perform(_ change: PlannedChange, from current: ObjectMetadata?) async throws -> ObjectMetadata? {
        guard let after = change.after, change.writesContent else {
            return try await bucket.apply(try Self.batchedChange(change, from: current))
        }
        let name = try ObjectName(change.object)
        if let generation = change.restoresGeneration {
            guard let versions = bucket.objectVersions else {
                throw StorageError.invalidArgument(
                    "\(bucket.url) restores no soft-deleted generation; \(change.object) was not restored.")
            }
            return try await versions.restore(
                name, generation: generation, precondition: Self.writePrecondition(current: current))
        }
        var options = WriteOptions(customMetadata: after.customMetadata, expectedMD5: after.md5Hash)
        for property in WritableProperty.allCases {
            if let value = after[property] { options.properties[property] = value }
        }
        let precondition = Self.writePrecondition(current: current)
        if let source = change.source {
            return try await bucket.write(from: source, to: name, options: options, precondition: precondition)
        }
        guard let content = change.content else {
            throw StorageError.invalidArgument(
                "The content of \(change.object) (\(change.contentOrigin ?? "a file")) is not at hand; nothing was written."
            )
        }
        return try await bucket.write(content, to: name, options: options, precondition: precondition)
    }

    /// A metadata change or a delete, guarded by the state it goes from (rule G5), as a bucket takes it alone or
    /// in a batch.
    static func batchedChange(_ change: PlannedChange, from current: ObjectMetadata?) throws -> BatchedChange {
        let name = try ObjectName(change.object)
        guard let current else { throw StorageError.objectNotFound(change.object) }
        guard let after = change.after else { return .delete(name, precondition: deletePrecondition(current: current)) }
        return .metadata(name, from: current, to: after)
    }

    /// What a delete applied from a plan requires (rule G5): the content it was planned from. `explain` shows it.
    package static func deletePrecondition(current: ObjectMetadata) -> Precondition { .sameContent(as: current) }

    /// What a write applied from a plan requires: the content it was planned from, or no object at all.
    package static func writePrecondition(current: ObjectMetadata?) -> Precondition {
        current.map { Precondition.sameContent(as: $0) } ?? .doesNotExist
    }

    /// Whether the object is as the change would leave it (a resumed run's change that had landed unrecorded).
    static func isAsPlanned(_ object: ObjectMetadata?, _ change: PlannedChange) -> Bool {
        guard let after = change.after else { return object == nil }
        guard let object else { return false }
        if change.writesContent && object.md5Hash != after.md5Hash { return false }
        return object.differences(to: after).isEmpty
    }
}

// MARK: The journal's records

/// The journal's lines (rule X4), one JSON document each: a header, the whole plan, then one line per change
/// applied or failed, and how the run ended. Content of planned writes is kept (base64) so that a resumed run
/// can send it; no credential is ever written.
package enum JournalRecord {
    package static let format = "storesh-journal"
    /// Version 1 wrote every state whole; version 2 writes a change's `after` as it differs from its `before`
    /// (`afterChanges`) and an applied change's result as it differs from its `after` (`resultChanges`): half the
    /// bytes, about 580 per metadata change. Both are read.
    package static let version = 2
    static let readableVersions = 1...2

    package static func header(bucket: String, source: String, changes: Int, created: Timestamp) -> String {
        JSONValue.object([
            ("format", .string(format)), ("version", .integer(Int64(version))), ("bucket", .string(bucket)),
            ("source", .string(source)), ("created", .string(created.rfc3339)), ("changes", .integer(Int64(changes))),
        ]).serialized
    }

    package static func change(_ index: Int, _ change: PlannedChange) -> String {
        var members: [(String, JSONValue)] = [
            ("change", .integer(Int64(index))), ("step", .integer(Int64(change.step))),
            ("object", .string(change.object)),
        ]
        if let before = change.before?.jsonDocument, let after = change.after?.jsonDocument {
            members += [("before", before), ("afterChanges", difference(after, from: before))]
        } else {
            members += [
                ("before", change.before?.jsonDocument ?? .null), ("after", change.after?.jsonDocument ?? .null),
            ]
        }
        if let content = change.content { members.append(("content", .string(content.base64EncodedString()))) }
        // A large file is named, not copied: a resumed run reads it again (and checks it is unchanged).
        if let origin = change.contentOrigin { members.append(("contentFrom", .string(origin))) }
        switch change.restoresGeneration {
        case .number(let generation)?: members.append(("restoresGeneration", .integer(generation)))
        case .version(let id)?: members.append(("restoresVersion", .string(id)))
        case nil: break
        }
        if let origin = change.movesFrom { members.append(("movesFrom", .string(origin))) }
        if let destination = change.movedTo { members.append(("movedTo", .string(destination))) }
        return JSONValue.object(members).serialized
    }

    /// An applied change: the state it left (`result`), written as it differs from the planned one when there was
    /// one (`resultChanges`: most often only the time of the change).
    package static func applied(_ index: Int, result: ObjectMetadata?, planned: ObjectMetadata?, found: Bool) -> String
    {
        var members: [(String, JSONValue)] = [("applied", .integer(Int64(index)))]
        if let result = result?.jsonDocument, let planned = planned?.jsonDocument {
            members.append(("resultChanges", difference(result, from: planned)))
        } else {
            members.append(("result", result?.jsonDocument ?? .null))
        }
        if found { members.append(("found", .bool(true))) }
        return JSONValue.object(members).serialized
    }

    /// The members of the object `document` that `base` lacks or has otherwise, and a null for each member of
    /// `base` that `document` lacks. Members are whole: a changed custom metadata is its whole object.
    static func difference(_ document: JSONValue, from base: JSONValue) -> JSONValue {
        guard case .object(let members) = document, case .object(let baseMembers) = base else { return document }
        var changed: [(String, JSONValue)] = []
        for (key, value) in members where !baseMembers.contains(where: { $0.0 == key && $0.1 == value }) {
            changed.append((key, value))
        }
        for (key, _) in baseMembers where !members.contains(where: { $0.0 == key }) { changed.append((key, .null)) }
        return .object(changed)
    }

    /// A state's metadata document, as JSONSerialization reads one.
    private static func metadataDocument(_ metadata: ObjectMetadata) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(metadata.jsonDocument.serialized.utf8))) as? [String: Any] ?? [:]
    }

    /// `base` with a `difference` laid over it (a null member removes the member).
    static func applying(_ difference: [String: Any], to base: [String: Any]) -> [String: Any] {
        var document = base
        for (key, value) in difference { document[key] = value is NSNull ? nil : value }
        return document
    }

    package static func failed(_ index: Int, _ error: StorageError) -> String {
        JSONValue.object([
            ("failed", .integer(Int64(index))), ("code", .string(error.code.name)), ("message", .string(error.message)),
        ]).serialized
    }

    package static func ended(_ outcome: ApplyOutcome) -> String {
        JSONValue.object([
            ("end", .string(outcome.end.rawValue)), ("applied", .integer(Int64(outcome.applied))),
            ("failed", .integer(Int64(outcome.failed))), ("notSent", .integer(Int64(outcome.notSent))),
        ]).serialized
    }

    /// A journal read back: its bucket, its plan (with what was applied, and the state each applied change left),
    /// and how its last run ended.
    package struct Contents: Sendable {
        package var bucket: String
        package var source: String
        package var plan: PlanStore
        /// How the last run on it ended; nil when it never said (kill -9, a lost machine).
        package var end: String?
    }

    /// Reads a journal a line at a time (`nextLine` gives each line without its newline, and whether the line
    /// ended in one; nil at the end) into a plan store; anything that is not one is invalid-argument naming the
    /// line. A last line cut short (the run was killed while writing it) is ignored: its change is then checked
    /// against the bucket on resume. `reopen` opens the large files a plan names, for a run that will send them
    /// (nil: they are not needed, as in an undo, which sends no content).
    package static func read(
        source: String, nextLine: () throws -> (line: [UInt8], ended: Bool)?,
        reopen: ((String) throws(StorageError) -> any ContentSource)? = nil, counting: (any WorkCounter)? = nil
    ) throws -> Contents {
        counting?.begin("reading the journal", total: nil, unit: "record")
        defer { counting?.end() }
        // JSONSerialization, not JSONDecoder: reading each line as Decodable types (or as JSONValue) made an undo of
        // 200,000 changes 1.26 to 1.37 times slower (farm-bench, release, 2026-11-28); this reader stays the one
        // place a journal's states are read, checked member by member below.
        func document(_ bytes: [UInt8]) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        }
        var number = 1
        func nextNonEmpty() throws -> (line: [UInt8], ended: Bool)? {
            while let next = try nextLine() {
                defer { number += 1 }
                if !next.line.isEmpty { return next }
            }
            return nil
        }
        guard let first = try nextNonEmpty(), let header = document(first.line), header["format"] as? String == format,
            let bucket = header["bucket"] as? String, let count = (header["changes"] as? NSNumber)?.intValue
        else {
            throw StorageError.invalidArgument(
                "\(source) is not a storesh journal (its first line is not a journal header).")
        }
        guard let lineVersion = (header["version"] as? NSNumber)?.intValue, readableVersions.contains(lineVersion)
        else {
            throw StorageError.invalidArgument(
                "\(source) is a journal of another version of storesh; this one reads versions \(readableVersions.lowerBound) to \(readableVersions.upperBound)."
            )
        }
        let plan = try PlanStore()
        var contents = Contents(bucket: bucket, source: header["source"] as? String ?? "", plan: plan)
        while let (bytes, ended) = try nextNonEmpty() {
            counting?.advance()
            let at = number - 1
            guard let line = document(bytes) else {
                if !ended { break }
                throw StorageError.invalidArgument("\(source):\(at): not a journal record.")
            }
            /// The state under `key`, or under `key`Changes as it differs from `base` (which must then exist).
            func metadata(
                _ key: String, differingFrom base: ObjectMetadata? = nil
            ) throws(StorageError) -> ObjectMetadata? {
                if let difference = line[key + "Changes"] {
                    guard let base, let difference = difference as? [String: Any],
                        let metadata = ObjectMetadata(jsonDocument: applying(difference, to: metadataDocument(base)))
                    else {
                        throw .invalidArgument(
                            "\(source):\(at): '\(key)Changes' is not a difference of metadata documents.")
                    }
                    return metadata
                }
                guard let value = line[key], !(value is NSNull) else { return nil }
                guard let document = value as? [String: Any], let metadata = ObjectMetadata(jsonDocument: document)
                else {
                    throw .invalidArgument("\(source):\(at): '\(key)' is not a metadata document.")
                }
                return metadata
            }
            if let end = line["end"] as? String {
                contents.end = end
            } else if let index = (line["change"] as? NSNumber)?.intValue {
                guard index == plan.count, let object = line["object"] as? String else {
                    throw StorageError.invalidArgument("\(source):\(at): change \(index) is out of order.")
                }
                var content: Data?
                if let text = line["content"] as? String {
                    guard let data = Data(base64Encoded: text) else {
                        throw StorageError.invalidArgument("\(source):\(at): bad content.")
                    }
                    content = data
                }
                var reopened: (any ContentSource)?
                let origin = line["contentFrom"] as? String
                if let origin, let reopen { reopened = try reopen(origin) }
                let before = try metadata("before")
                let after = try metadata("after", differingFrom: before)
                if let reopened, let after, reopened.md5Base64 != after.md5Hash || reopened.size != after.size {
                    throw StorageError.invalidArgument(
                        "\(origin ?? "The file") changed since the run was planned (its MD5 is no longer \(after.md5Hash)); it is not uploaded."
                    )
                }
                var change = PlannedChange(
                    object: object, before: before, after: after, content: content, source: reopened,
                    step: (line["step"] as? NSNumber)?.intValue ?? 0)
                change.contentOrigin = origin
                change.restoresGeneration =
                    (line["restoresGeneration"] as? NSNumber).map { .number($0.int64Value) }
                    ?? (line["restoresVersion"] as? String).map { .version($0) }
                change.movesFrom = line["movesFrom"] as? String
                change.movedTo = line["movedTo"] as? String
                try plan.plan(change, content: .real)
            } else if let index = (line["applied"] as? NSNumber)?.intValue {
                guard index >= 0 && index < plan.count else {
                    throw StorageError.invalidArgument("\(source):\(at): no change \(index) in the plan.")
                }
                let result = try metadata("result", differingFrom: try plan.change(index)?.after)
                try plan.record(.applied(result: result, found: line["found"] as? Bool ?? false), ofChange: index)
                try plan.setLanded(ofChange: index, result)
            }
        }
        guard plan.count == count else {
            throw StorageError.invalidArgument(
                "\(source): the plan holds \(plan.count) of its \(count) changes; the journal was cut short before its run began."
            )
        }
        return contents
    }

    /// The plan that puts back what `journal`'s applied changes changed (rule X4), newest first, each guarded by
    /// the state the change left; and the applied changes that cannot be undone, with why.
    package static func undo(
        _ journal: Contents, counting: (any WorkCounter)? = nil
    ) throws -> (plan: PlanStore, impossible: ChangesNotUndone) {
        counting?.begin("planning the undo", total: nil)
        defer { counting?.end() }
        let undo = try PlanStore()
        var impossible = ChangesNotUndone()
        // An object changed several times goes back to its state before the first change; undo runs as one
        // command, every object at most once.
        try journal.plan.appliedObjects { object, original, result, movedWith in
            counting?.advance()
            if let movedWith {
                // A move is undone by a move back, planned from its destination's side (its source's side is that
                // same move back), where the run did nothing else to either object; otherwise both are named.
                let (source, destination) = result == nil ? (object, movedWith) : (movedWith, object)
                switch try moveBack(from: destination, to: source, journal.plan) {
                case .planned(let arriving, let leaving):
                    if result != nil {
                        try undo.append(arriving)
                        try undo.append(leaving)
                    }
                case .impossible(let why):
                    impossible.add(
                        object,
                        result == nil
                            ? "it was moved to \(movedWith), \(why) (mv \(movedWith) \(object) moves it back)"
                            : "it was moved here from \(movedWith), \(why) (mv \(object) \(movedWith) moves it back)")
                }
                return
            }
            switch (original, result) {
            case (nil, nil):
                return
            case (nil, let now?):
                try undo.append(PlannedChange(object: object, before: now, after: nil))
            case (let old?, let now?) where Self.sameStoredObject(old, now):
                // Every writable field as it was, Cloud Storage's own among them (rule M9); a custom time set by the
                // run cannot be removed, nor moved back. The run's change of storage class (the same content, a new
                // generation) is undone as it was made: the object rewritten to its old class.
                let restored: ObjectMetadata
                do throws(StorageError) {
                    restored = try now.replacingWritableMetadata(with: old, now: now.updated).metadata
                } catch {
                    impossible.add(object, error.message)
                    return
                }
                var planned = restored
                if !now.rewrites(to: restored) {
                    planned.metageneration = now.metageneration
                    planned.updated = now.updated
                }
                try undo.append(PlannedChange(object: object, before: now, after: planned))
            case (let old?, let now) where old.hasGenerations:
                // Deleted or replaced on a bucket that names generations: the old generation is brought back, where
                // the bucket keeps it soft-deleted (rule B6), as the live object again; a bucket that does not keep
                // it refuses the restore, and the run says so for that object.
                var restored = old
                restored.generation = max(old.generation, (now?.generation ?? 0)) + 1
                restored.metageneration = 1
                var planned = PlannedChange(object: object, before: now, after: restored)
                planned.restoresGeneration = .number(old.generation)
                try undo.append(planned)
            case (let old?, let now) where old.versionID != nil:
                // Deleted or replaced on a versioned S3 bucket: the old version, noncurrent now, copied back (rule S2);
                // a bucket that no longer keeps it refuses the restore, and the run says so for that object.
                var planned = PlannedChange(object: object, before: now, after: old)
                planned.restoresGeneration = old.generationID
                try undo.append(planned)
            case (_?, _):
                impossible.add(object, "its old content was replaced or deleted, and the journal keeps only metadata")
            }
        }
        return (undo, impossible)
    }

    /// Whether `now` is still the object `old` was, its metadata aside (so an undo puts the metadata back): the same
    /// generation, or the same content rewritten to another class; on S3, the same version where the bucket keeps
    /// versions (a change there is a new version, which the undo copies back instead), else the same content as far
    /// as its ETag says (a multipart upload's ETag is no MD5: taken as the same).
    static func sameStoredObject(_ old: ObjectMetadata, _ now: ObjectMetadata) -> Bool {
        if let version = old.versionID { return version == now.versionID }
        if old.hasGenerations {
            return old.generation == now.generation || (old.md5Hash == now.md5Hash && old.rewrites(to: now))
        }
        return old.md5Hash.isEmpty || old.md5Hash == now.md5Hash
    }

    enum MoveBack {
        case planned(arriving: PlannedChange, leaving: PlannedChange)
        case impossible(String)
    }

    /// The move back of a run's move from `source` to `destination`: the object, as the run left it at `destination`,
    /// moved to `source` again, guarded by that state and by `source` being free. Only where the run made the
    /// destination (it replaced nothing there) and changed neither object otherwise.
    static func moveBack(from destination: String, to source: String, _ plan: PlanStore) throws -> MoveBack {
        guard let arrived = try plan.appliedObject(destination), let left = try plan.appliedObject(source) else {
            return .impossible("and the journal does not record both halves of the move as applied")
        }
        guard let now = arrived.result, left.result == nil, let original = left.before,
            NameBytes.sameBytes(arrived.movedWith, source), NameBytes.sameBytes(left.movedWith, destination)
        else { return .impossible("and the run changed one of the two objects again") }
        guard arrived.before == nil else {
            return .impossible("which replaced an object there that undo cannot bring back")
        }
        guard original.differences(to: now).isEmpty, original.md5Hash == now.md5Hash else {
            return .impossible("and the run changed it after the move")
        }
        // The generation is the bucket's to give; the plan's guess is one past the object's (a journal's number may be
        // anything: it never traps).
        let (next, overflow) = now.generation.addingReportingOverflow(1)
        let back = now.moved(to: try ObjectName(source), generation: overflow ? now.generation : next, now: now.updated)
        var arriving = PlannedChange(object: source, before: nil, after: back)
        arriving.movesFrom = destination
        var leaving = PlannedChange(object: destination, before: now, after: nil)
        leaving.movedTo = source
        return .planned(arriving: arriving, leaving: leaving)
    }
}

/// What the program around the interpreter gives apply: where the journal goes and how progress is shown.
package struct ApplySettings {
    /// At a typical round trip of 30 ms, 32 changes in flight are about the 1,000 writes a second that Cloud Storage
    /// takes from a bucket before it ramps up: enough to keep a remote service busy without tripping its limits
    /// (a 429 is retried after its Retry-After anyway). Over HTTP/2 they share one connection.
    package static let defaultParallel = 32
    /// Changes in one batch request where the bucket takes them (rule Q2): Cloud Storage's most.
    package static let defaultBatchSize = 100

    /// Opens the journal of a run about to apply a plan (the program chooses the file and writes the plan).
    package var openJournal: ((PlanStore) throws -> any ApplyJournal)?
    /// Called as changes land (from any thread); nil shows nothing.
    package var progress: (@Sendable (ApplyProgress) -> Void)?
    /// Called once apply ends, to clear a progress line.
    package var progressEnded: (() -> Void)?
    /// Keeps a dry run's plan (`--plan FILE`) and returns where; nil keeps none.
    package var keepPlan: ((PlanStore) throws -> String)?
    /// What to do about a change refused because its object changed meanwhile: a script's run plans again; an undo
    /// says what it leaves.
    package var replanAdvice = "run the script again to plan it anew"

    package init() {}
}

/// The applied changes an undo cannot put back: how many, and the first of them with why. A journal of millions of
/// uploads is not listed whole in memory.
package struct ChangesNotUndone: Sendable {
    /// How many are named; the others are counted.
    package static let named = 1000
    package private(set) var count = 0
    package private(set) var first: [(object: String, reason: String)] = []

    package var isEmpty: Bool { count == 0 }

    mutating func add(_ object: String, _ reason: String) {
        count += 1
        if first.count < Self.named { first.append((object, reason)) }
    }
}
