import Foundation
import StoreshCore
import StoreshSQLite
import StoreshTestSupport
import Testing

@testable import StoreshLocal

/// Rule B5 in the bucket file: noncurrent generations kept while versioning is on, addressed by number, listed page
/// by page, verified by check, and a format-4 file upgraded without its objects rewritten.
@Suite("Object versioning in the bucket file (rule B5)")
struct ObjectVersionTests {
    let directory = TemporaryDirectory()

    func versioned(_ file: String, on: Bool = true) throws -> LocalBucket {
        let bucket = try openBucket(directory.file(file))
        var settings = BucketSettings(madeAt: t0)
        settings.versioning = on
        try bucket.storeSettings(settings)
        return bucket
    }

    @Test(
        "rule B5: overwrites and deletes keep noncurrent generations, which share their content, until deleted by number"
    )
    func keptAndDeleted() async throws {
        let bucket = try versioned("kept.bucket")
        let first = try await bucket.write(Data("one".utf8), to: objectName("a"), options: WriteOptions())
        let second = try await bucket.write(Data("two".utf8), to: objectName("a"), options: WriteOptions())
        try await bucket.delete(objectName("a"))
        #expect(try bucket.noncurrentCount() == 2)
        let old = try bucket.generationMetadata(of: objectName("a"), generation: first.generation)
        #expect(old.timeDeleted == second.timeCreated && old.md5Hash == first.md5Hash && old.crc32c == first.crc32c)
        var read = Data()
        _ = try bucket.generation(objectName("a"), second.generation) { read.append($0) }
        #expect(read == Data("two".utf8))
        // A noncurrent generation's metadata changes alone, its metageneration moving on.
        var update = MetadataUpdate()
        try update.set("contentLanguage", to: "ko")
        let patched = try await bucket.updateMetadata(
            of: objectName("a"), generation: first.generation, update, precondition: .none)
        #expect(
            patched.changed && patched.metadata.metageneration == 2 && patched.metadata.timeDeleted == old.timeDeleted)
        #expect(
            try bucket.generationMetadata(of: objectName("a"), generation: second.generation).contentLanguage == nil)
        // A precondition on the generation is checked, and a failed one changes nothing.
        var stale = Precondition()
        stale.metageneration = 1
        await #expect(throws: StorageError.self) {
            try await bucket.delete(objectName("a"), generation: first.generation, precondition: stale)
        }
        try await bucket.delete(objectName("a"), generation: first.generation, precondition: .none)
        await #expect(throws: StorageError.self) {
            _ = try await bucket.metadata(of: objectName("a"), generation: first.generation)
        }
        try await bucket.delete(objectName("a"), generation: second.generation, precondition: .none)
        #expect(try bucket.noncurrentCount() == 0)
        let report = try bucket.verify()
        #expect(report.isSound, "\(report.problems)")
        // Nothing is left: no content row outlives the generations that held it.
        #expect(try bucket.withConnection { try $0.integer("SELECT count(*) FROM contents") } == 0)
    }

    @Test("rule B5: without versioning, or once it is off, a write keeps nothing; what was kept stays")
    func offKeepsNothing() async throws {
        let bucket = try versioned("off.bucket", on: false)
        _ = try await bucket.write(Data("1".utf8), to: objectName("x"), options: WriteOptions())
        _ = try await bucket.write(Data("2".utf8), to: objectName("x"), options: WriteOptions())
        #expect(try bucket.noncurrentCount() == 0)
        var settings = try bucket.storedSettings()!
        settings.versioning = true
        try bucket.storeSettings(settings)
        _ = try await bucket.write(Data("3".utf8), to: objectName("x"), options: WriteOptions())
        settings.versioning = false
        try bucket.storeSettings(settings)
        _ = try await bucket.write(Data("4".utf8), to: objectName("x"), options: WriteOptions())
        try await bucket.delete(objectName("x"))
        #expect(try bucket.noncurrentCount() == 1)
    }

    @Test("rule B5: every generation is listed by name, oldest first, and each page resumes after the last generation")
    func listedPageByPage() async throws {
        let bucket = try versioned("listed.bucket")
        var expected: [(String, Int64)] = []
        for name in ["b", "a", "d/1", "c"] {
            for round in 0..<3 {
                let made = try await bucket.write(
                    Data("\(name)\(round)".utf8), to: objectName(name), options: WriteOptions())
                expected.append((name, made.generation))
            }
        }
        expected.sort { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
        for size in [1, 2, 5, 12] {
            var seen: [(String, Int64)] = []
            var options = ListOptions(maxResults: size, includeMetadata: true)
            repeat {
                let page = try bucket.listGenerations(prefix: "", delimited: false, options: options)
                #expect(page.items.count <= size)
                seen += (page.itemMetadata ?? []).map { ($0.fullPath, $0.generation) }
                options.pageToken = page.nextPageToken
            } while options.pageToken != nil
            #expect(seen.map(\.0) == expected.map(\.0) && seen.map(\.1) == expected.map(\.1), "pages of \(size)")
        }
        let delimited = try bucket.listGenerations(prefix: "", delimited: true, options: ListOptions(maxResults: 7))
        #expect(delimited.items == ["a", "a", "a", "b", "b", "b", "c"] && delimited.prefixes.isEmpty)
        let rest = try bucket.listGenerations(
            prefix: "", delimited: true, options: ListOptions(maxResults: 7, pageToken: delimited.nextPageToken))
        #expect(rest.items == ["c", "c"] && rest.prefixes == ["d"] && rest.nextPageToken == nil)
        // A token names its listing: another prefix's is refused (rule L10).
        #expect(throws: StorageError.self) {
            try bucket.listGenerations(
                prefix: "d/", delimited: false, options: ListOptions(pageToken: delimited.nextPageToken))
        }
    }

    @Test(
        "a format-4 file opens as format 5 with its objects as they were; check finds a noncurrent row changed behind its back"
    )
    func upgradeAndCheck() async throws {
        let path = directory.file("v4.bucket")
        var bucket: LocalBucket? = try openBucket(path)
        _ = try await bucket!.write(Data("hello".utf8), to: objectName("hello.txt"), options: WriteOptions())
        bucket?.close()
        bucket = nil
        let raw = try SQLiteConnection(path: path, flags: 0x02)
        try raw.execute("DROP TABLE noncurrent; PRAGMA user_version = 4")
        raw.close()

        let upgraded = try versioned("v4.bucket")
        _ = try await upgraded.write(Data("again".utf8), to: objectName("hello.txt"), options: WriteOptions())
        #expect(try upgraded.noncurrentCount() == 1)
        let sound = try upgraded.verify()
        #expect(sound.isSound && sound.noncurrentGenerations == 1 && sound.objects == 1, "\(sound.problems)")
        upgraded.close()
        let tamper = try SQLiteConnection(path: path, flags: 0x02)
        #expect(try tamper.integer("PRAGMA user_version") == BucketSchema.version)
        try tamper.execute("UPDATE noncurrent SET content_type = 'text/html'")
        tamper.close()
        let report = try openBucket(path).verify()
        #expect(
            report.problems.count == 1 && report.problems.first?.contains("noncurrent generation") == true,
            "\(report.problems)")
    }
}

