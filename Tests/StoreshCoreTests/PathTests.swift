import StoreshTestSupport
import Testing

@testable import StoreshCore

@Suite("Paths (rules P1–P6)")
struct PathTests {
    @Test("rule P1: runs of / collapse, leading and trailing / drop, empty is the root")
    func p1Normalisation() {
        #expect(StoragePath(normalizing: "/foo//bar///baz//").fullPath == "foo/bar/baz")
        #expect(StoragePath(normalizing: "").isRoot)
        #expect(StoragePath(normalizing: "///").isRoot)
        #expect(StoragePath(normalizing: "a").fullPath == "a")
        #expect(StoragePath.root.child("//x//y/").fullPath == "x/y")
        #expect(StoragePath(normalizing: "a").child("b//c").fullPath == "a/b/c")
    }

    @Test("rule P1: a / followed by a combining mark is still a separator (bytes, not graphemes)")
    func p1SplitsBytesNotGraphemes() {
        let path = StoragePath(normalizing: "a/\u{301}b//")
        #expect(path.segments.map(String.init) == ["a", "\u{301}b"])
        #expect(path.name == "\u{301}b")
        #expect(path.parent.fullPath == "a")
    }

    @Test("rule P2: . and .. navigate; .. at the root stays at the root")
    func p2Navigation() throws {
        let images = StoragePath(normalizing: "images/mountains")
        func resolve(_ text: String, from current: StoragePath = images) throws -> String {
            try StoragePath.resolve(text, from: current, bucket: "teaching").fullPath
        }
        #expect(try resolve("..") == "images")
        #expect(try resolve("../..") == "")
        #expect(try resolve("../../../..") == "")
        #expect(try resolve(".") == "images/mountains")
        #expect(try resolve("./summit.jpg") == "images/mountains/summit.jpg")
        #expect(try resolve("a/../b") == "images/mountains/b")
        #expect(try resolve("/docs//readme.md") == "docs/readme.md")
        #expect(try resolve("/") == "")
        #expect(try resolve("..", from: .root) == "")
        #expect(try resolve("x/./y/") == "images/mountains/x/y")
    }

    @Test("rule P3: name, fullPath and gs:// form, at the root and below")
    func p3NameAndFullPath() {
        let root = StoragePath.root
        #expect(root.name == "" && root.fullPath == "")
        #expect(root.url(bucket: "teaching") == "gs://teaching/")
        let forest = StoragePath(normalizing: "images/forest.jpg")
        #expect(forest.name == "forest.jpg")
        #expect(forest.fullPath == "images/forest.jpg")
        #expect(forest.url(bucket: "teaching") == "gs://teaching/images/forest.jpg")
        #expect(StoragePath(normalizing: "top").name == "top")
    }

    @Test("rule P4: gs://BUCKET/ of the open bucket is accepted, another bucket is bucket-mismatch")
    func p4BucketURLs() throws {
        let here = StoragePath(normalizing: "docs")
        #expect(try StoragePath.resolve("gs://teaching/images", from: here, bucket: "teaching").fullPath == "images")
        #expect(try StoragePath.resolve("gs://teaching", from: here, bucket: "teaching").isRoot)
        #expect(try StoragePath.resolve("gs://teaching/", from: here, bucket: "teaching").isRoot)
        let error = storageError { _ = try StoragePath.resolve("gs://other/x", from: here, bucket: "teaching") }
        #expect(error?.code == .bucketMismatch)
        #expect(
            error?.message
                == "Provided bucket: `other` does not match the Storage bucket of the current instance: `teaching`")
    }

    @Test("rule P5: names are 1–1024 bytes of UTF-8 without CR or LF")
    func p5NameRules() throws {
        #expect(storageError { _ = try ObjectName("") }?.code == .invalidArgument)
        #expect(try ObjectName(String(repeating: "a", count: 1024)).rawValue.utf8.count == 1024)
        let tooLong = storageError { _ = try ObjectName(String(repeating: "a", count: 1025)) }
        #expect(tooLong?.code == .invalidArgument)
        #expect(tooLong?.message.contains("1025 bytes") == true)
        // Bytes, not characters: 512 two-byte characters fit, 513 do not.
        #expect(throws: Never.self) { try ObjectName(String(repeating: "é", count: 512)) }
        #expect(storageError { _ = try ObjectName(String(repeating: "é", count: 513)) }?.code == .invalidArgument)
        let lineFeed = storageError { _ = try ObjectName("a\nb") }
        #expect(lineFeed?.code == .invalidArgument)
        #expect(lineFeed?.message.contains("line feed") == true)
        #expect(storageError { _ = try ObjectName("a\rb") }?.code == .invalidArgument)
        #expect(storageError { _ = try StoragePath.root.objectName() }?.code == .invalidArgument)
    }

    @Test("rule P6: raw object names keep what the SDK could never produce")
    func p6RawNames() throws {
        #expect(try ObjectName("wrongPrefix//sadItem").rawValue == "wrongPrefix//sadItem")
        #expect(try ObjectName("lonelyItem/").rawValue == "lonelyItem/")
        #expect(try ObjectName("lonelyItem/").lastSegment == "")
        #expect(try ObjectName("/leading").rawValue == "/leading")
    }

    @Test("names compare as bytes: canonically equivalent spellings are different objects")
    func byteEquality() throws {
        let precomposed = try ObjectName("caf\u{E9}")
        let decomposed = try ObjectName("cafe\u{301}")
        #expect(precomposed != decomposed)
        #expect(Set([precomposed, decomposed]).count == 2)
        #expect(StoragePath(normalizing: "caf\u{E9}") != StoragePath(normalizing: "cafe\u{301}"))
        // 'e' (0x65) < 0xC3, the first byte of é: byte order, not Unicode collation.
        #expect(decomposed < precomposed)
    }
}
