import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite
import StoreshTestSupport
import Testing

@testable import StoreshLocal

/// A fresh directory for one test, removed afterwards.
final class TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "storesh-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }
}

let t0 = Timestamp(rfc3339: "2026-11-21T09:30:00.000Z")!

func openBucket(_ path: String, clockStart: Timestamp = t0, busyTimeout: Int32 = 5000) throws -> LocalBucket {
    try LocalBucket.open(
        at: path,
        options: LocalBucketOptions(clock: SteppingClock(start: clockStart), busyTimeoutMilliseconds: busyTimeout))
}

func objectName(_ text: String) -> ObjectName { try! ObjectName(text) }

/// Runs `body` with the bucket file inside a transaction of `bucket` (the transaction's engine), then commits it, or
/// rolls it back when `committing` is false.
func inTransaction(
    _ bucket: LocalBucket, forWriting: Bool = true, committing: Bool = true, _ body: (LocalBucket) async throws -> Void
) async throws {
    try await bucket.withTransaction(forWriting: forWriting) { transaction in
        let file = try #require(transaction as? any BucketFileTransaction).file
        #expect(await file.isInTransaction)
        try await body(file)
        return committing ? .commit(()) : .rollback(())
    }
}

extension LocalBucket {
    func put(_ names: [String]) async throws {
        for object in names { _ = try await write(Data(object.utf8), to: objectName(object), options: WriteOptions()) }
    }
}

@Suite("Local bucket: the spec on SQLite")
struct LocalBucketSpecTests {
    let directory = TemporaryDirectory()

