import Foundation
import Testing
import StoreshTestSupport
import StoreshCore
@testable import StoreshLocal

@Suite("Bucket archives (export / import JSON)")
struct BucketArchiveTests {
    let directory = TemporaryDirectory()

    func archive(_ objectLines: [String]) -> Data {
        Data(("{\"format\":\"storesh-bucket\",\"version\":1,\"bucket\":\"t\",\"objects\":[" + objectLines.joined(separator: ",") + "]}").utf8)
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
        #expect(try await copy.metadata(of: objectName("text/é.txt")) == (try await bucket.metadata(of: objectName("text/é.txt"))))
        #expect(try await copy.read(objectName("bin/blob")) == Data([0, 1, 2, 255, 254]))
        // One object per line, text kept readable.
        #expect(first.split(separator: "\n").count == 5)
        #expect(first.contains("\"text\":\"héllo \\\"quoted\\\"\\n\\ttab\\\\\""))
        #expect(first.contains("\"base64\":\"AAEC//4=\""))
    }

    @Test("the teaching sample parses and holds what the lessons need")
    func teachingSample() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../samples/teaching.json")
        let contents = try BucketArchive.parse(try Data(contentsOf: url), source: "teaching.json")
        #expect(contents.bucket == "teaching")
        let names = Set(contents.objects.map(\.name.rawValue))
        #expect(names.isSuperset(of: ["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/", "images/forest.jpg"]))
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
            ("{\"format\":\"storesh-bucket\",\"version\":1,\"objcts\":[]}", "unknown field \"objcts\" at the top level; did you mean \"objects\"?"),
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
            ("{\"name\":\"a\",\"contentTyp\":\"x\"}", "object #2 (a): unknown field \"contentTyp\"; did you mean \"contentType\"?"),
            ("{\"name\":\"a\",\"text\":\"x\",\"base64\":\"eA==\"}", "not both"),
            ("{\"name\":\"a\",\"base64\":\"***\"}", "not valid base64"),
            ("{\"name\":\"a\",\"text\":\"x\",\"size\":2}", "\"size\" is 2 but the content has 1 bytes"),
            ("{\"name\":\"a\",\"text\":\"hello\",\"md5Hash\":\"1B2M2Y8AsgTpgAmY7PhCfg==\"}", "content's MD5 is XUFAKrxLKna5cZ2REBfFkg=="),
            ("{\"name\":\"a\\nb\"}", "object #2 (\"a\\nb\"): Object names must not contain a carriage return or line feed"),
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
