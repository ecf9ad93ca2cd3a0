import Foundation
import StoreshCore
import StoreshRules
import StoreshTestSupport
import Testing

@testable import StoreshLocal

@Suite("Preconditions (rule G5), declared capabilities and listings with metadata, on the local bucket")
struct PreconditionTests {
    let directory = TemporaryDirectory()

    @Test("a create refuses an object that exists; nothing is overwritten")
    func createMustNotExist() async throws {
        let bucket = try openBucket(directory.file("p.bucket"))
        let first = try await bucket.write(
            Data("one".utf8), to: objectName("a"), options: WriteOptions(), precondition: .doesNotExist)
        let error = await storageError {
            _ = try await bucket.write(
                Data("two".utf8), to: objectName("a"), options: WriteOptions(), precondition: .doesNotExist)
        }
        #expect(error?.code == .preconditionFailed)
        #expect(
            error?.message
                == "Object a changed meanwhile: it exists (generation \(first.generation)), and the change was to create it. Nothing was changed."
        )
        #expect(try await bucket.read(objectName("a")) == Data("one".utf8))
    }

    @Test("an overwrite, update or delete computed from an older state is refused and changes nothing")
    func staleStateIsRefused() async throws {
        let bucket = try openBucket(directory.file("p.bucket"))
        let read = try await bucket.write(Data("one".utf8), to: objectName("a"), options: WriteOptions())
        // Someone else changes the object after it was read.
        var update = MetadataUpdate()
        try update.set("cacheControl", to: "no-cache")
        let now = try await bucket.updateMetadata(of: objectName("a"), update, precondition: .matches(read)).metadata
        #expect(now.metageneration == read.metageneration + 1)

        var other = MetadataUpdate()
        try other.set("contentLanguage", to: "fr")
        let stale = await storageError {
            _ = try await bucket.updateMetadata(of: objectName("a"), other, precondition: .matches(read))
        }
        #expect(stale?.code == .preconditionFailed)
        #expect(
            stale?.message.contains("its metageneration is \(now.metageneration), not \(read.metageneration)") == true)
        let deleted = await storageError {
            try await bucket.delete(objectName("a"), precondition: Precondition(generation: read.generation + 1))
        }
        #expect(deleted?.code == .preconditionFailed)
        let overwritten = await storageError {
            _ = try await bucket.write(
                Data("x".utf8), to: objectName("a"), options: WriteOptions(), precondition: Precondition(generation: 1))
        }
        #expect(overwritten?.code == .preconditionFailed)
        #expect(try await bucket.metadata(of: objectName("a")) == now, "nothing changed")
        try await bucket.delete(objectName("a"), precondition: Precondition(generation: read.generation))
        #expect(await storageError { _ = try await bucket.metadata(of: objectName("a")) }?.code == .objectNotFound)
    }

    @Test("a page carries its items' metadata when asked, read with the page")
    func pageWithMetadata() async throws {
        let bucket = try openBucket(directory.file("p.bucket"))
        try await bucket.put(["f/a", "f/b", "f/sub/c"])
        let page = try await bucket.list(StoragePath(normalizing: "f"), options: ListOptions(includeMetadata: true))
        #expect(page.items == ["f/a", "f/b"] && page.prefixes == ["f/sub"])
        let expected = [
            try await bucket.metadata(of: objectName("f/a")), try await bucket.metadata(of: objectName("f/b")),
        ]
        #expect(page.itemMetadata == expected)
        #expect(try await bucket.list(StoragePath(normalizing: "f"), options: ListOptions()).itemMetadata == nil)
    }

    @Test("a page's metadata is read for all its items at once, whatever their names hold, in the page's order")
    func pageWithMetadataOfAwkwardNames() async throws {
        let bucket = try openBucket(directory.file("p.bucket"))
        let names = ["g/quote\"d", "g/back\\slash", "g/tab\tname", "g/ünï cödé", "g/日本", "g/😀", "g/[x]*?"]
        try await bucket.put(names)
        let page = try await bucket.list(
            StoragePath(normalizing: "g"), options: ListOptions(maxResults: 1000, includeMetadata: true))
        #expect(Set(page.items) == Set(names))
        #expect(page.itemMetadata?.map(\.fullPath) == page.items)
        let small = try await bucket.list(
            StoragePath(normalizing: "g"), options: ListOptions(maxResults: 2, includeMetadata: true))
        #expect(small.itemMetadata?.map(\.fullPath) == Array(page.items.prefix(2)))
    }

    @Test("the local bucket declares what it can do, and gives each capability")
    func capabilities() throws {
        let bucket = try openBucket(directory.file("p.bucket"))
        #expect(
            bucket.capabilities == [
                .transactions, .snapshots, .rulesAdministration, .archives, .integrityCheck, .immediateReads,
                .bucketSettings,
            ])
        #expect(
            bucket.transactions != nil && bucket.snapshotStore != nil && bucket.immediateReads != nil
                && bucket.settingsStore != nil)
    }

    @Test("rules hold no bucket: a bucket, its rules session and the layer around it are freed when dropped")
    func noReferenceCycle() throws {
        weak var weakBucket: LocalBucket?
        weak var weakRules: RulesSession?
        do {
            let bucket = try openBucket(directory.file("p.bucket"))
            let rules = try RulesSession(store: bucket, clock: bucket.clock)
            let guarded = rules.guarding(bucket)
            #expect(guarded.name == bucket.name)
            weakBucket = bucket
            weakRules = rules
        }
        #expect(weakBucket == nil)
        #expect(weakRules == nil)
    }

    @Test("closing leaves the bucket as one file; closing again does nothing")
    func closeLeavesOneFile() async throws {
        let path = directory.file("p.bucket")
        let bucket = try openBucket(path)
        try await bucket.put(["a"])
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        bucket.close()
        bucket.close()
        #expect(
            !FileManager.default.fileExists(atPath: path + "-wal")
                && !FileManager.default.fileExists(atPath: path + "-shm"))
        #expect(await storageError { try await bucket.put(["b"]) }?.message == "The bucket \(path) was closed.")
    }
}