    @Test("rule L3: the seed example, on the engine")
    func seedExample() async throws {
        let bucket = try openBucket(directory.file("seed.bucket"))
        try await bucket.put(["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"])
        let root = try await bucket.list(.root, options: ListOptions())
        #expect(root == ListPage(prefixes: ["correctPrefix", "lonelyItem", "wrongPrefix"]))
        #expect(
            try await bucket.list(StoragePath(normalizing: "correctPrefix"), options: ListOptions())
                == ListPage(items: ["correctPrefix/happyItem"]))
        #expect(try await bucket.list(StoragePath(normalizing: "wrongPrefix"), options: ListOptions()) == ListPage())
        #expect(try await bucket.list(StoragePath(normalizing: "lonelyItem"), options: ListOptions()) == ListPage())
    }

    @Test("rules L7, L9, L11: combined pages, then listAll gathers them")
    func pagesAndListAll() async throws {
        let bucket = try openBucket(directory.file("l7.bucket"))
        try await bucket.put(["a/1", "b/1", "c", "d", "e/1"])
        var token: String?
        var pages: [ListPage] = []
        repeat {
            let page = try await bucket.list(.root, options: ListOptions(maxResults: 2, pageToken: token))
            pages.append(page)
            token = page.nextPageToken
        } while token != nil && pages.count < 10
        #expect(pages.map(\.prefixes) == [["a", "b"], [], ["e"]])
        #expect(pages.map(\.items) == [[], ["c", "d"], []])
        let all = try await bucket.listAll(.root)
        #expect(all == ListPage(prefixes: ["a", "b", "e"], items: ["c", "d"]))
    }

    @Test("rule L11: listAll crosses the 1000-entry page")
    func listAllManyPages() async throws {
        let bucket = try openBucket(directory.file("many.bucket"))
        let objects = (0..<2500).map { ArchivedObject(name: objectName(String(format: "f/%05d", $0)), content: Data()) }
        try bucket.importObjects(objects, replacingEverything: false)
        let all = try await bucket.listAll(StoragePath(normalizing: "f"))
        #expect(all.items.count == 2500)
        #expect(all.items.first == "f/00000" && all.items.last == "f/02499")
    }

    @Test("rule L4: the engine orders names by bytes")
    func byteOrder() async throws {
        let bucket = try openBucket(directory.file("order.bucket"))
        try await bucket.put(["é", "a", "B", "Z", "_", "cafe\u{301}", "caf\u{E9}"])
        let root = try await bucket.list(.root, options: ListOptions())
        #expect(root.items == ["B", "Z", "_", "a", "cafe\u{301}", "caf\u{E9}", "é"])
    }

    @Test("rule L10: a token keeps working while objects are added and deleted")
    func tokensAcrossChanges() async throws {
        let bucket = try openBucket(directory.file("token.bucket"))
        try await bucket.put(["a", "b", "c", "d"])
        let first = try await bucket.list(.root, options: ListOptions(maxResults: 2))
        try await bucket.put(["aa", "bb"])
        try await bucket.delete(objectName("b"))
        let second = try await bucket.list(.root, options: ListOptions(maxResults: 2, pageToken: first.nextPageToken))
        #expect(second.items == ["bb", "c"])
        let error = await storageError {
            _ = try await bucket.list(
                StoragePath(normalizing: "x"), options: ListOptions(pageToken: first.nextPageToken))
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test("rule M3: writes give unique, increasing generations, even when the clock restarts")
    func generations() async throws {
        let path = directory.file("gen.bucket")
        var generations: [Int64] = []
        for _ in 0..<2 {
            // Each open restarts the clock at t0, as `--clock` does in each new process.
            let bucket = try openBucket(path)
            for object in ["x", "y", "x"] {
                generations.append(
                    try await bucket.write(Data(), to: objectName(object), options: WriteOptions()).generation)
            }
        }
        #expect(generations == generations.sorted())
        #expect(Set(generations).count == generations.count)
        #expect(generations.first == t0.microseconds)
        let bucket = try openBucket(path)
        let x = try await bucket.metadata(of: objectName("x"))
        #expect(x.generation == generations.last)
        #expect(x.metageneration == 1)
        #expect(x.md5Hash == "1B2M2Y8AsgTpgAmY7PhCfg==")
        #expect(x.contentType == "application/octet-stream")
    }

    @Test("rule M3: an overwrite is a new object: new generation, metageneration 1, new times")
    func overwrite() async throws {
        let bucket = try openBucket(directory.file("overwrite.bucket"))
        let first = try await bucket.write(
            Data("hello".utf8), to: objectName("a.txt"),
            options: WriteOptions(properties: [.cacheControl: "no-cache"], customMetadata: ["k": "v"]))
        #expect(first.contentType == "text/plain" && first.md5Hash == "XUFAKrxLKna5cZ2REBfFkg==" && first.size == 5)
        var update = MetadataUpdate()
        try update.set("contentLanguage", to: "en")
        _ = try await bucket.updateMetadata(of: objectName("a.txt"), update, ifMetagenerationMatch: nil)
        let second = try await bucket.write(Data("bye".utf8), to: objectName("a.txt"), options: WriteOptions())
        #expect(second.generation > first.generation)
        #expect(second.metageneration == 1)
        #expect(second.timeCreated > first.timeCreated && second.updated == second.timeCreated)
        #expect(second.customMetadata.isEmpty && second.cacheControl == nil && second.contentLanguage == nil)
        #expect(try await bucket.read(objectName("a.txt")) == Data("bye".utf8))
        #expect(try bucket.objectCount() == 1)
    }

    @Test("rules M4–M6 on the engine: partial updates, metageneration, unchanged updates")
    func updates() async throws {
        let bucket = try openBucket(directory.file("update.bucket"))
        let created = try await bucket.write(
            Data("x".utf8), to: objectName("images/forest.jpg"),
            options: WriteOptions(customMetadata: ["location": "Yosemite, CA, USA", "activity": "Hiking"]))
        var update = MetadataUpdate()
        try update.set("cacheControl", to: "public, max-age=3600")
        try update.unset("custom.activity")
        let result = try await bucket.updateMetadata(
            of: objectName("images/forest.jpg"), update, ifMetagenerationMatch: 1)
        #expect(result.changed)
        #expect(result.metadata.metageneration == 2)
        #expect(result.metadata.updated > created.updated)
        #expect(result.metadata.customMetadata == ["location": "Yosemite, CA, USA"])
        let stored = try await bucket.metadata(of: objectName("images/forest.jpg"))
        #expect(stored == result.metadata)

        let again = try await bucket.updateMetadata(
            of: objectName("images/forest.jpg"), update, ifMetagenerationMatch: nil)
        #expect(!again.changed)
        #expect(try await bucket.metadata(of: objectName("images/forest.jpg")) == stored)

        let stale = await storageError {
            _ = try await bucket.updateMetadata(of: objectName("images/forest.jpg"), update, ifMetagenerationMatch: 1)
        }
        #expect(stale?.message.contains("metageneration is 2, not 1") == true)

        var clear = MetadataUpdate()
        try clear.unset("custom")
        let cleared = try await bucket.updateMetadata(
            of: objectName("images/forest.jpg"), clear, ifMetagenerationMatch: nil)
        #expect(cleared.metadata.customMetadata.isEmpty)
        #expect(try await bucket.metadata(of: objectName("images/forest.jpg")).customMetadata.isEmpty)
    }

    @Test("rule M8: missing objects are object-not-found, with the spec's message")
    func missing() async throws {
        let bucket = try openBucket(directory.file("missing.bucket"))
        let expected = StorageError(.objectNotFound, "Object nowhere/x does not exist.")
        #expect(await storageError { _ = try await bucket.metadata(of: objectName("nowhere/x")) } == expected)
        #expect(await storageError { _ = try await bucket.read(objectName("nowhere/x")) } == expected)
        #expect(await storageError { try await bucket.delete(objectName("nowhere/x")) } == expected)
        #expect(
            await storageError {
                _ = try await bucket.updateMetadata(
                    of: objectName("nowhere/x"), MetadataUpdate(), ifMetagenerationMatch: nil)
            } == expected)
    }

    @Test("bad input writes nothing: wrong MD5, oversized custom metadata")
    func badWrites() async throws {
        let bucket = try openBucket(directory.file("bad.bucket"))
        let checksum = await storageError {
            _ = try await bucket.write(
                Data("hello".utf8), to: objectName("a"), options: WriteOptions(expectedMD5: "1B2M2Y8AsgTpgAmY7PhCfg=="))
        }
        #expect(checksum?.code == .nonMatchingChecksum)
        let tooBig = await storageError {
            _ = try await bucket.write(
                Data(), to: objectName("a"),
                options: WriteOptions(customMetadata: ["k": String(repeating: "v", count: 9000)]))
        }
        #expect(tooBig?.code == .invalidArgument)
        #expect(try bucket.objectCount() == 0)
        _ = try await bucket.write(
            Data("hello".utf8), to: objectName("a"), options: WriteOptions(expectedMD5: "XUFAKrxLKna5cZ2REBfFkg=="))
        #expect(try bucket.objectCount() == 1)
    }

    @Test("scan walks names under a prefix, without a delimiter, a page at a time")
    func scan() async throws {
        let bucket = try openBucket(directory.file("scan.bucket"))
        try await bucket.put(["a/1", "a/b/2", "a/b/c/3", "a0", "b/4", "a//5"])
        var names: [String] = []
        var after: String?
        repeat {
            let page = try await bucket.scan(prefix: "a/", after: after, limit: 2)
            names += page.objects.map(\.fullPath)
            after = page.resumeAfter
        } while after != nil
        #expect(names == ["a//5", "a/1", "a/b/2", "a/b/c/3"])
        #expect(try await bucket.scan(prefix: "", after: nil, limit: 100).objects.count == 6)
    }
}

