import Foundation
import StoreshCore
import StoreshFuzzing
import StoreshSQLite
import StoreshTestSupport
import Testing

@testable import StoreshLocal

@Suite("Local bucket: snapshots, row checksums, and the version-1 upgrade")
struct SnapshotTests {
    let directory = TemporaryDirectory()

    func update(_ bucket: LocalBucket, _ name: String, _ assignments: [String: String]) async throws {
        var update = MetadataUpdate()
        for (key, value) in assignments { try update.set(key, to: value) }
        _ = try await bucket.updateMetadata(of: objectName(name), update, ifMetagenerationMatch: nil)
    }

    @Test("a snapshot is immune to later changes; diff names each change; restore brings back content and generations")
    func saveDiffRestore() async throws {
        let bucket = try openBucket(directory.file("s.bucket"))
        try await bucket.put(["keep", "edit", "rewrite", "gone"])
        let before = try await bucket.listAll(.root).items
        let original = try bucket.currentMetadata(of: objectName("rewrite"))
        let info = try bucket.saveSnapshotNow(named: "before")
        #expect(info.objectCount == 4)

        try await update(bucket, "edit", ["contentType": "text/plain", "custom.owner": "ada"])
        _ = try await bucket.write(Data("new bytes".utf8), to: objectName("rewrite"), options: WriteOptions())
        try await bucket.delete(objectName("gone"))
        try await bucket.put(["added"])

        let changes = try bucket.changesNow(from: .snapshot("before"), to: .current)
        #expect(changes.map(\.name) == ["added", "edit", "gone", "rewrite"])
        #expect(changes.map(\.kind) == [.added, .changed, .removed, .changed])
        #expect(changes[1].differences.map(\.key) == ["contentType", "custom.owner"])
        #expect(
            changes[1].differences[0].old == "application/octet-stream" && changes[1].differences[0].new == "text/plain"
        )
        #expect(changes[3].differences.map(\.key) == ["generation", "size", "md5Hash"])
        // The other direction is the inverse.
        let back = try bucket.changesNow(from: .current, to: .snapshot("before"))
        #expect(back.map(\.kind) == [.removed, .changed, .added, .changed])

        let restored = try bucket.restoreSnapshotNow(named: "before")
        #expect(restored == back)
        #expect(try await bucket.listAll(.root).items == before)
        #expect(try bucket.currentMetadata(of: objectName("rewrite")) == original)
        #expect(try await bucket.read(objectName("rewrite")) == Data("rewrite".utf8))
        #expect(try await bucket.read(objectName("gone")) == Data("gone".utf8))
        #expect(try bucket.changesNow(from: .snapshot("before"), to: .current) == [])
        // A new object after the restore still gets a fresh, larger generation (rule M3).
        try await bucket.put(["later"])
        #expect(try bucket.currentMetadata(of: objectName("later")).generation > original.generation)

