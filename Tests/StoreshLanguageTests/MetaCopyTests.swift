import Foundation
import StoreshCore
import Testing

@testable import StoreshLanguage

@Suite("meta copy: one object's metadata onto others")
struct MetaCopyTests {
    /// A bucket where `images/forest.jpg` has the metadata to copy and the others have their own.
    func seeded() async throws -> LanguageSandbox {
        let session = try LanguageSandbox(["images/forest.jpg", "images/lake.jpg", "images/sea.jpg", "docs/a.txt"])
        let (status, output) = try await session.run(
            """
            meta set contentType=image/jpeg cacheControl=no-cache custom.camera=X100 custom.rating=5 -- images/forest.jpg
            meta set cacheControl=private contentLanguage=fr custom.stale=yes custom.rating=1 \
              custom.firebaseStorageDownloadTokens=lake-token -- images/lake.jpg
            """)
        #expect(status == .success, "\(output.errors)")
        return session
    }

    func metadata(_ session: LanguageSandbox, _ name: String) async throws -> ObjectMetadata {
        try await session.bucket.metadata(of: try ObjectName(name))
    }

    @Test(
        "DEST's properties and custom metadata become SRC's; its content and download tokens stay; a re-run changes nothing"
    )
    func copies() async throws {
        let session = try await seeded()
        let source = try await metadata(session, "images/forest.jpg")
        let before = try await metadata(session, "images/lake.jpg")
        let (status, output) = try await session.run("meta copy images/forest.jpg images/lake.jpg")
        #expect(status == .success, "\(output.errors)")
        let after = try await metadata(session, "images/lake.jpg")
        for property in WritableProperty.allCases { #expect(after[property] == source[property], "\(property)") }
        #expect(
            after.customMetadata == ["camera": "X100", "rating": "5", ObjectMetadata.downloadTokensKey: "lake-token"])
        #expect(
            after.generation == before.generation && after.md5Hash == before.md5Hash
                && after.metageneration == before.metageneration + 1)
        #expect(try await metadata(session, "images/forest.jpg") == source)
        #expect(output.lines[0].contains(#""custom.stale":{"old":"yes","new":null}"#))
        #expect(output.lines[0].contains(#""contentLanguage":{"old":"fr","new":null}"#))
        let (_, again) = try await session.run("meta copy images/forest.jpg images/lake.jpg")
        #expect(again.lines == [#"{"updated":[],"unchanged":["images/lake.jpg"]}"#])
    }

    @Test("a pattern DEST with --where, as a dry run: the plan, old → new, and nothing saved")
    func dryRunOverPattern() async throws {
        let session = try await seeded()
        let before = try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects
        let (status, output) = try await session.run(
            "meta copy images/forest.jpg --where 'custom.rating exists' -- images/*.jpg", json: false, dryRun: true)
        #expect(status == .success, "\(output.errors)")
        // forest.jpg is its own SRC (unchanged); sea.jpg has no rating (filtered out); lake.jpg is planned.
        #expect(output.lines.first == "# line 1: meta copy")
        #expect(output.lines.contains("images/lake.jpg"))
        #expect(
            output.lines.contains { $0.contains("custom.stale") && $0.contains("\"yes\"") && $0.contains("(not set)") })
        #expect(!output.lines.contains("images/sea.jpg"))
        #expect(output.lines.contains("would update 1 object, 1 unchanged"))
        #expect(try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects == before)
    }

    @Test("a missing SRC or DEST is object-not-found at its word; nothing changes")
    func missing() async throws {
        let session = try await seeded()
        let before = try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects
        let (status, output) = try await session.run("meta copy images/nope.jpg images/lake.jpg")
        #expect(status == .failed)
        #expect(output.errors.first?.code == "object-not-found")
        #expect(output.errors.first?.location == SourceLocation(line: 1, column: 11))
        let (destStatus, destOutput) = try await session.run(
            "meta copy images/forest.jpg images/lake.jpg images/nope.jpg")
        #expect(destStatus == .failed && destOutput.errors.first?.location == SourceLocation(line: 1, column: 45))
        // SRC is one object; a pattern there is said so, at its word (DEST may be one).
        let (patternStatus, patternOutput) = try await session.run("meta copy images/*.jpg images/lake.jpg")
        #expect(patternStatus == .failed && patternOutput.errors.first?.location == SourceLocation(line: 1, column: 11))
        #expect(patternOutput.errors.first?.message.contains("copies from one object") == true)
        #expect(try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects == before)
    }

    @Test("syntax: SRC and at least one DEST; options before the targets")
    func syntax() throws {
        for (text, column, message) in [
            ("meta copy", 11, "`meta copy` needs SRC"),
            ("meta copy a.jpg", 17, "needs a DEST after SRC"),
            ("meta copy a.jpg b.jpg --raw", 23, "no option '--raw'"),
            ("meta copy --where 'x exists' a b", 19, "x"),
        ] {
            #expect(throws: Diagnostic.self) { try Parser.parse(SourceText(name: "t", text: text)) }
            do {
                _ = try Parser.parse(SourceText(name: "t", text: text))
            } catch {
                #expect(error.location.column == column, "\(text)")
                #expect(error.message.contains(message), "\(text): \(error.message)")
            }
        }
        let parsed = try Parser.parse(SourceText(name: "t", text: "meta copy --where contentType=image/* a.jpg -- b/*"))
            .allStatements[0].command
        let copy = try #require(parsed as? MetaCopyCommand)
        #expect(
            copy.source.text == "a.jpg" && copy.targets.map(\.text) == ["b/*"]
                && copy.filters.map(\.key) == ["contentType"])
    }

    @Test("explain: SRC's read, then DEST's update with its precondition, naming what changes")
    func explained() async throws {
        let session = try await seeded()
        let (status, output) = try await session.run("explain meta copy images/forest.jpg images/*.jpg", json: false)
        #expect(status == .success, "\(output.errors)")
        let text = output.lines.joined(separator: "\n")
        #expect(text.contains("getMetadata()"))
        #expect(text.contains("GET https://firebasestorage.googleapis.com/v0/b/teaching/o/images%2Fforest.jpg"))
        #expect(text.contains("make it images/forest.jpg's"))
        #expect(text.contains("ifMetagenerationMatch"))
        #expect(text.contains("\"stale\":null"))
        // Nothing changed.
        #expect(try await metadata(session, "images/lake.jpg").customMetadata["stale"] == "yes")
    }
}