@Suite("Local bucket: ranged reads (issue 55)")
struct RangedReadTests {
    @Test(
        "a range is read alone: the pieces handed over are its bytes, however large the object, in one state with its metadata"
    )
    func rangeReadsOnlyItsBytes() async throws {
        let directory = TemporaryDirectory()
        let bucket = try openBucket(directory.file("r.bucket"))
        defer { bucket.close() }
        // Larger than a streamed piece, so that a whole read would hand over several.
        let content = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let written = try await bucket.write(content, to: objectName("big.bin"), options: WriteOptions())
        for range: Range<Int64> in [
            0..<10, 1_048_570..<1_048_590, Int64(content.count) - 7..<Int64(content.count), 5..<5,
        ] {
            var handed = Data()
            var sizeSeen: Int64?
            let (metadata, read) = try bucket.currentObject(
                objectName("big.bin"),
                bytes: { size in
                    sizeSeen = size
                    return range
                }, contentPieces: { handed.append($0) })
            #expect(sizeSeen == Int64(content.count) && read == range && metadata.generation == written.generation)
            #expect(handed == content.subdata(in: Int(range.lowerBound)..<Int(range.upperBound)))
        }
        // A range past the content is refused, not read short.
        #expect(throws: StorageError.self) {
            _ = try bucket.currentObject(
                objectName("big.bin"), bytes: { size in size - 2..<size + 5 }, contentPieces: { _ in })
        }
        // No range: the whole content, checked against its MD5, as before.
        var whole = Data()
        let (_, none) = try bucket.currentObject(
            objectName("big.bin"), bytes: { _ in nil }, contentPieces: { whole.append($0) })
        #expect(none == nil && whole == content)
    }
}