@Suite("Cloud Storage's own fields in the bucket file (rule M9)")
struct CloudStorageFieldsStorageTests {
    let directory = TemporaryDirectory()

    @Test(
        "rule M9: fields are stored with the object, kept by versions and snapshots, checked; holds refuse delete and overwrite"
    )
    func storedAndHeld() async throws {
        let bucket = try openBucket(directory.file("fields.bucket"))
        var settings = BucketSettings(madeAt: t0)
        settings.versioning = true
        settings.storageClass = "NEARLINE"
        try bucket.storeSettings(settings)
        var options = WriteOptions()
        options.cloudStorage.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        options.cloudStorage.contexts = ["team": ObjectContext(value: "blue", createTime: t0, updateTime: t0)]
        let written = try await bucket.write(Data("one".utf8), to: objectName("a"), options: options)
        #expect(
            written.cloudStorage.storageClass == "NEARLINE"
                && written.cloudStorage.contexts["team"]?.createTime == written.timeCreated)
        #expect(try bucket.currentMetadata(of: objectName("a")) == written)
        _ = try bucket.saveSnapshotNow(named: "before")
        var hold = MetadataUpdate()
        hold.cloudStorage.temporaryHold = true
        _ = try await bucket.updateMetadata(of: objectName("a"), hold, precondition: .none)
        await #expect(throws: StorageError.self) { try await bucket.delete(objectName("a")) }
        await #expect(throws: StorageError.self) {
            _ = try await bucket.write(Data("two".utf8), to: objectName("a"), options: WriteOptions())
        }
        await #expect(throws: StorageError.self) {
            try await bucket.delete(objectName("a"), generation: written.generation, precondition: .none)
        }
        var release = MetadataUpdate()
        release.cloudStorage.temporaryHold = false
        _ = try await bucket.updateMetadata(of: objectName("a"), release, precondition: .none)
        _ = try await bucket.write(Data("two".utf8), to: objectName("a"), options: WriteOptions())
        // The first generation, noncurrent now, keeps its fields; so does the snapshot's version.
        let kept = try bucket.generationMetadata(of: objectName("a"), generation: written.generation)
        #expect(
            kept.cloudStorage.customTime == written.cloudStorage.customTime
                && kept.cloudStorage.contexts == written.cloudStorage.contexts)
        let report = try bucket.verify()
        #expect(report.isSound && report.noncurrentGenerations == 1, "\(report.problems)")
        #expect(try bucket.restoreSnapshotNow(named: "before").count == 1)
        #expect(try bucket.currentMetadata(of: objectName("a")).cloudStorage == written.cloudStorage)
        // Fields changed behind storesh's back are found by check.
        bucket.close()
        let tamper = try SQLiteConnection(path: directory.file("fields.bucket"), flags: 0x02)
        try tamper.execute("UPDATE objects SET service = x'0102'")
        tamper.close()
        #expect(try !openBucket(directory.file("fields.bucket")).verify().isSound)
    }
}