        let report = try bucket.verify()
        #expect(report.isSound, "\(report.problems)")
        _ = try bucket.removeSnapshotNow(named: "before")
        let afterRemoval = try bucket.verify()
        #expect(afterRemoval.isSound && afterRemoval.keptVersions == 0 && afterRemoval.snapshots == 0)
    }

    @Test(
        "rule N2: restore writes exactly what diff reports; a value changed and changed back is no difference and is left alone"
    )
    func restoreWritesWhatDiffReports() async throws {
        let bucket = try openBucket(directory.file("n2.bucket"))
        try await bucket.put(["back", "moved", "same"])
        _ = try bucket.saveSnapshotNow(named: "s1")
        let snapshotMoved = try bucket.currentMetadata(of: objectName("moved"))
        let type = try #require(try bucket.currentMetadata(of: objectName("back")).contentType)
        try await update(bucket, "back", ["contentType": "text/plain"])
        try await update(bucket, "back", ["contentType": type])
        try await update(bucket, "moved", ["contentLanguage": "fr"])
        let backNow = try bucket.currentMetadata(of: objectName("back"))
        #expect(backNow.metageneration > 1)
        let diff = try bucket.changesNow(from: .current, to: .snapshot("s1"))
        #expect(diff.map(\.name) == ["moved"])
        let restored = try bucket.restoreSnapshotNow(named: "s1")
        #expect(restored == diff)
        // The object that came back to its values keeps its metageneration and time; the changed one is the
        // snapshot's version again, whole.
        #expect(try bucket.currentMetadata(of: objectName("back")) == backNow)
        #expect(try bucket.currentMetadata(of: objectName("moved")) == snapshotMoved)
        #expect(try bucket.restoreSnapshotNow(named: "s1") == [])
        #expect(try bucket.verify().isSound)
    }

    @Test("names: invalid, taken and unknown are refused with what to do")
    func names() async throws {
        let bucket = try openBucket(directory.file("n.bucket"))
        _ = try bucket.saveSnapshotNow(named: "v1.0_before-fix")
        for bad in ["", "-x", ".hidden", "with space", "a/b", String(repeating: "x", count: 101), "é"] {
            let error = storageError { _ = try bucket.saveSnapshotNow(named: bad) }
            #expect(
                error?.code == .invalidArgument && error?.message.contains("is not a snapshot name") == true, "\(bad)")
        }
        let taken = storageError { _ = try bucket.saveSnapshotNow(named: "v1.0_before-fix") }
        #expect(taken?.message.contains("already exists") == true)
        let unknown = storageError { _ = try bucket.restoreSnapshotNow(named: "v1.0_before-fx") }
        #expect(unknown?.message.contains("did you mean v1.0_before-fix?") == true)
        #expect(try bucket.allSnapshots().map(\.name) == ["v1.0_before-fix"])
    }

    @Test("a snapshot taken in a transaction that rolls back is gone, and nothing is kept for it")
    func rolledBack() async throws {
        let bucket = try openBucket(directory.file("r.bucket"))
        try await bucket.put(["a"])
        try await inTransaction(bucket, committing: false) { file in
            _ = try file.saveSnapshotNow(named: "s")
            try await update(file, "a", ["contentType": "x/y"])
        }
        #expect(try bucket.allSnapshots() == [])
        try await update(bucket, "a", ["contentType": "x/z"])
        let report = try bucket.verify()
        #expect(report.isSound && report.keptVersions == 0)
    }

    /// The model: each snapshot is a copy of the bucket's objects and contents when it was taken.
    struct ModelState: Equatable {
        var objects: [String: ObjectMetadata] = [:]
        var contents: [String: Data] = [:]
    }

    @Test("random changes, snapshots, restores and removals agree with a model of copies", arguments: [1, 2, 3])
    func modelCheck(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let bucket = try openBucket(directory.file("m\(seed).bucket"))
        var model = ModelState()
        var snapshots: [String: ModelState] = [:]
        let names = (0..<12).map { "f\($0 % 3)/o\($0)" }
        func record(_ name: String) throws {
            model.objects[name] = try bucket.currentMetadata(of: objectName(name))
        }
        for step in 0..<400 {
            let name = names[Int(random.next() % UInt64(names.count))]
            switch random.next() % 10 {
            case 0, 1, 2:
                let content = Data("\(name) at \(step)".utf8)
                _ = try await bucket.write(content, to: objectName(name), options: WriteOptions())
                model.contents[name] = content
                try record(name)
            case 3, 4, 5:
                guard model.objects[name] != nil else { continue }
                try await update(bucket, name, ["custom.step": String(step % 4)])
                try record(name)
            case 6:
                guard model.objects[name] != nil else { continue }
                try await bucket.delete(objectName(name))
                model.objects[name] = nil
                model.contents[name] = nil
            case 7:
                let snapshot = "s\(step)"
                _ = try bucket.saveSnapshotNow(named: snapshot)
                snapshots[snapshot] = model
            case 8:
                guard let snapshot = snapshots.keys.sorted().randomElement(using: &random) else { continue }
                _ = try bucket.restoreSnapshotNow(named: snapshot)
                model = snapshots[snapshot]!
            default:
                guard snapshots.count > 2, let snapshot = snapshots.keys.sorted().randomElement(using: &random) else {
                    continue
                }
                _ = try bucket.removeSnapshotNow(named: snapshot)
                snapshots[snapshot] = nil
            }
        }
        for (snapshot, state) in snapshots {
            let expected = Set(state.objects.keys).union(model.objects.keys)
                .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                .compactMap { ObjectChange.between(state.objects[$0], model.objects[$0]) }
            #expect(try bucket.changesNow(from: .snapshot(snapshot), to: .current) == expected, "\(snapshot)")
        }
        // Content too: restore each snapshot in turn and read everything back.
        for (snapshot, state) in snapshots {
            _ = try bucket.restoreSnapshotNow(named: snapshot)
            for (name, content) in state.contents {
                #expect(try await bucket.read(objectName(name)) == content)
            }
            #expect(
                try await bucket.listAll(StoragePath(normalizing: "f0")).items.count
                    == state.objects.keys.filter { $0.hasPrefix("f0/") }.count)
        }
        let report = try bucket.verify()
        #expect(report.isSound, "\(report.problems)")
        #expect(report.snapshots == snapshots.count)
    }

    @Test("a value changed behind SQLite's back is reported as damage, never returned")
    func checksums() async throws {
        let path = directory.file("d.bucket")
        let bucket = try openBucket(path)
        try await bucket.put(["a", "b"])
        bucket.close()
        let raw = try SQLiteConnection(path: path, flags: 0x02)
        try raw.execute(
            "UPDATE objects SET content_type = 'text/evil' WHERE name = 'a'; UPDATE contents SET data = x'00' WHERE id = (SELECT content_id FROM objects WHERE name = 'b')"
        )
        raw.close()
        let damaged = try openBucket(path)
        let metadataError = storageError { _ = try damaged.currentMetadata(of: objectName("a")) }
        #expect(
            metadataError?.message.contains("is damaged: the stored object \"a\" does not match its checksum") == true)
        let contentError = await storageError { _ = try await damaged.read(objectName("b")) }
        #expect(contentError?.message.contains("content of object \"b\" (its MD5 differs)") == true)
        let report = try damaged.verify()
        #expect(report.problems.count == 2, "\(report.problems)")
    }

    @Test("a version-1 bucket is upgraded in place, with its objects, content and rules")
    func upgrade() async throws {
        let path = directory.file("v1.bucket")
        let v1 = try SQLiteConnection(path: path, flags: 0x02 | 0x04)
        try v1.execute(
            """
            PRAGMA journal_mode = WAL; PRAGMA application_id = \(BucketSchema.applicationID); PRAGMA user_version = 1;
            CREATE TABLE bucket_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE objects (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, generation INTEGER NOT NULL,
                metageneration INTEGER NOT NULL, size INTEGER NOT NULL, time_created INTEGER NOT NULL,
                updated INTEGER NOT NULL, md5_hash TEXT NOT NULL, cache_control TEXT, content_disposition TEXT,
                content_encoding TEXT, content_language TEXT, content_type TEXT, custom_metadata BLOB);
            CREATE TABLE contents (object_id INTEGER PRIMARY KEY REFERENCES objects(id) ON DELETE CASCADE, data BLOB NOT NULL);
            INSERT INTO bucket_info VALUES ('name', 'old'), ('last_generation', '7'), ('rules', 'rules_version = ''2'';'), ('rules_origin', 'r.rules');
            INSERT INTO objects VALUES (3, 'photos/a.jpg', 7, 2, 5, 1, 2, '\(ContentHash.md5Base64(Data("hello".utf8)))', NULL, NULL, NULL, NULL, 'image/jpeg', NULL);
            INSERT INTO contents VALUES (3, CAST('hello' AS BLOB));
            """)
        v1.close()
        let bucket = try openBucket(path)
        #expect(bucket.name == "old")
        let metadata = try bucket.currentMetadata(of: objectName("photos/a.jpg"))
        #expect(metadata.generation == 7 && metadata.metageneration == 2 && metadata.contentType == "image/jpeg")
        #expect(metadata.crc32c == "mnG7TA==")
        #expect(try await bucket.read(objectName("photos/a.jpg")) == Data("hello".utf8))
        #expect(try bucket.storedRules()?.origin == "r.rules")
        try await bucket.put(["next"])
        #expect(try bucket.currentMetadata(of: objectName("next")).generation > 7)
        #expect(try bucket.verify().isSound)
        _ = try bucket.saveSnapshotNow(named: "after-upgrade")
    }
}