@Suite("Local bucket: transactions, durability and sharing")
struct LocalBucketDurabilityTests {
    let directory = TemporaryDirectory()

    @Test("a rolled-back transaction leaves nothing; a committed one lands whole")
    func transactions() async throws {
        let path = directory.file("tx.bucket")
        let bucket = try openBucket(path)
        try await bucket.put(["keep"])
        try await inTransaction(bucket, committing: false) { file in
            try await file.put(["one", "two"])
            try await file.delete(objectName("keep"))
        }
        #expect(try await bucket.listAll(.root).items == ["keep"])

        try await inTransaction(bucket) { file in
            try await file.put(["one", "two"])
            // Another connection sees none of it before the commit, nor does the bucket's own.
            #expect(try openBucket(path).objectCount() == 1)
            #expect(try bucket.objectCount() == 1)
        }
        #expect(try openBucket(path).objectCount() == 3)
    }

    @Test("a transaction whose engine was closed before it ended leaves nothing open on the bucket's connection")
    func engineClosedEarly() async throws {
        let path = directory.file("early.bucket")
        let bucket = try openBucket(path)
        try await bucket.put(["keep"])
        await #expect(throws: StorageError.self) {
            try await inTransaction(bucket) { file in
                try await file.put(["lost"])
                file.close()
            }
        }
        // The bucket's own connection, given back, is in no transaction: its next change commits, and another
        // connection sees it (and not the closed transaction's write).
        try await bucket.put(["after"])
        #expect(try await openBucket(path).listAll(.root).items == ["after", "keep"])
        // Nor can a transaction begin inside another: it is refused, not a crash.
        try await inTransaction(bucket) { file in
            let error = await storageError { _ = try await file.withTransaction(forWriting: true) { _ in .commit(()) } }
            #expect(error?.message.contains("transactions do not nest") == true)
        }
    }

    @Test("a failed change inside a transaction leaves nothing, and the earlier changes stay")
    func failedChangeInTransaction() async throws {
        let bucket = try openBucket(directory.file("savepoint.bucket"))
        try await inTransaction(bucket) { file in
            try await file.put(["first"])
            let error = await storageError { try await file.delete(objectName("absent")) }
            #expect(error?.code == .objectNotFound)
            try await file.put(["second"])
        }
        #expect(try await bucket.listAll(.root).items == ["first", "second"])
    }

    @Test("an import that replaces everything removes more than a page of objects, and a snapshot keeps seeing them")
    func importReplacingManyPages() async throws {
        let bucket = try openBucket(directory.file("replace.bucket"))
        let old = (0..<2_345).map { ArchivedObject(name: objectName("old/\($0)"), content: Data("o\($0)".utf8)) }
        try bucket.importObjects(old, replacingEverything: false)
        _ = try bucket.saveSnapshotNow(named: "before")
        try bucket.importObjects(
            [ArchivedObject(name: objectName("new/1"), content: Data("n".utf8))], replacingEverything: true)
        #expect(try bucket.objectCount() == 1)
        #expect(try await bucket.listAll(.root).prefixes == ["new"])
        let changes = try bucket.changesNow(from: .snapshot("before"), to: .current)
        #expect(changes.count == 2_346)
        #expect(try bucket.verify().isSound)
    }

    @Test("a bulk import is all or nothing")
    func importAllOrNothing() async throws {
        let bucket = try openBucket(directory.file("import.bucket"))
        try await bucket.put(["existing"])
        let objects = [
            ArchivedObject(name: objectName("new/1"), content: Data()),
            ArchivedObject(
                name: objectName("new/2"), content: Data(), customMetadata: ["k": String(repeating: "v", count: 9000)]),
        ]
        let error = storageError { try bucket.importObjects(objects, replacingEverything: true) }
        #expect(error?.code == .invalidArgument)
        #expect(try await bucket.listAll(.root).items == ["existing"])
    }

    @Test("a writer that cannot get the bucket says so, and nothing is lost")
    func busyWriter() async throws {
        let path = directory.file("busy.bucket")
        let holder = try openBucket(path)
        let waiter = try openBucket(path, busyTimeout: 100)
        try await inTransaction(holder) { file in
            try await file.put(["held"])
            let error = await storageError { try await waiter.put(["blocked"]) }
            #expect(error?.code == .unavailable, "busy is retryable, not unknown")
            #expect(error?.message.contains("is busy: another process is changing it") == true)
            // Readers are not blocked by the writer (WAL) and see the last committed state.
            #expect(try waiter.objectCount() == 0)
        }
        try await waiter.put(["after"])
        #expect(try await waiter.listAll(.root).items == ["after", "held"])
        #expect(try waiter.integrityProblems() == [])
    }

    @Test("a reading transaction does not block a writer")
    func readingTransaction() async throws {
        let path = directory.file("reader.bucket")
        let reader = try openBucket(path)
        let writer = try openBucket(path, busyTimeout: 100)
        try await inTransaction(reader, forWriting: false) { file in
            _ = try await file.list(.root, options: ListOptions())
            try await writer.put(["while-reading"])
            #expect(try await file.list(.root, options: ListOptions()).items == [], "the reader keeps its snapshot")
        }
        #expect(try await reader.list(.root, options: ListOptions()).items == ["while-reading"])
    }

    @Test("two writers interleaving commits lose nothing")
    func interleavedWriters() async throws {
        let path = directory.file("two.bucket")
        let first = try openBucket(path)
        let second = try openBucket(path)
        for index in 0..<200 {
            try await (index.isMultiple(of: 2) ? first : second).put(["w/\(index)"])
        }
        #expect(try first.objectCount() == 200)
        let generations = try await first.scan(prefix: "w/", after: nil, limit: 1000).objects.map(\.generation)
        #expect(Set(generations).count == 200)
    }

    @Test("a file that is not a bucket, or is damaged, is reported and left byte for byte as it was")
    func damagedFiles() async throws {
        let good = directory.file("good.bucket")
        let bucket = try openBucket(good)
        try await bucket.put((0..<300).map { "objects/\($0)" })
        bucket.close()
        let goodBytes = try Data(contentsOf: URL(fileURLWithPath: good))

        var cases: [(String, Data, String)] = [
            ("text.bucket", Data("hello, I am a text file\n".utf8), "not a storesh bucket"),
            ("truncated.bucket", goodBytes.prefix(goodBytes.count / 2), "damaged"),
            ("empty-header.bucket", Data(count: 4096), "not a storesh bucket"),
        ]
        var flipped = goodBytes
        for offset in stride(from: 4096 + 100, to: min(flipped.count, 4096 * 4), by: 7) { flipped[offset] ^= 0x5A }
        cases.append(("flipped.bucket", flipped, "damaged"))

        for (file, bytes, expected) in cases {
            let path = directory.file(file)
            try bytes.write(to: URL(fileURLWithPath: path))
            let error = await storageError {
                let damaged = try openBucket(path)
                _ = try damaged.objectCount()
                _ = try await damaged.listAll(StoragePath(normalizing: "objects"))
                try await damaged.put(["x"])
            }
            #expect(error?.code == .internalError, "\(file)")
            #expect(error?.message.contains(expected) == true, "\(file): \(error?.message ?? "no error")")
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes, "\(file) was changed")
        }
    }

    @Test("a directory or an empty file is named for what it is and left as it was")
    func directoryAndEmptyFile() throws {
        let empty = directory.file("empty.bucket")
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(
            storageError { _ = try openBucket(empty) }?.message.contains("is an empty file, not a storesh bucket")
                == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
        #expect(
            storageError { _ = try openBucket(directory.path) }?.message.contains("is a directory, not a bucket file")
                == true)
    }

    @Test("an SQLite database that is not a bucket is refused untouched")
    func foreignDatabase() throws {
        let path = directory.file("foreign.sqlite")
        let connection = try SQLiteConnection(path: path, flags: 0x02 | 0x04)
        try connection.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        connection.close()
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let error = storageError { _ = try openBucket(path) }
        #expect(error?.message.contains("is an SQLite database, but not a storesh bucket") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("a missing bucket is created empty only when asked to")
    func creation() throws {
        let path = directory.file("new.bucket")
        let bucket = try openBucket(path)
        #expect(bucket.name == "new")
        #expect(try bucket.objectCount() == 0)
        let refused = storageError {
            _ = try LocalBucket.open(
                at: directory.file("absent.bucket"), options: LocalBucketOptions(createIfMissing: false))
        }
        #expect(refused?.code == .bucketNotFound)
        // The engine makes no directories: a mistyped folder is an error, and nothing is left behind.
        let noDirectory = storageError { _ = try openBucket(directory.file("missing/dir/x.bucket")) }
        #expect(noDirectory?.code == .internalError)
        #expect(!FileManager.default.fileExists(atPath: directory.file("missing")))
        #expect(LocalBucket.defaultName(forFile: "/x/My Photos.bucket") == "my-photos")
        #expect(LocalBucket.defaultName(forFile: "/x/???.bucket") == "local")
    }
}

