import Foundation
import StoreshCore
import StoreshExecution
import StoreshTestSupport
import Testing

/// The execution layer on its own, against the in-memory bucket: plans are kept in their store, not in memory,
/// and apply reads them a batch at a time.
@Suite("Plans and apply (rules X1–X5), streamed through a plan store")
struct PlanExecutionTests {
    /// More objects than apply reads from the plan at a time, so that batches follow each other.
    static let objectCount = 3 * 512 + 17

    func seeded() -> MemoryBucket {
        let bucket = MemoryBucket()
        bucket.seed((0..<Self.objectCount).map { String(format: "users/u%05d/photo.jpg", $0) })
        return bucket
    }

    /// Plans `meta set cacheControl=…` over every object, as a dry run would, a scan page at a time.
    func plan(over bucket: MemoryBucket, value: String) async throws -> PlannedBucket {
        let planned = try PlannedBucket(
            over: bucket, clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-25T09:00:00Z")!))
        var after: String?
        repeat {
            let page = try await planned.scan(prefix: "users/", after: after, limit: 1000)
            for object in page.objects {
                var update = MetadataUpdate()
                update.properties[.cacheControl] = .set(value)
                _ = try await planned.updateMetadata(
                    of: ObjectName(object.fullPath), update,
                    precondition: Precondition(metageneration: object.metageneration))
            }
            after = page.resumeAfter
        } while after != nil
        return planned
    }

    final class Counter: @unchecked Sendable {
        let lock = NSLock()
        var value = 0
        func next() -> Int {
            lock.withLock {
                value += 1
                return value
            }
        }
    }

    final class RecordingJournal: ApplyJournal, @unchecked Sendable {
        let location = "(memory)"
        let lock = NSLock()
        var applied: [Int] = []
        var ended: ApplyOutcome?
        func applied(_ index: Int, result: ObjectMetadata?, planned: ObjectMetadata?, found: Bool) throws {
            lock.withLock { applied.append(index) }
        }
        func failed(_ index: Int, _ error: StorageError) throws {}
        func ended(_ outcome: ApplyOutcome) throws { lock.withLock { ended = outcome } }
    }

    /// The journal a run of `planned` would leave, a line each, once every change was applied: its header, its
    /// changes, and what each applied change left.
    func journalLines(of planned: PlannedBucket) throws -> [String] {
        var lines = [
            JournalRecord.header(
                bucket: "gs://memory", source: "-c", changes: planned.changeCount, created: Timestamp(microseconds: 0))
        ]
        try planned.store.forEachChange { index, change in lines.append(JournalRecord.change(index, change)) }
        for index in 0..<planned.changeCount {
            lines.append(
                JournalRecord.applied(
                    index, result: try planned.store.appliedResult(ofChange: index) ?? nil,
                    planned: try planned.store.change(index)?.after,
                    found: false))
        }
        return lines
    }

    /// Journal lines read back, as from a file.
    func readJournal(_ lines: [String]) throws -> JournalRecord.Contents {
        var remaining = lines[...]
        return try JournalRecord.read(
            source: "journal", nextLine: { remaining.popFirst().map { (Array($0.utf8), true) } })
    }

    @Test("a plan larger than apply's batch applies every change exactly once, and a dry run changes nothing")
    func everyChangeOnce() async throws {
        let bucket = seeded()
        let planned = try await plan(over: bucket, value: "no-cache")
        #expect(planned.changeCount == Self.objectCount)
        for name in bucket.names { #expect(try await bucket.metadata(of: ObjectName(name)).cacheControl == nil) }
        let journal = RecordingJournal()
        let outcome = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 8, keepGoing: false, journal: journal, isCancelled: { false }
        ).apply()
        #expect(outcome.end == .complete)
        #expect(outcome.applied == Self.objectCount && outcome.failed == 0 && outcome.notSent == 0)
        #expect(journal.applied.sorted() == Array(0..<Self.objectCount))
        for name in bucket.names {
            let object = try await bucket.metadata(of: ObjectName(name))
            #expect(object.cacheControl == "no-cache" && object.metageneration == 2)
        }
    }

    @Test("a later command's changes wait for the earlier command's, and are guarded by what those left")
    func commandsInOrder() async throws {
        let bucket = seeded()
        let planned = try await plan(over: bucket, value: "first")
        planned.step = 1
        _ = try await {
            var after: String?
            repeat {
                let page = try await planned.scan(prefix: "users/", after: after, limit: 700)
                for object in page.objects {
                    // The second command sees the first one's planned state.
                    #expect(object.cacheControl == "first")
                    var update = MetadataUpdate()
                    update.properties[.cacheControl] = .set("second")
                    _ = try await planned.updateMetadata(of: ObjectName(object.fullPath), update, precondition: .none)
                }
                after = page.resumeAfter
            } while after != nil
        }()
        #expect(planned.changeCount == 2 * Self.objectCount)
        let outcome = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 16, keepGoing: false, journal: nil, isCancelled: { false }
        ).apply()
        #expect(outcome.end == .complete && outcome.applied == 2 * Self.objectCount)
        for name in bucket.names {
            let object = try await bucket.metadata(of: ObjectName(name))
            #expect(object.cacheControl == "second" && object.metageneration == 3)
        }
    }

