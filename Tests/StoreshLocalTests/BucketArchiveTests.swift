import Foundation
import StoreshCore
import StoreshTestSupport
import Testing

@testable import StoreshLocal

@Suite("Bucket archives (export / import JSON)")
struct BucketArchiveTests {
    let directory = TemporaryDirectory()

    func archive(_ objectLines: [String]) -> Data {
        Data(
            ("{\"format\":\"storesh-bucket\",\"version\":1,\"bucket\":\"t\",\"objects\":["
                + objectLines.joined(separator: ",") + "]}").utf8)
    }

    @Test("export then import gives the same bucket, byte for byte, binary content included")
    func roundTrip() async throws {
        for folder in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: directory.file(folder), withIntermediateDirectories: true)
        }
        let bucket = try openBucket(directory.file("a/same.bucket"))
        _ = try await bucket.write(
            Data([0, 1, 2, 255, 254]), to: objectName("bin/blob"),
            options: WriteOptions(properties: [.contentType: "application/x-thing", .contentEncoding: "identity"]))
        _ = try await bucket.write(
            Data("héllo \"quoted\"\n\ttab\\".utf8), to: objectName("text/é.txt"),
            options: WriteOptions(
                properties: [.cacheControl: "no-cache", .contentDisposition: "inline", .contentLanguage: "fr"],
                customMetadata: ["b": "2", "a": "1 \"one\"", "ü": "x/y"]))
        _ = try await bucket.write(Data(), to: objectName("wrongPrefix//sadItem"), options: WriteOptions())
        var update = MetadataUpdate()
        try update.set("contentType", to: "text/x-custom")
        _ = try await bucket.updateMetadata(of: objectName("text/é.txt"), update, ifMetagenerationMatch: nil)

        var first = ""
        try BucketArchive.export(bucket) { first += $0 }
        let parsed = try BucketArchive.parse(Data(first.utf8), source: "first.json")
        #expect(parsed.bucket == "same")
        #expect(parsed.objects.count == 3)

        let copy = try openBucket(directory.file("b/same.bucket"), clockStart: Timestamp(microseconds: 0))
        try copy.importObjects(parsed.objects, replacingEverything: true)
        var second = ""
        try BucketArchive.export(copy) { second += $0 }
        #expect(second == first)
        #expect(
            try await copy.metadata(of: objectName("text/é.txt"))
                == (try await bucket.metadata(of: objectName("text/é.txt"))))
        #expect(try await copy.read(objectName("bin/blob")) == Data([0, 1, 2, 255, 254]))
        // One object per line, text kept readable.
        #expect(first.split(separator: "\n").count == 5)
        #expect(first.contains("\"text\":\"héllo \\\"quoted\\\"\\n\\ttab\\\\\""))
        #expect(first.contains("\"base64\":\"AAEC//4=\""))
    }

    @Test(
        "version 2: the bucket's settings, Cloud Storage's own fields and the generations that are not live come back from an export, exactly (rules B5, B6, M9)"
    )
    func settingsFieldsAndGenerations() async throws {
        for folder in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: directory.file(folder), withIntermediateDirectories: true)
        }
        let bucket = try openBucket(directory.file("a/kept.bucket"))
        var settings = BucketSettings(madeAt: t0)
        settings.versioning = true
        settings.softDeleteSeconds = 7 * 86_400
        settings.softDeleteEffectiveTime = t0
        settings.objectRetentionEnabled = true
        settings.labels = ["team": "blue"]
        try bucket.storeSettings(settings)
        for text in ["one", "two", "three"] {
            _ = try await bucket.write(Data(text.utf8), to: objectName("a.txt"), options: WriteOptions())
        }
        var options = WriteOptions()
        options.cloudStorage.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        options.cloudStorage.contexts = ["k": ObjectContext(value: "v", createTime: t0, updateTime: t0)]
        options.cloudStorage.storageClass = "NEARLINE"
        _ = try await bucket.write(Data("held".utf8), to: objectName("held.txt"), options: options)
        var hold = MetadataUpdate()
        hold.cloudStorage.temporaryHold = true
        hold.cloudStorage.retention = ObjectRetention(
            mode: .locked, retainUntilTime: Timestamp(rfc3339: "2040-01-01T00:00:00Z")!)
        _ = try await bucket.updateMetadata(of: objectName("held.txt"), hold, precondition: .none)
        // Versioning off: a delete keeps the object soft-deleted.
        settings.versioning = false
        try bucket.storeSettings(settings)
        _ = try await bucket.write(Data("gone".utf8), to: objectName("gone.txt"), options: WriteOptions())
        try await bucket.delete(objectName("gone.txt"))
        // A locked retention policy last (it would have refused the delete).
        settings.retentionPeriod = 60
        settings.retentionEffectiveTime = t0
        settings.retentionLocked = true
        try bucket.storeSettings(settings)

        var first = ""
        let exported = try BucketArchive.export(bucket) { first += $0 }
        #expect(
            exported
                == {
                    var counts = BucketArchive.Exported()
                    (counts.objects, counts.noncurrent, counts.softDeleted) = (2, 2, 1)
                    return counts
                }())
        #expect(exported.described == "2 objects, 2 noncurrent generations and 1 soft-deleted generation")
        let parsed = try BucketArchive.parse(Data(first.utf8), source: "first.json")
        #expect(parsed.objects.map(\.kind) == [.live, .live, .noncurrent, .noncurrent, .softDeleted])
        #expect(first.contains("\"temporaryHold\":true") && first.contains("\"retention\":{\"mode\":\"Locked\""))
        #expect(first.contains("\"storageClass\":\"NEARLINE\"") && first.contains("\"timeDeleted\":"))
        #expect(first.hasPrefix("{\"format\":\"storesh-bucket\",\"version\":2,\"bucket\":\"kept\",\"settings\":{"))

        // Into a new bucket file (the settings first: its objects need object retention).
        let copy = try openBucket(directory.file("b/kept.bucket"), clockStart: Timestamp(microseconds: 0))
        try copy.importObjects(
            parsed.objects, replacingEverything: true,
            settings: { current, now throws(StorageError) in
                try parsed.settings(over: current, now: now)
            })
        var second = ""
        try BucketArchive.export(copy) { second += $0 }
        #expect(second == first)
        let copied = try #require(try copy.storedSettings())
        #expect(
            copied.retentionLocked == true && copied.retentionPeriod == 60 && copied.softDeleteSeconds == 7 * 86_400
                && copied.labels == ["team": "blue"])
        #expect(try copy.verify().isSound)
        // Held and retained as they were: the copy refuses to delete it.
        await #expect(throws: StorageError.self) { try await copy.delete(objectName("held.txt")) }
        #expect(try copy.noncurrentCount() == 2)
        #expect(
            try copy.softDeletedGenerationMetadata(
                of: objectName("gone.txt"), generation: parsed.objects[4].generation!
            ).size == 4)

        // Without the settings, an object's own retention has no bucket to take it: nothing is imported.
        let bare = try openBucket(directory.file("b/bare.bucket"))
        #expect(throws: StorageError.self) { try bare.importObjects(parsed.objects, replacingEverything: false) }
        #expect(try bare.objectCount() == 0 && bare.noncurrentCount() == 0)
    }

    @Test("a version 2 archive's malformed fields and generations are named, and nothing is written")
    func malformedVersion2() throws {
        let cases: [(String, String)] = [
            (#"{"name":"a","temporaryHold":"yes"}"#, "temporaryHold"),
            (#"{"name":"a","customTime":"soon"}"#, "\"customTime\" must be an RFC 3339 time"),
            (
                #"{"name":"a","retention":{"mode":"Forever","retainUntilTime":"2030-01-01T00:00:00Z"}}"#,
                "\"retention\" must have a \"mode\""
            ),
            (#"{"name":"a","timeDeleted":"2026-01-01T00:00:00Z"}"#, "a noncurrent generation needs its \"generation\""),
            (
                #"{"name":"a","generation":"5","softDeleteTime":"2026-01-01T00:00:00Z"}"#,
                "both \"softDeleteTime\" and \"hardDeleteTime\""
            ),
            (
                #"{"name":"a","generation":"5","timeDeleted":"2026-01-01T00:00:00Z","softDeleteTime":"2026-01-01T00:00:00Z","hardDeleteTime":"2026-01-08T00:00:00Z"}"#,
                "noncurrent (\"timeDeleted\") or soft-deleted"
            ),
            (
                #"{"name":"a","generation":"5","timeDeleted":"2026-01-01T00:00:00Z"},{"name":"a","generation":"5","timeDeleted":"2026-01-02T00:00:00Z"}"#,
                "the noncurrent generation 5 of \"a\" appears twice"
            ),
        ]
        for (line, expected) in cases {
            #expect {
                _ = try BucketArchive.parse(archive([line]), source: "x.json")
            } throws: { error in
                (error as? StorageError)?.message.contains(expected) == true
                    && (error as? StorageError)?.message.contains("x.json: object #") == true
            }
        }
        let badSettings = Data(
            #"{"format":"storesh-bucket","version":2,"settings":{"versioning":{"enabled":"yes"}},"objects":[]}"#.utf8)
        #expect {
            _ = try BucketArchive.parse(badSettings, source: "s.json")
        } throws: { error in
            (error as? StorageError)?.message.hasPrefix("s.json: \"settings\": ") == true
                && (error as? StorageError)?.message.contains("versioning.enabled") == true
        }
        let newer = Data(#"{"format":"storesh-bucket","version":3,"objects":[]}"#.utf8)
        #expect(throws: StorageError.self) { _ = try BucketArchive.parse(newer, source: "n.json") }
    }

    @Test("the teaching sample parses and holds what the lessons need")
    func teachingSample() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../samples/teaching.json")
        let contents = try BucketArchive.parse(try Data(contentsOf: url), source: "teaching.json")
        #expect(contents.bucket == "teaching")
        let names = Set(contents.objects.map(\.name.rawValue))
        #expect(
            names.isSuperset(of: [
                "correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/", "images/forest.jpg",
            ]))
        let forest = try #require(contents.objects.first { $0.name.rawValue == "images/forest.jpg" })
        #expect(forest.customMetadata == ["location": "Yosemite, CA, USA", "activity": "Hiking"])
        #expect(contents.objects.filter { $0.name.rawValue.hasPrefix("files/uid/") }.count >= 200)
        #expect(Set(contents.objects.compactMap { $0.properties[.contentType] }).count >= 5)
        #expect(Set(contents.objects.compactMap { $0.properties[.cacheControl] }).count >= 3)
    }

    @Test(
        "bad archives are refused with the object and field named",
        arguments: [
            ("not json", "not valid JSON at line 1, column 2"),
            ("{\"format\":\"storesh-bucket\",\n\"version\":1,,\"objects\":[]}", "not valid JSON at line 2, column 13"),
            ("{\"format\":\"storesh-bucket\",\"objects\":[", "not valid JSON: it ends too early"),
            ("", "not valid JSON: it ends too early"),
            ("[1]", "expected a JSON object"),
            ("{\"format\":\"zip\",\"version\":1,\"objects\":[]}", "\"format\" must be \"storesh-bucket\""),
            ("{\"format\":\"storesh-bucket\",\"version\":9,\"objects\":[]}", "\"version\""),
            ("{\"format\":\"storesh-bucket\",\"version\":1,\"objects\":{}}", "\"objects\" must be a list"),
            ("{\"format\":\"storesh-bucket\",\"version\":1,\"objects\":[],\"extra\":1}", "unknown field \"extra\""),
            (
                "{\"format\":\"storesh-bucket\",\"version\":1,\"objcts\":[]}",
                "unknown field \"objcts\" at the top level; did you mean \"objects\"?"
            ),
        ])
    func badDocuments(text: String, expected: String) {
        let error = storageError { _ = try BucketArchive.parse(Data(text.utf8), source: "x.json") }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.hasPrefix("x.json: ") == true)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "no error")")
    }

    @Test(
        "bad objects are refused with their position and name",
        arguments: [
            (
                "{\"name\":\"a\",\"contentTyp\":\"x\"}",
                "object #2 (a): unknown field \"contentTyp\"; did you mean \"contentType\"?"
            ),
            ("{\"name\":\"a\",\"text\":\"x\",\"base64\":\"eA==\"}", "not both"),
            ("{\"name\":\"a\",\"base64\":\"***\"}", "not valid base64"),
            ("{\"name\":\"a\",\"text\":\"x\",\"size\":2}", "\"size\" is 2 but the content has 1 bytes"),
            (
                "{\"name\":\"a\",\"text\":\"hello\",\"md5Hash\":\"1B2M2Y8AsgTpgAmY7PhCfg==\"}",
                "content's MD5 is XUFAKrxLKna5cZ2REBfFkg=="
            ),
            (
                "{\"name\":\"a\\nb\"}",
                "object #2 (\"a\\nb\"): Object names must not contain a carriage return or line feed"
            ),
            ("{\"name\":\"\"}", "must not be empty"),
            ("{\"text\":\"x\"}", "object #2: \"name\" is missing"),
            ("{\"name\":\"a\",\"customMetadata\":{\"k\":1}}", "object #2, \"customMetadata\", \"k\": must be a string"),
            ("{\"name\":\"a\",\"timeCreated\":\"yesterday\"}", "RFC 3339"),
            ("{\"name\":\"a\",\"metageneration\":0}", "starts at 1"),
            ("{\"name\":\"first\"}", "\"first\" appears twice"),
        ])
    func badObjects(line: String, expected: String) {
        let data = archive(["{\"name\":\"first\"}", line])
        let error = storageError { _ = try BucketArchive.parse(data, source: "x.json") }
        #expect(error != nil)
        #expect(error?.message.contains(expected) == true, "\(error?.message ?? "no error")")
    }

    @Test("content is text when it reads as text, else base64")
    func textOrBase64() {
        #expect(BucketArchive.readableText(Data("a\tb\r\n".utf8)) == "a\tb\r\n")
        #expect(BucketArchive.readableText(Data("é".utf8)) == "é")
        #expect(BucketArchive.readableText(Data([0x00])) == nil)
        #expect(BucketArchive.readableText(Data([0xFF, 0xFE])) == nil)
        #expect(BucketArchive.readableText(Data([0x1B, 0x5B])) == nil)
    }
}