/// Content from a source, in memory here: what the server's spools and `put` of a large file hand the bucket.
private struct BytesSource: ContentSource {
    let bytes: Data
    var size: Int64 { Int64(bytes.count) }
    var md5Base64: String { ContentHash.md5Base64(bytes) }
    var origin: String? { nil }
    func read(offset: Int64, length: Int) throws -> Data {
        Data(bytes[Int(offset)..<min(bytes.count, Int(offset) + length)])
    }
}

@Suite("Local bucket: large content a piece at a time")
struct LocalBucketStreamingTests {
    let directory = TemporaryDirectory()

    @Test("a write from a source larger than a piece lands whole, and reads back whole and in pieces, MD5 checked")
    func streamedWriteAndRead() async throws {
        let bucket = try openBucket(directory.file("stream.bucket"))
        var generator = SystemRandomNumberGenerator()
        let bytes = Data(
            (0..<(3 * LocalBucket.streamedPieceBytes + 17)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let written = try await bucket.write(
            from: BytesSource(bytes: bytes), to: objectName("big/one.bin"), options: WriteOptions(), precondition: .none
        )
        #expect(written.size == Int64(bytes.count) && written.md5Hash == ContentHash.md5Base64(bytes))
        // The CRC-32C, computed as the pieces passed, is the whole content's, and is kept.
        #expect(written.crc32c == CRC32C.base64(of: bytes))
        #expect(try bucket.currentMetadata(of: objectName("big/one.bin")).crc32c == CRC32C.base64(of: bytes))
        #expect(try await bucket.read(objectName("big/one.bin")) == bytes)
        var pieces: [Data] = []
        let read = try bucket.currentObject(objectName("big/one.bin")) { pieces.append($0) }
        #expect(read == written && pieces.count == 4 && pieces.reduce(Data(), +) == bytes)
        #expect(pieces.allSatisfy { $0.count <= LocalBucket.streamedPieceBytes })
        // A failed precondition writes nothing, content included.
        await #expect(throws: StorageError.self) {
            try await bucket.write(
                from: BytesSource(bytes: bytes), to: objectName("big/one.bin"), options: WriteOptions(),
                precondition: .doesNotExist)
        }
        #expect(try await bucket.read(objectName("big/one.bin")) == bytes)
        let report = try bucket.verify()
        #expect(
            report.isSound && report.objects == 1 && report.contentBytes == Int64(bytes.count), "\(report.problems)")
    }
}