    @Test(
        "rule M10: moves are applied whole and in parallel (both objects waited for); a move left half made says so for its source alone; undo names both objects"
    )
    func moves() async throws {
        let bucket = seeded()
        bucket.movesByCopying = true
        let stays = String(format: "users/u%05d/photo.jpg", 7)
        bucket.sourcesThatStay = [stays]
        let planned = try PlannedBucket(
            over: bucket, clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-25T09:00:00Z")!))
        let moves = try #require(planned.objectMoves)
        #expect(!moves.movesInOneStep)
        for index in 0..<Self.objectCount {
            let source = try ObjectName(String(format: "users/u%05d/photo.jpg", index))
            let state = try await planned.metadata(of: source)
            _ = try await moves.move(
                source, to: try ObjectName(String(format: "moved/u%05d.jpg", index)),
                sourcePrecondition: .matches(state),
                destinationPrecondition: .doesNotExist)
        }
        // Planned, not sent: the plan reads the objects as moved.
        // Each move is two changes of the plan (its object arriving, its source leaving), and one as messages count.
        #expect(bucket.changeRequests.isEmpty && planned.changeCount == 2 * Self.objectCount)
        #expect(planned.store.countedChanges == Self.objectCount)
        #expect(try await planned.metadataIfPresent(of: ObjectName("users/u00001/photo.jpg")) == nil)
        let journal = RecordingJournal()
        let outcome = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 16, keepGoing: true, journal: journal, isCancelled: { false }
        ).apply()
        // Every move but one whole; that one's object arrived, and its source alone failed: counted as a failed move.
        #expect(outcome.applied == Self.objectCount - 1 && outcome.failed == 1 && outcome.notSent == 0)
        #expect(journal.applied.count == 2 * Self.objectCount - 1)
        #expect(outcome.failures.map(\.error.message) == ["\(stays) stays (the test's failure)."])
        #expect(bucket.names.filter { $0.hasPrefix("moved/") }.count == Self.objectCount)
        #expect(bucket.names.filter { $0.hasPrefix("users/") } == [stays])
        // Undo moves each object back (the journal here has every change applied, the half-made move's too): the one
        // whose source stayed cannot go back over it, and says so.
        let (undo, impossible) = try JournalRecord.undo(try readJournal(try journalLines(of: planned)))
        #expect(undo.count == 2 * Self.objectCount && impossible.isEmpty)
        let undone = await PlanApplier(
            bucket: bucket, plan: undo, parallel: 16, keepGoing: true, journal: nil, isCancelled: { false }
        ).apply()
        #expect(undone.applied == Self.objectCount - 1 && undone.failed == 1)
        #expect(bucket.names.filter { $0.hasPrefix("users/") }.count == Self.objectCount)
        #expect(bucket.names.filter { $0.hasPrefix("moved/") } == ["moved/u00007.jpg"])
        // A journal whose move was followed by another change of the object: named, not moved back.
        var changedAfter = try journalLines(of: planned)
        let arrivedIndex = try #require(
            try (0..<planned.changeCount).first { try planned.store.change($0)?.movesFrom != nil })
        var later = PlannedChange(
            object: try #require(try planned.store.change(arrivedIndex)).object, before: nil, after: nil)
        later.before = try planned.store.appliedResult(ofChange: arrivedIndex) ?? nil
        later.after = later.before.map {
            var changed = $0
            changed.cacheControl = "no-store"
            changed.metageneration += 1
            return changed
        }
        let count = planned.changeCount
        changedAfter[0] = JournalRecord.header(
            bucket: "gs://memory", source: "-c", changes: count + 1, created: Timestamp(microseconds: 0))
        changedAfter.insert(JournalRecord.change(count, later), at: count + 1)
        changedAfter.append(JournalRecord.applied(count, result: later.after, planned: later.after, found: false))
        let (partial, named) = try JournalRecord.undo(try readJournal(changedAfter))
        #expect(partial.count == 2 * Self.objectCount - 2 && named.count == 2)
        #expect(
            named.first.contains { $0.reason.contains("and the run changed") && $0.reason.contains("moves it back)") })
    }

    @Test("stopped part-way, the plan resumed applies the rest once; its journal's undo puts every object back")
    func resumeThenUndo() async throws {
        let bucket = seeded()
        let planned = try await plan(over: bucket, value: "no-cache")
        // Ctrl-C after a few hundred changes.
        let asked = Counter()
        let first = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 4, keepGoing: false, journal: nil,
            isCancelled: { asked.next() > 300 }
        ).apply()
        #expect(first.end == .interrupted)
        #expect(
            first.applied > 0 && first.applied < Self.objectCount && first.notSent == Self.objectCount - first.applied)
        let journal = RecordingJournal()
        let second = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 4, keepGoing: false, journal: journal, isCancelled: { false }
        ).apply(resumed: true)
        #expect(second.end == .complete && second.applied == Self.objectCount)
        // Only what the first run left was sent again.
        #expect(journal.applied.count == Self.objectCount - first.applied)
        for name in bucket.names { #expect(try await bucket.metadata(of: ObjectName(name)).metageneration == 2) }

        // The journal as a file would hold it, read back, and undone.
        let (undo, impossible) = try JournalRecord.undo(try readJournal(try journalLines(of: planned)))
        #expect(impossible.isEmpty && undo.count == Self.objectCount)
        let undone = await PlanApplier(
            bucket: bucket, plan: undo, parallel: 8, keepGoing: false, journal: nil, isCancelled: { false }
        ).apply()
        #expect(undone.end == .complete)
        for name in bucket.names { #expect(try await bucket.metadata(of: ObjectName(name)).cacheControl == nil) }
    }

    @Test("a folder with planned changes lists, page by page, as the bucket would after them, across many scan pages")
    func plannedListingPages() async throws {
        // Items and subfolders interleaved over several scan pages (1,000 names each).
        var names: [String] = []
        for index in 0..<1_100 {
            names.append(String(format: "f/%05d.txt", index))
            if index % 3 == 0 { names += (0..<2).map { String(format: "f/%05d-dir/%d", index, $0) } }
        }
        let real = MemoryBucket()
        real.seed(names)
        let after = MemoryBucket()
        after.seed(names)
        let planned = try PlannedBucket(
            over: real, clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-25T09:00:00Z")!))
        // Deletions (an item, a whole subfolder, a subfolder's one object of several) and additions (items and a
        // new subfolder), planned and made for real in the other bucket.
        var deleted = ["f/00002.txt", "f/00999.txt", "f/00003-dir/1"] + (0..<2).map { "f/00600-dir/\($0)" }
        deleted += names.filter { $0.hasPrefix("f/0100") && $0.hasSuffix(".txt") }
        for name in deleted {
            try await planned.delete(ObjectName(name), precondition: .none)
            try await after.delete(ObjectName(name), precondition: .none)
        }
        for name in ["f/00002.txt", "f/00500-new/a", "f/zz-last.txt", "f/00001.txt-b"] {
            _ = try await planned.write(
                Data("n".utf8), to: ObjectName(name), options: WriteOptions(), precondition: .none)
            _ = try await after.write(
                Data("n".utf8), to: ObjectName(name), options: WriteOptions(), precondition: .none)
        }
        let folder = StoragePath(normalizing: "f")
        func all(_ bucket: any Bucket, _ options: ListOptions) async throws -> (entries: [String], pages: Int) {
            var entries: [String] = []
            var options = options
            var pages = 0
            repeat {
                let page = try await bucket.list(folder, options: options)
                // In the listing's order: prefixes and items merged by name.
                entries += (page.prefixes.map { $0 + "/" } + page.items).sorted {
                    $0.utf8.lexicographicallyPrecedes($1.utf8)
                }
                if options.includeMetadata { #expect(page.itemMetadata?.map(\.fullPath) == page.items) }
                options.pageToken = page.nextPageToken
                pages += 1
            } while options.pageToken != nil
            return (entries, pages)
        }
        for options in [
            ListOptions(maxResults: 97), ListOptions(maxResults: 1000, includeMetadata: true), ListOptions(),
            ListOptions(maxResults: 50, startOffset: "f/00600"),
            ListOptions(maxResults: 3, startOffset: "f/00601.txt", endOffset: "f/00700"),
            ListOptions(maxResults: 61, startOffset: "f/00500-new/", endOffset: "f/01000"),
        ] {
            let (plannedEntries, plannedPages) = try await all(planned, options)
            let (expectedEntries, expectedPages) = try await all(after, options)
            #expect(plannedEntries == expectedEntries, "\(options)")
            #expect(plannedPages == expectedPages, "\(options)")
            #expect(!plannedEntries.isEmpty)
        }
    }

    @Test("a journal reads back the same states whether written whole (version 1) or as differences (version 2)")
    func journalVersionsReadAlike() async throws {
        let bucket = seeded()
        let planned = try await plan(over: bucket, value: "no-cache")
        let applied = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 4, keepGoing: false, journal: nil, isCancelled: { false }
        ).apply()
        #expect(applied.end == .complete)
        let current = try journalLines(of: planned)
        // Version 1, as storesh wrote it before: every state whole.
        var whole = [current[0].replacingOccurrences(of: "\"version\":2", with: "\"version\":1")]
        try planned.store.forEachChange { index, change in
            whole.append(
                JSONValue.object([
                    ("change", .integer(Int64(index))), ("step", .integer(0)), ("object", .string(change.object)),
                    ("before", change.before!.jsonDocument), ("after", change.after!.jsonDocument),
                ]).serialized)
        }
        for index in 0..<planned.changeCount {
            let result = try #require(try planned.store.appliedResult(ofChange: index) ?? nil)
            whole.append(
                JSONValue.object([("applied", .integer(Int64(index))), ("result", result.jsonDocument)]).serialized)
        }
        #expect(whole[0].contains("\"version\":1") && current[0].contains("\"version\":2"))
        // Version 2 is the smaller: the after state and the result are written as what changed.
        #expect(current.joined().utf8.count * 10 < whole.joined().utf8.count * 6)
        let (fromWhole, fromDifferences) = (try readJournal(whole), try readJournal(current))
        for index in 0..<planned.changeCount {
            #expect(try fromWhole.plan.change(index) == fromDifferences.plan.change(index))
            #expect(try fromDifferences.plan.change(index) == planned.store.change(index))
            #expect(
                try fromWhole.plan.appliedResult(ofChange: index) == fromDifferences.plan.appliedResult(ofChange: index)
            )
            #expect(
                try fromDifferences.plan.appliedResult(ofChange: index) == planned.store.appliedResult(ofChange: index))
        }
        // A difference with nothing to differ from is a damaged line, not a deletion.
        let orphan =
            #"{"change":0,"step":0,"object":"users/u00000/photo.jpg","before":null,"afterChanges":{"cacheControl":"x"}}"#
        #expect(throws: StorageError.self) {
            try readJournal([
                current[0].replacingOccurrences(of: "\"changes\":\(planned.changeCount)", with: "\"changes\":1"),
                orphan,
            ])
        }
        // A version this storesh does not know is refused, naming the versions it reads.
        #expect(throws: StorageError.self) {
            try readJournal([current[0].replacingOccurrences(of: "\"version\":2", with: "\"version\":3")])
        }
    }

    @Test("undo of overwrites on a bucket that names generations plans the restore of each old generation (rule B6)")
    func undoRestoresOverwrittenGenerations() async throws {
        let bucket = seeded()
        let before = Dictionary(
            uniqueKeysWithValues: try await bucket.scan(prefix: "", after: nil, limit: Self.objectCount).objects.map {
                ($0.fullPath, $0)
            })
        let planned = try PlannedBucket(
            over: bucket, clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-25T09:00:00Z")!))
        for name in bucket.names {
            _ = try await planned.write(
                Data("new".utf8), to: ObjectName(name), options: WriteOptions(), precondition: .none)
        }
        let applied = await PlanApplier(
            bucket: bucket, plan: planned.store, parallel: 8, keepGoing: false, journal: nil, isCancelled: { false }
        ).apply()
        #expect(applied.end == .complete)
        let (undo, impossible) = try JournalRecord.undo(try readJournal(try journalLines(of: planned)))
        // Every object's old content is a generation the bucket may keep soft-deleted: a restore of it is planned,
        // guarded by the generation the run left, and read back from the plan as it was written.
        #expect(impossible.isEmpty && undo.count == Self.objectCount)
        try undo.forEachChange { _, change in
            let old = try #require(before[change.object])
            #expect(change.restoresGeneration == .number(old.generation) && change.writesContent)
            #expect(change.after?.md5Hash == old.md5Hash && change.before?.generation != old.generation)
        }
    }

    @Test("metadata round-trips through its packed form")
    func packedMetadata() throws {
        var metadata = ObjectMetadata(
            bucket: "b", fullPath: "a/é/x\ny", generation: -5, metageneration: 1 << 40, size: 0,
            timeCreated: Timestamp(microseconds: -1), updated: Timestamp(microseconds: 1_795_000_000_000_000),
            md5Hash: "",
            cacheControl: "", contentType: "image/jpeg", customMetadata: ["k": "v", "": "empty key"], entityTag: "\"e\""
        )
        metadata.versionID = "v1"
        let packed = metadata.packed
        #expect(try packed.withUnsafeBytes { try ObjectMetadata(packed: $0) } == metadata)
        #expect(throws: PackedReader.Malformed.self) {
            try packed.dropLast().withUnsafeBytes { try ObjectMetadata(packed: $0) }
        }
        // What Cloud Storage keeps besides (rule M9) is in the plan too: a planned hold is applied as planned. A plan
        // written before the tail existed is read as it was.
        var held = metadata
        held.cloudStorage.temporaryHold = true
        held.cloudStorage.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        held.cloudStorage.contexts = [
            "k": ObjectContext(value: "v", createTime: held.updated, updateTime: held.updated)
        ]
        held.crc32c = "AAAAAA=="
        held.timeDeleted = held.updated
        let heldPacked = held.packed
        #expect(try heldPacked.withUnsafeBytes { try ObjectMetadata(packed: $0) } == held)
        #expect(Array(heldPacked.prefix(packed.count)) == packed)
        for cut in [1, 3] {
            #expect(throws: PackedReader.Malformed.self) {
                try heldPacked.dropLast(cut).withUnsafeBytes { try ObjectMetadata(packed: $0) }
            }
        }
        // A length one byte past the end is malformed, not a trap: it is checked against what is left after it.
        let short: [UInt8] = [2, 0x61]
        #expect(throws: PackedReader.Malformed.self) {
            try short.withUnsafeBytes { buffer in
                var reader = PackedReader(buffer)
                _ = try reader.string()
            }
        }
        #expect(throws: PackedReader.Malformed.self) {
            try short.withUnsafeBytes { buffer in
                var reader = PackedReader(buffer)
                _ = try reader.stringBytes()
            }
        }
    }
}
