import Foundation
import StoreshCore
import StoreshLocal
import Testing

@testable import StoreshServer

/// The storage service under the routes, called as the routes call it, with no HTTP (issue 55).
@Suite("The storage service: compose, copy, move and restore without HTTP")
struct StorageServiceTests {
    final class Served {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storesh-service-\(UUID().uuidString)"
        ).path
        let bucket: ServedBucket
        let other: ServedBucket
        let service: StorageService

        init(maximumObjectBytes: Int64 = 1 << 20) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            bucket = try ServedBucket(
                try LocalBucket.open(at: directory + "/a.bucket"), options: LocalBucketOptions(), readerCount: 2)
            other = try ServedBucket(
                try LocalBucket.open(at: directory + "/b.bucket"), options: LocalBucketOptions(), readerCount: 2)
            service = StorageService(spoolDirectory: directory, maximumObjectBytes: maximumObjectBytes)
        }

        deinit {
            bucket.close()
            other.close()
            try? FileManager.default.removeItem(atPath: directory)
        }

        @discardableResult
        func put(_ text: String, _ name: String, in bucket: ServedBucket? = nil) async throws -> ObjectMetadata {
            let name = try ObjectName(name)
            return try await (bucket ?? self.bucket).change {
                try await $0.write(Data(text.utf8), to: name, options: WriteOptions(), precondition: .none)
            }
        }

        func text(_ name: String, in bucket: ServedBucket? = nil) throws -> String {
            String(
                decoding: try service.read(try ObjectName(name), generation: nil, in: bucket ?? self.bucket).content
                    .read(offset: 0, length: 1 << 20), as: UTF8.self)
        }
    }

    @Test(
        "compose: the sources in order, their component counts summed, deleted with deleteSourceObjects; a missing source or a composite past the limit changes nothing"
    )
    func compose() async throws {
        let served = try Served(maximumObjectBytes: 8)
        try await served.put("ab", "a")
        try await served.put("cd", "b")
        let sources = try ["a", "b", "a"].map { StorageService.ComposeSource(name: try ObjectName($0)) }
        let made = try await served.service.compose(
            sources, into: try ObjectName("ab"), in: served.bucket, options: WriteOptions(), conditions: Conditions(),
            key: nil, deletingSources: false)
        #expect(try served.text("ab") == "abcdab" && made.cloudStorage.componentCount == 3)
        await #expect(throws: StorageService.Refusal.self) {
            try await served.service.compose(
                sources + sources, into: try ObjectName("big"), in: served.bucket, options: WriteOptions(),
                conditions: Conditions(), key: nil,
                deletingSources: true)
        }
        await #expect(throws: StorageService.Refusal.self) {
            try await served.service.compose(
                [StorageService.ComposeSource(name: try ObjectName("none"))], into: try ObjectName("x"),
                in: served.bucket, options: WriteOptions(),
                conditions: Conditions(), key: nil, deletingSources: true)
        }
        // Nothing of the refused composes landed: the sources are all there.
        #expect(try served.text("a") == "ab")
        #expect(try served.text("b") == "cd")
        _ = try await served.service.compose(
            Array(sources.prefix(2)), into: try ObjectName("c"), in: served.bucket, options: WriteOptions(),
            conditions: Conditions(), key: nil,
            deletingSources: true)
        #expect(try served.text("c") == "abcd")
        #expect(throws: StorageError.self) {
            try served.service.metadata(of: try ObjectName("a"), generation: nil, in: served.bucket)
        }
    }

    @Test("copy within a bucket and to another, the source checked first and the destination's conditions kept")
    func copy() async throws {
        let served = try Served()
        let original = try await served.put("hello", "src")
        func copy(
            to destination: String, conditions: Conditions = Conditions(),
            check: @escaping @Sendable (ObjectMetadata) throws -> Void = { _ in }
        )
            -> StorageService.Copy
        {
            StorageService.Copy(
                source: try! ObjectName("src"), generation: original.generation,
                destination: try! ObjectName(destination), conditions: conditions,
                check: check,
                options: {
                    try StorageService.copiedOptions(
                        $0, overrides: MetadataUpdate(properties: [.cacheControl: .set("no-cache")]), storageClass: nil)
                })
        }
        let here = try await served.service.copy(copy(to: "dst"), from: served.bucket, to: served.bucket)
        #expect(here.cacheControl == "no-cache")
        #expect(try served.text("dst") == "hello")
        _ = try await served.service.copy(copy(to: "there"), from: served.bucket, to: served.other)
        #expect(try served.text("there", in: served.other) == "hello")
        // A refused source check writes nothing.
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await served.service.copy(
                copy(to: "never", check: { _ in throw Refused() }), from: served.bucket, to: served.other)
        }
        #expect(throws: StorageError.self) {
            try served.service.metadata(of: try ObjectName("never"), generation: nil, in: served.other)
        }
        // The destination's conditions: it must not exist.
        var mustNotExist = Conditions()
        mustNotExist.generationMatch = 0
        await #expect(throws: StorageError.self) {
            try await served.service.copy(
                copy(to: "dst", conditions: mustNotExist), from: served.bucket, to: served.bucket)
        }
    }

    @Test("move in one change, guarded by the source's conditions")
    func move() async throws {
        let served = try Served()
        let original = try await served.put("x", "from")
        var stale = Conditions()
        stale.generationMatch = original.generation + 1
        await #expect(throws: StorageError.self) {
            try await served.service.move(
                try ObjectName("from"), to: try ObjectName("to"), in: served.bucket, sourceConditions: stale,
                conditions: Conditions())
        }
        #expect(try served.text("from") == "x")
        _ = try await served.service.move(
            try ObjectName("from"), to: try ObjectName("to"), in: served.bucket, sourceConditions: Conditions(),
            conditions: Conditions())
        #expect(try served.text("to") == "x")
        #expect(throws: StorageError.self) {
            try served.service.metadata(of: try ObjectName("from"), generation: nil, in: served.bucket)
        }
    }
}