@Suite("Local bucket: each content's CRC-32C, kept beside it")
struct ContentChecksumTests {
    let directory = TemporaryDirectory()

    @Test("a write answers with its content's CRC-32C; a metadata read and a listing with metadata give the same")
    func keptAndRead() async throws {
        let bucket = try openBucket(directory.file("crc.bucket"))
        let written = try await bucket.write(Data("hello".utf8), to: objectName("a/hello.txt"), options: WriteOptions())
        // CRC-32C("hello") = 0x9A71BB4C, its four bytes in base64, as Cloud Storage writes it.
        #expect(written.crc32c == "mnG7TA==")
        _ = try await bucket.write(Data(), to: objectName("a/empty"), options: WriteOptions())
        #expect(try bucket.currentMetadata(of: objectName("a/hello.txt")).crc32c == "mnG7TA==")
        var options = ListOptions()
        options.includeMetadata = true
        let page = try bucket.listPage(StoragePath(normalizing: "a"), options: options)
        #expect(page.itemMetadata?.map(\.crc32c) == ["AAAAAA==", "mnG7TA=="])
        // A metadata update keeps the content, and so its checksum.
        var update = MetadataUpdate()
        try update.set("cacheControl", to: "no-cache")
        let updated = try await bucket.updateMetadata(of: objectName("a/hello.txt"), update, ifMetagenerationMatch: nil)
        #expect(updated.metadata.crc32c == "mnG7TA==")
        // Content no version refers to any more goes with its checksum.
        _ = try await bucket.write(Data("other".utf8), to: objectName("a/hello.txt"), options: WriteOptions())
        try await bucket.delete(objectName("a/empty"))
        #expect(
            try bucket.currentMetadata(of: objectName("a/hello.txt")).crc32c == CRC32C.base64(of: Data("other".utf8)))
        #expect(try bucket.verify().isSound)
    }

    @Test("a version-2 file is upgraded on open: every content's CRC-32C computed once; check finds a wrong one")
    func upgradeFromVersion2AndCheck() async throws {
        let path = directory.file("v2.bucket")
        var bucket: LocalBucket? = try openBucket(path)
        var generator = SystemRandomNumberGenerator()
        let large = Data(
            (0..<(2 * LocalBucket.streamedPieceBytes + 5)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        _ = try await bucket!.write(Data("hello".utf8), to: objectName("hello.txt"), options: WriteOptions())
        _ = try await bucket!.write(large, to: objectName("large.bin"), options: WriteOptions())
        bucket?.close()
        bucket = nil
        // The layout of version 2: no checksums.
        let raw = try SQLiteConnection(path: path, flags: 0x02)
        try raw.execute("DROP TABLE content_checksums; PRAGMA user_version = 2")
        raw.close()

        let upgraded = try openBucket(path)
        #expect(try upgraded.currentMetadata(of: objectName("hello.txt")).crc32c == "mnG7TA==")
        #expect(try upgraded.currentMetadata(of: objectName("large.bin")).crc32c == CRC32C.base64(of: large))
        #expect(try upgraded.verify().isSound)
        upgraded.close()

        // A checksum changed behind storesh's back is found by check, naming the object.
        let tamper = try SQLiteConnection(path: path, flags: 0x02)
        #expect(try tamper.integer("PRAGMA user_version") == BucketSchema.version)
        try tamper.execute(
            "UPDATE content_checksums SET crc32c = crc32c + 1 WHERE content_id = (SELECT content_id FROM objects WHERE name = 'hello.txt')"
        )
        tamper.close()
        let report = try openBucket(path).verify()
        #expect(
            report.problems.count == 1 && report.problems.first?.contains("\"hello.txt\"") == true, "\(report.problems)"
        )
        // And one missing.
        let remove = try SQLiteConnection(path: path, flags: 0x02)
        try remove.execute(
            "DELETE FROM content_checksums WHERE content_id = (SELECT content_id FROM objects WHERE name = 'large.bin')"
        )
        remove.close()
        #expect(try openBucket(path).verify().problems.contains("1 content rows have no CRC-32C"))
    }
}

