import Foundation
import StoreshCore
import StoreshFuzzing
import StoreshSQLite
import Testing

@testable import StoreshLocal

/// A uniform update rewrites rows from their bytes; `updateMetadata` builds each object's metadata and applies the
/// update to it. They must never differ: two buckets made alike, one updated a page at a time, the other one object
/// at a time, must answer the same outcomes and hold the same objects, versions kept for snapshots, and checksums.
@Suite("Local bucket: a uniform update is one update per object")
struct UniformUpdateTests {
    let directory = TemporaryDirectory()

    /// Custom keys and values chosen to reach every way a row can go: ASCII keys that sort around each other,
    /// keys that are not ASCII (KELVIN SIGN is canonically the letter K, and NFC and NFD `café` are canonically one
    /// key, and two keys as bytes), values equal in bytes or only canonically, and a value big enough to pass rule
    /// M5's limit.
    static let keys = ["a", "k", "m", "z", "K", "\u{212A}", "caf\u{E9}", "cafe\u{301}"]
    static let values = ["v", "w", "", "caf\u{E9}", "cafe\u{301}", String(repeating: "x", count: 5000)]
    static let propertyValues: [String?] = [nil, "no-cache", "public, max-age=60", "text/plain", "caf\u{E9}"]

    func randomCustom(_ random: inout SplitMix64) -> CustomMetadata {
        var custom: CustomMetadata = [:]
        for _ in 0..<Int(random.next() % 4) {
            let key = Self.keys[Int(random.next() % UInt64(Self.keys.count))]
            // One spelling of a text per map (rule M5; `contains` compares canonically): updates then try the other.
            guard !custom.keys.contains(key) else { continue }
            custom[key] = Self.values[Int(random.next() % UInt64(Self.values.count - 1))]
        }
        return custom
    }

    func randomUpdate(_ random: inout SplitMix64) -> MetadataUpdate {
        var update = MetadataUpdate()
        for property in WritableProperty.allCases where random.next() % 3 == 0 {
            let value = Self.propertyValues[Int(random.next() % UInt64(Self.propertyValues.count))]
            update.properties[property] = value.map { .set($0) } ?? .unset
        }
        // Most updates name ASCII keys only; some name the others, which are merged by their bytes all the same.
        let keys = random.next() % 4 == 0 ? Self.keys : Array(Self.keys.prefix(4))
        for _ in 0..<Int(random.next() % 3) {
            let key = keys[Int(random.next() % UInt64(keys.count))]
            update.customMetadata[key] =
                random.next() % 4 == 0 ? .unset : .set(Self.values[Int(random.next() % UInt64(Self.values.count))])
        }
        if update.isEmpty { update.properties[.cacheControl] = .set("no-cache") }
        return update
    }

    /// Two buckets with the same objects, written in the same order at the same times; some of them seen by a
    /// snapshot (their versions must be kept when they change).
    func twinBuckets(_ seed: UInt64) async throws -> (LocalBucket, LocalBucket) {
        var random = SplitMix64(seed: seed)
        // One name for both (a bucket is named after its file), in two directories.
        for side in ["paged", "single"] {
            try FileManager.default.createDirectory(atPath: directory.file(side), withIntermediateDirectories: true)
        }
        let first = try openBucket(directory.file("paged/twin-\(seed).bucket"))
        let second = try openBucket(directory.file("single/twin-\(seed).bucket"))
        for index in 0..<240 {
            if index == 120 {
                _ = try first.saveSnapshotNow(named: "half")
                _ = try second.saveSnapshotNow(named: "half")
            }
            var options = WriteOptions(customMetadata: randomCustom(&random))
            for property in WritableProperty.allCases where random.next() % 3 == 0 {
                options.properties[property] =
                    Self.propertyValues[Int(random.next() % UInt64(Self.propertyValues.count))]
            }
            // Names out of order, so that rows are not in the order of their names.
            let name = try ObjectName("d\(index % 3)/o\(String(format: "%03d", (index * 37) % 240))")
            for bucket in [first, second] {
                _ = try await bucket.write(Data("\(index)".utf8), to: name, options: options)
            }
        }
        return (first, second)
    }