@Suite("Soft delete in the bucket file (rule B6)")
struct SoftDeleteTests {
    let directory = TemporaryDirectory()

    @Test(
        "rule B6: deleted and replaced versions are kept for the policy's time, restored as new generations, then go for good"
    )
    func keptRestoredAndPurged() async throws {
        let path = directory.file("soft.bucket")
        let bucket = try openBucket(path)
        var settings = BucketSettings(madeAt: t0)
        settings.softDeleteSeconds = 7 * 86_400
        try bucket.storeSettings(settings)
        let first = try await bucket.write(Data("one".utf8), to: objectName("a"), options: WriteOptions())
        _ = try await bucket.write(Data("two".utf8), to: objectName("a"), options: WriteOptions())
        try await bucket.delete(objectName("a"))
        let soft = try bucket.listGenerations(
            prefix: "", delimited: false, options: ListOptions(includeMetadata: true), softDeleted: true)
        #expect(soft.items == ["a", "a"])
        let kept = try bucket.softDeletedGenerationMetadata(of: objectName("a"), generation: first.generation)
        let times = try #require(
            kept.cloudStorage.softDeleteTime.flatMap { start in kept.cloudStorage.hardDeleteTime.map { (start, $0) } })
        #expect(times.1.microseconds - times.0.microseconds == 7 * 86_400 * 1_000_000)
        let restored = try await bucket.restore(
            objectName("a"), generation: first.generation, precondition: Precondition(generation: 0))
        #expect(restored.generation > first.generation && restored.cloudStorage.softDeleteTime == nil)
        #expect(try await bucket.read(objectName("a")) == Data("one".utf8))
        #expect(try bucket.verify().isSound)
        bucket.close()
        // Eight days on, the next change deletes the soft-deleted version for good, and its content.
        let later = try openBucket(path, clockStart: Timestamp(microseconds: t0.microseconds + 8 * 86_400 * 1_000_000))
        _ = try await later.write(Data("three".utf8), to: objectName("b"), options: WriteOptions())
        #expect(
            try later.listGenerations(prefix: "", delimited: false, options: ListOptions(), softDeleted: true).items
                .isEmpty)
        let report = try later.verify()
        #expect(report.isSound && report.softDeletedGenerations == 0, "\(report.problems)")
    }
}