@Suite("The bucket file's log and its lineage (issue 36)")
struct BucketFileLogTests {
    let directory = TemporaryDirectory()

    @Test("a crash that leaves hundreds of commits in the log opens again with all of them")
    func longLogOpensAgain() async throws {
        let path = directory.file("busy.bucket")
        let bucket = try openBucket(path)
        // A reader of the first state holds the whole log back: no fold can complete, as under a busy server whose
        // readers stream large objects.
        let reader = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READONLY)
        try reader.execute("BEGIN; SELECT count(*) FROM objects")
        let names = (0..<300).map { "o/\($0)" }
        try await bucket.put(names)
        // The crash: the file and its log as they are, where no process has them open.
        let crashed = directory.file("crashed.bucket")
        try FileManager.default.copyItem(atPath: path, toPath: crashed)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: crashed + "-wal")
        try reader.execute("COMMIT")
        reader.close()
        bucket.close()
        #expect(BucketFileLog.committedTransactions(inLogOf: crashed) >= 300)
        let reopened = try openBucket(crashed)
        defer { reopened.close() }
        #expect(try reopened.objectCount() == 300)
    }

    @Test("with nothing holding the log back, the lineage stays short")
    func lineageStaysShort() async throws {
        let path = directory.file("short.bucket")
        let bucket = try openBucket(path)
        defer { bucket.close() }
        try await bucket.put((0..<200).map { "o/\($0)" })
        let marks = try bucket.withConnection { connection in try BucketFileLog.lineage(connection) } ?? []
        #expect(marks.count <= 2 * LineageKeeper.foldInterval)
        #expect(marks.count >= 1)
    }
}