    /// How many rows hold `value` as their cacheControl, read from the file: what a failed page must not have written.
    func count(in bucket: LocalBucket, withCacheControl value: String) throws -> Int64? {
        try bucket.withConnection { try $0.integer("SELECT count(*) FROM objects WHERE cache_control IS '\(value)'") }
    }

    /// Every object's metadata, in byte order of names.
    func everything(_ bucket: LocalBucket) throws -> [ObjectMetadata] {
        var objects: [ObjectMetadata] = []
        var after: String?
        repeat {
            let page = try bucket.scanPage(prefix: "", after: after, limit: 50)
            objects += page.objects
            after = page.resumeAfter
        } while after != nil
        return objects
    }

    @Test(
        "random updates over random objects: the same outcomes, objects, kept versions and checksums",
        arguments: [1, 2, 3, 4, 5, 6])
    func sameAsOneUpdatePerObject(seed: UInt64) async throws {
        let (paged, single) = try await twinBuckets(seed)
        try await expectSameRounds(paged, single, seed: seed)
    }

    /// Once the snapshot is removed, the rows written before it are in no snapshot but were born in an earlier epoch:
    /// they are rewritten with the current one (which the `born` index follows), beside rows that keep theirs.
    @Test(
        "the same, after the snapshot is removed: rows whose born changes beside rows whose born stays",
        arguments: [11, 12, 13])
    func sameAfterTheSnapshotIsRemoved(seed: UInt64) async throws {
        let (paged, single) = try await twinBuckets(seed)
        for bucket in [paged, single] { _ = try bucket.removeSnapshotNow(named: "half") }
        let borns = try paged.withConnection { try $0.integer("SELECT count(DISTINCT born) FROM objects") }
        #expect(borns == 2)
        try await expectSameRounds(paged, single, seed: seed)
        // A round may have stopped at a refused row (rule M5): one update every row takes, to end with.
        var last = MetadataUpdate()
        last.properties[.contentLanguage] = .set("x-last-round")
        var after: String?
        repeat {
            after = try await paged.updatePage(prefix: "", after: after, limit: 7, last) { _ in true }.resumeAfter
        } while after != nil
        #expect(
            try paged.withConnection { try $0.integer("SELECT count(DISTINCT born) FROM objects WHERE name >= 'd1/'") }
                == 1)
    }

    /// Twelve random updates, each made a page at a time on `paged` and one object at a time on `single`, must leave
    /// the same outcomes and the same buckets.
    func expectSameRounds(_ paged: LocalBucket, _ single: LocalBucket, seed: UInt64) async throws {
        let hasSnapshot = try paged.withConnection { try $0.integer("SELECT count(*) FROM snapshots") } == 1
        var random = SplitMix64(seed: seed &* 7919)
        for round in 0..<12 {
            let update = randomUpdate(&random)
            let prefix = ["", "d1/", "d2/o1"][Int(random.next() % 3)]
            let skip = Int(random.next() % 5)
            // Picked by the name's bytes, so that both sides pick the same objects.
            func picks(_ name: String) -> Bool { skip == 0 || name.utf8.reduce(0) { $0 &+ Int($1) } % 5 != skip }

            // A dry run's preview first: the same outcomes as the update, and nothing changed. (On both twins: a
            // preview takes its change times from the clock, as the update would.)
            /// Every page's outcomes, from the first to the last.
            func walk(_ page: (String?) async throws -> UniformUpdatePage) async throws -> [UniformUpdateOutcome] {
                var outcomes: [UniformUpdateOutcome] = []
                var after: String?
                repeat {
                    let next = try await page(after)
                    outcomes += next.outcomes
                    after = next.resumeAfter
                } while after != nil
                return outcomes
            }
            var previewed: [UniformUpdateOutcome] = []
            for twin in [paged, single] {
                let before = try everything(twin)
                let outcomes = try await walk {
                    try await twin.previewPage(prefix: prefix, after: $0, limit: 7, update, picking: picks)
                }
                #expect(try everything(twin) == before, "round \(round): a preview changed the bucket")
                if twin === paged { previewed = outcomes } else { #expect(outcomes == previewed) }
            }

            let pagedOutcomes = try await walk {
                try await paged.updatePage(prefix: prefix, after: $0, limit: 7, update, picking: picks)
            }

            var singleOutcomes: [UniformUpdateOutcome] = []
            walk: for object in try everything(single)
            where object.fullPath.utf8.starts(with: prefix.utf8) && picks(object.fullPath) {
                do {
                    let result = try await single.updateMetadata(
                        of: ObjectName(stored: object.fullPath), update, precondition: .matches(object))
                    singleOutcomes.append(
                        result.changed
                            ? .updated(object.fullPath, result.previous.differences(to: result.metadata))
                            : .unchanged(object.fullPath))
                } catch let error as StorageError {
                    singleOutcomes.append(.failed(object.fullPath, error))
                    break walk
                }
            }
            let told = String(describing: update).replacingOccurrences(
                of: String(repeating: "x", count: 5000), with: "x*5000")
            #expect(pagedOutcomes == singleOutcomes, "round \(round): \(told)")
            #expect(previewed == pagedOutcomes, "round \(round): the preview is not the update: \(told)")
            let (pagedObjects, singleObjects) = (try everything(paged), try everything(single))
            let firstDifference = zip(pagedObjects, singleObjects).first { $0 != $1 }.map {
                String(describing: $0).replacingOccurrences(of: String(repeating: "x", count: 5000), with: "x*5000")
            }
            #expect(
                pagedObjects == singleObjects, "round \(round): \(told); first difference: \(firstDifference ?? "none")"
            )
            if hasSnapshot {
                #expect(
                    try paged.changesNow(from: .snapshot("half"), to: .current)
                        == single.changesNow(from: .snapshot("half"), to: .current))
            }
        }
        let report = try paged.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.keptVersions == (try single.verify()).keptVersions)
    }

    @Test("a page inside a transaction is one savepoint: rolled back with the transaction, kept with its commit")
    func insideTransaction() async throws {
        let (bucket, _) = try await twinBuckets(9)
        let before = try everything(bucket)
        let update = MetadataUpdate(properties: [.cacheControl: .set("no-store")], customMetadata: ["k": .set("v")])
        await #expect(throws: StorageError.self) {
            try await bucket.withTransaction(forWriting: true) { transaction -> TransactionOutcome<Void> in
                let page = try await transaction.uniformUpdates!.updatePage(
                    prefix: "d0/", after: nil, limit: 1000, update
                ) { _ in true }
                #expect(page.outcomes.count == 80)
                throw StorageError.internalError("the script failed later")
            }
        }
        #expect(try everything(bucket) == before)
        try await bucket.withTransaction(forWriting: true) { transaction -> TransactionOutcome<Void> in
            _ = try await transaction.uniformUpdates!.updatePage(prefix: "d0/", after: nil, limit: 1000, update) { _ in
                true
            }
            return .commit(())
        }
        let after = try everything(bucket)
        #expect(
            after.filter { $0.fullPath.hasPrefix("d0/") }.allSatisfy {
                $0.cacheControl == "no-store" && $0.customMetadata["k"] == "v"
            })
        #expect(after.filter { !$0.fullPath.hasPrefix("d0/") } == before.filter { !$0.fullPath.hasPrefix("d0/") })
        #expect(try bucket.verify().isSound)
    }

    @Test("a row changed behind SQLite's back stops the page as damage, and nothing of the page is written")
    func damagedRow() async throws {
        let (bucket, _) = try await twinBuckets(10)
        let before = try everything(bucket)
        let target = before.first { $0.fullPath.hasPrefix("d1/") }!.fullPath
        try bucket.withConnection {
            try $0.execute("UPDATE objects SET content_type = 'text/evil' WHERE name = '\(target)'")
        }
        let error = await #expect(throws: StorageError.self) {
            _ = try await bucket.updatePage(
                prefix: "d1/", after: nil, limit: 1000, MetadataUpdate(properties: [.cacheControl: .set("x")])
            ) { _ in true }
        }
        #expect(error?.message.contains("does not match its checksum") == true, "\(String(describing: error))")
        #expect(try count(in: bucket, withCacheControl: "x") == 0)
    }

    /// A page's rows are visited and written by one statement, but a row whose `born` changes (born before a
    /// snapshot since removed) is written by a second one: what if it changed in between?
    @Test(
        "a row changed between the page's visit and the write of its born is not written over, and the page fails whole"
    )
    func rowChangedBeforeItsWrite() async throws {
        let (bucket, _) = try await twinBuckets(14)
        _ = try bucket.removeSnapshotNow(named: "half")
        let page = try everything(bucket).filter { $0.fullPath.hasPrefix("d2/") }
        let target = try bucket.withConnection { connection in
            let statement = try connection.statement(
                "SELECT name FROM objects WHERE name >= 'd2/' AND name < ?1 AND born < (SELECT max(born) FROM objects) ORDER BY name LIMIT 1"
            )
            defer { statement.reset() }
            statement.bind(1, page.last!.fullPath)
            return try statement.step() ? statement.string(0) : nil
        }
        let name = try #require(target)
        // Inside the page's own change, while the last row is visited: what a row changed by anything else in that
        // moment would look like (its checksum no longer the one visited).
        let error = await #expect(throws: StorageError.self) {
            _ = try await bucket.updatePage(
                prefix: "d2/", after: nil, limit: 1000, MetadataUpdate(properties: [.cacheControl: .set("x")])
            ) {
                visited in
                if visited == page.last!.fullPath {
                    try bucket.connection.execute("UPDATE objects SET checksum = checksum + 1 WHERE name = '\(name)'")
                }
                return true
            }
        }
        #expect(
            error?.message.contains("\(name.debugDescription) changed while it was being updated") == true,
            "\(String(describing: error))")
        #expect(try count(in: bucket, withCacheControl: "x") == 0)
    }

    @Test(
        "the page's SQL functions answer only its own statements: not a trigger a file holds, not SQL run at another time"
    )
    func functionsAnswerOnlyTheirStatements() async throws {
        let (bucket, _) = try await twinBuckets(15)
        _ = try await bucket.updatePage(
            prefix: "d0/", after: nil, limit: 10, MetadataUpdate(properties: [.cacheControl: .set("x")])
        ) { _ in true }
        let outside = #expect(throws: SQLiteError.self) {
            try bucket.connection.execute("SELECT \(VisitedPage.columns)(1, 0)")
        }
        #expect(
            outside?.message.contains("answer only the statements that use them") == true,
            "\(String(describing: outside))")
        // In the file's schema, where a file made elsewhere would hold it (SQLite trusts a connection's own TEMP ones).
        try bucket.connection.execute(
            "CREATE TRIGGER hostile AFTER UPDATE ON objects BEGIN SELECT \(VisitedPage.picks)(new.id, new.checksum); END"
        )
        let fromTrigger = await #expect(throws: StorageError.self) {
            _ = try await bucket.updatePage(
                prefix: "d1/", after: nil, limit: 10, MetadataUpdate(properties: [.cacheControl: .set("y")])
            ) { _ in true }
        }
        #expect(
            fromTrigger?.message.contains("unsafe use of \(VisitedPage.picks)") == true,
            "\(String(describing: fromTrigger))")
        #expect(try count(in: bucket, withCacheControl: "y") == 0)
    }
}
