import Foundation
import StoreshCore
import StoreshLocal
import StoreshTestSupport
import Testing

@testable import StoreshLanguage

/// Results and errors as the interpreter gives them.
final class CapturedOutput: SessionOutput {
    var lines: [String] = []
    var bytes = Data()
    var errors: [Diagnostic] = []

    func result(_ line: String) { lines.append(line) }
    func resultBytes(_ bytes: Data) { self.bytes += bytes }
    func error(_ diagnostic: Diagnostic) { errors.append(diagnostic) }
    var notices: [String] = []
    func notice(_ text: String) { notices.append(text) }
}

/// Local files in memory.
final class MemoryFiles: LocalFiles, @unchecked Sendable {
    var files: [String: Data] = [:]

    func read(_ path: String) throws(StorageError) -> Data {
        guard let data = files[path] else {
            throw StorageError(.invalidArgument, "Cannot read \(path): there is no such file.")
        }
        return data
    }

    func readDocument(_ path: String) throws(StorageError) -> Data { try read(path) }

    func write(_ data: Data, to path: String) throws(StorageError) { files[path] = data }
    func isDirectory(_ path: String) -> Bool { path == "downloads" }
}

/// A bucket in a temporary file and an interpreter on it.
final class LanguageSandbox {
    let directory = NSTemporaryDirectory() + "storesh-lang-" + UUID().uuidString
    let bucket: LocalBucket
    let files = MemoryFiles()

    init(_ names: [String] = []) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        bucket = try LocalBucket.open(
            at: directory + "/teaching.bucket",
            options: LocalBucketOptions(clock: SteppingClock(start: Timestamp(rfc3339: "2026-11-21T09:30:00Z")!)))
        try bucket.importObjects(
            names.map { ArchivedObject(name: try ObjectName($0), content: Data($0.utf8)) }, replacingEverything: false)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs a script; results are JSON documents unless `json` is false.
    func run(
        _ text: String, json: Bool = true, dryRun: Bool = false, keepGoing: Bool = false
    ) async throws
        -> (status: Session.Status, output: CapturedOutput)
    {
        let output = CapturedOutput()
        let script = try Parser.parse(SourceText(name: "t", text: text))
        let interpreter = Session(
            bucket: bucket, output: output, files: files,
            options: RunOptions(json: json, dryRun: dryRun, keepGoing: keepGoing))
        return (await interpreter.run(script), output)
    }

    func names() async throws -> [String] {
        try await bucket.scan(prefix: "", after: nil, limit: 10_000).objects.map(\.fullPath)
    }
}

func listing(_ prefixes: [String], _ items: [String], _ token: Bool = false) -> String {
    let quoted = { (names: [String]) in names.map { JSONValue.quoted($0) }.joined(separator: ",") }
    return "{\"prefixes\":[\(quoted(prefixes))],\"items\":[\(quoted(items))],\"nextPageToken\":\(token ? "T" : "null")}"
}

/// A listing line with its token replaced by T, to compare shapes.
func shape(_ line: String) -> String {
    line.replacing(#/"nextPageToken":"[^"]*"/#, with: "\"nextPageToken\":T")
}

@Suite("The spec in the language")
struct SpecInLanguageTests {
    @Test("rule L3: the seed example, reference by reference")
    func seed() async throws {
        let session = try LanguageSandbox(["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"])
        let (status, output) = try await session.run("ls\nls correctPrefix\nls wrongPrefix\nls lonelyItem")
        #expect(status == .success)
        #expect(
            output.lines == [
                listing(["correctPrefix", "lonelyItem", "wrongPrefix"], []), listing([], ["correctPrefix/happyItem"]),
                listing([], []), listing([], []),
            ])
    }

    @Test("rule L7 with page next, and rule L9: no token on the last page")
    func paging() async throws {
        let session = try LanguageSandbox(["a/1", "b/1", "c", "d", "e/1"])
        let (status, output) = try await session.run("ls -n 2\npage next\npage next")
        #expect(status == .success)
        #expect(
            output.lines.map(shape) == [
                listing(["a", "b"], [], true), listing([], ["c", "d"], true), listing(["e"], []),
            ])
        let (after, end) = try await session.run("ls -n 2; page next; page next; page next")
        #expect(after == .failed)
        #expect(end.errors.first?.message.contains("has no more pages") == true)
        #expect(end.errors.first?.location == SourceLocation(line: 1, column: 32))
    }

    @Test("rule L6: -n out of range is invalid-argument with the exact text, at the number")
    func maxResults() async throws {
        let session = try LanguageSandbox(["a"])
        for text in ["ls -n 0", "ls -n 1001"] {
            let (status, output) = try await session.run(text)
            #expect(status == .failed)
            #expect(
                output.errors == [
                    Diagnostic(
                        phase: .running, code: "invalid-argument",
                        "Argument 'maxResults' must be between 1 and 1000 inclusive.",
                        at: SourceLocation(line: 1, column: 7))
                ])
        }
    }

    @Test("rule L10: a token resumes after its entry; a foreign or forged token is refused")
    func tokens() async throws {
        let session = try LanguageSandbox(["a", "b", "c", "x/1", "x/2"])
        let (_, first) = try await session.run("ls -n 2")
        let token = try #require(first.lines.first?.firstMatch(of: #/"nextPageToken":"([^"]*)"/#)?.1)
        let (_, resumed) = try await session.run("ls --token \(token)")
        #expect(resumed.lines == [listing(["x"], ["c"])])
        let (status, foreign) = try await session.run("ls --token \(token) x")
        #expect(status == .failed)
        #expect(foreign.errors.first?.code == "invalid-argument")
        #expect(foreign.errors.first?.location.column == 12)
        let (_, forged) = try await session.run("ls --token AAAA")
        #expect(forged.errors.first?.message.hasPrefix("Invalid page token") == true)
    }

    @Test("rules P1–P4: cd and pwd navigate and normalise")
    func navigation() async throws {
        let session = try LanguageSandbox()
        let (_, output) = try await session.run(
            "cd //images///mountains/; pwd; cd ..; pwd; cd ../../..; pwd; cd gs://teaching/docs; pwd; cd; pwd")
        #expect(
            output.lines == [
                "{\"path\":\"gs://teaching/images/mountains\"}", "{\"path\":\"gs://teaching/images\"}",
                "{\"path\":\"gs://teaching/\"}", "{\"path\":\"gs://teaching/docs\"}", "{\"path\":\"gs://teaching/\"}",
            ])
        let (status, mismatch) = try await session.run("cd gs://other/x")
        #expect(status == .failed)
        #expect(mismatch.errors.first?.code == "bucket-mismatch")
        #expect(
            mismatch.errors.first?.message
                == "Provided bucket: `other` does not match the Storage bucket of the current instance: `teaching`")
    }

    @Test("rules M3 and P6: put guesses the type, computes MD5, and --raw keeps odd names")
    func put() async throws {
        let session = try LanguageSandbox()
        let (status, output) = try await session.run(
            "put --data hello notes/hello.txt\nput --raw --data sad wrongPrefix//sadItem\nput --md5 XUFAKrxLKna5cZ2REBfFkg== --data hello checked\nls"
        )
        #expect(status == .success, "\(output.errors)")
        #expect(output.lines[0].contains("\"md5Hash\":\"XUFAKrxLKna5cZ2REBfFkg==\""))
        #expect(output.lines[0].contains("\"contentType\":\"text/plain\""))
        #expect(output.lines[0].contains("\"metageneration\":\"1\""))
        #expect(try await session.names() == ["checked", "notes/hello.txt", "wrongPrefix//sadItem"])
        #expect(output.lines[3] == listing(["notes", "wrongPrefix"], ["checked"]))
        let (bad, mismatch) = try await session.run("put --md5 1B2M2Y8AsgTpgAmY7PhCfg== --data hello x")
        #expect(bad == .failed && mismatch.errors.first?.code == "non-matching-checksum")
    }

    @Test("rules M4–M6: partial updates, custom merges, metageneration, unchanged re-runs")
    func updates() async throws {
        let session = try LanguageSandbox(["images/forest.jpg"])
        let script =
            #"meta set cacheControl="public, max-age=60" custom.location="Yosemite, CA, USA" custom.activity=Hiking -- images/forest.jpg"#
        let (status, output) = try await session.run(
            script + "\nmeta unset custom.activity -- images/forest.jpg\nmeta get images/forest.jpg")
        #expect(status == .success)
        #expect(
            output.lines[0]
                == #"{"updated":[{"path":"images/forest.jpg","changes":{"cacheControl":{"old":null,"new":"public, max-age=60"},"custom.activity":{"old":null,"new":"Hiking"},"custom.location":{"old":null,"new":"Yosemite, CA, USA"}}}],"unchanged":[]}"#
        )
        #expect(output.lines[2].contains(#""metageneration":"3""#))
        #expect(output.lines[2].contains(#""customMetadata":{"location":"Yosemite, CA, USA"}"#))
        let (_, again) = try await session.run("meta unset custom.activity -- images/forest.jpg")
        #expect(again.lines == [#"{"updated":[],"unchanged":["images/forest.jpg"]}"#])
        let (_, cleared) = try await session.run("cd images/forest.jpg; meta unset custom; meta get")
        #expect(!cleared.lines[1].contains("customMetadata"))
    }

    @Test("rule M8: a missing object, and the root, in meta get")
    func missing() async throws {
        let session = try LanguageSandbox()
        let (_, output) = try await session.run("meta get nowhere/x")
        #expect(output.errors.first?.message == "Object nowhere/x does not exist.")
        #expect(output.errors.first?.code == "object-not-found")
        let (_, root) = try await session.run("meta get")
        #expect(root.errors.first?.code == "invalid-argument")
    }
}

@Suite("Scripts: transactions, dry runs, patterns")
struct ScriptTests {
    @Test("a failing command rolls back the whole script")
    func rollback() async throws {
        let session = try LanguageSandbox(["keep"])
        let (status, output) = try await session.run("put --data x new1\nrm keep\nmeta get missing\nput --data y new2")
        #expect(status == .failed)
        #expect(output.errors.map(\.location.line) == [3])
        #expect(try await session.names() == ["keep"])
    }

    @Test("--keep-going keeps what succeeded, undoes a failed bulk command whole, and fails at the end")
    func keepGoing() async throws {
        let session = try LanguageSandbox(["a/1", "a/2", "b"])
        // The second command fails on its second target after changing the first: nothing of it may stay.
        let (status, output) = try await session.run(
            "put --data x new\nmeta set contentType=text/x -- a/1 missing\nrm b", keepGoing: true)
        #expect(status == .failed)
        #expect(output.errors.map(\.location) == [SourceLocation(line: 2, column: 36)])
        #expect(try await session.names() == ["a/1", "a/2", "new"])
        #expect(try await session.bucket.metadata(of: ObjectName("a/1")).contentType == "application/octet-stream")
    }

    @Test("a dry run prints the plan, old → new, and saves nothing")
    func dryRun() async throws {
        let session = try LanguageSandbox(["images/a.jpg", "images/b.jpg", "docs/x"])
        let before = try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects
        let (status, output) = try await session.run(
            "meta set cacheControl=no-cache -- images/*.jpg\nrm docs/x\nput --data new fresh", json: false, dryRun: true
        )
        #expect(status == .success)
        #expect(
            output.lines == [
                "# line 1: meta set", "images/a.jpg", "  cacheControl  (not set)  →  \"no-cache\"", "images/b.jpg",
                "  cacheControl  (not set)  →  \"no-cache\"", "would update 2 objects, 0 unchanged", "# line 2: rm",
                "would delete docs/x", "# line 3: put", "would write fresh (3 B, application/octet-stream)",
                "dry run: nothing was saved",
            ])
        #expect(try await session.bucket.scan(prefix: "", after: nil, limit: 100).objects == before)
    }

    @Test("patterns expand in name order; one that matches nothing is object-not-found naming it")
    func patterns() async throws {
        let session = try LanguageSandbox(["p/b.jpg", "p/a.jpg", "p/c.png", "p/sub/d.jpg"])
        let (_, output) = try await session.run("rm p/*.jpg")
        #expect(output.lines == [#"{"deleted":["p/a.jpg","p/b.jpg"]}"#])
        let (status, none) = try await session.run("cd p; meta set contentType=x -- *.gif")
        #expect(status == .failed)
        #expect(none.errors.first?.message == "No object matches the pattern p/*.gif.")
        #expect(none.errors.first?.code == "object-not-found")
    }

    @Test("human output: prefixes end in /, summaries count objects")
    func humanOutput() async throws {
        let session = try LanguageSandbox(["images/forest.jpg", "images/mountains/summit.jpg", "images/lake.png"])
        let (_, listed) = try await session.run("cd images; ls; meta set contentLanguage=en -- **", json: false)
        // Each change, old → new, as a plan shows it.
        #expect(
            listed.lines == [
                "mountains/", "forest.jpg", "lake.png",
                "images/forest.jpg", #"  contentLanguage  (not set)  →  "en""#,
                "images/lake.png", #"  contentLanguage  (not set)  →  "en""#,
                "images/mountains/summit.jpg", #"  contentLanguage  (not set)  →  "en""#,
                "updated 3 objects, 0 unchanged",
            ])
        let (_, long) = try await session.run("ls -l images", json: false)
        #expect(
            long.lines == [
                "   -  -                  -           mountains/", "17 B  2026-11-21 09:30Z  image/jpeg  forest.jpg",
                "15 B  2026-11-21 09:30Z  image/png   lake.png",
            ])
    }

    /// Forty objects whose cacheControl cycles through five values, two of them the same word precomposed and
    /// decomposed: more values than the summary keeps runs of, so runs are counted as they fall out.
    @Test(
        "a bulk edit's summary counts each change by its bytes, in the order first met, and each object's own old bytes"
    )
    func summaryByBytes() async throws {
        let values = ["a", "caf\u{E9}", "cafe\u{301}", "b", "c"]
        let names = (0..<40).map { "o\($0 < 10 ? "0" : "")\($0)" }
        func session() async throws -> LanguageSandbox {
            let session = try LanguageSandbox(names)
            for (index, name) in names.enumerated() {
                _ = try await session.bucket.updateMetadata(
                    of: ObjectName(name),
                    MetadataUpdate(properties: [.cacheControl: .set(values[index % values.count])]), precondition: .none
                )
            }
            return session
        }
        let edit = try Parser.parse(SourceText(name: "t", text: "meta set cacheControl=no-cache -- *"))

        let summarized = try await session()
        var options = RunOptions()
        options.summaryOnly = true
        let summary = CapturedOutput()
        #expect(
            await Session(bucket: summarized.bucket, output: summary, files: summarized.files, options: options).run(
                edit) == .success)
        let expected =
            ["summary, by change:"] + values.map { #"  cacheControl: "\#($0)" → "no-cache": 8 objects"# } + [
                "updated 40 objects, 0 unchanged"
            ]
        // Compared as bytes: `==` on the lines would take the two spellings of "café" for one another.
        #expect(summary.lines.map { Array($0.utf8) } == expected.map { Array($0.utf8) })

        let reported = try await session()
        let documents = CapturedOutput()
        #expect(
            await Session(
                bucket: reported.bucket, output: documents, files: reported.files, options: RunOptions(json: true)
            ).run(edit) == .success)
        let olds = try documents.lines.flatMap { line -> [String] in
            let document = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            return (document["updated"] as! [[String: Any]]).map {
                (($0["changes"] as! [String: Any])["cacheControl"] as! [String: Any])["old"] as! String
            }
        }
        #expect(olds.map { Array($0.utf8) } == names.indices.map { Array(values[$0 % values.count].utf8) })
    }

    @Test("get and cat read content; exit stops a script and keeps its changes")
    func contentAndExit() async throws {
        let session = try LanguageSandbox(["docs/readme.md"])
        let (status, output) = try await session.run(
            "cat docs/readme.md\nget docs/readme.md\nput --data x kept\nexit\nrm kept", json: false)
        #expect(status == .success)
        #expect(output.bytes == Data("docs/readme.md".utf8))
        #expect(session.files.files["readme.md"] == Data("docs/readme.md".utf8))
        #expect(try await session.names().contains("kept"))
    }

    @Test("Ctrl-C stops the run, rolls it back and reports it")
    func interruption() async throws {
        let session = try LanguageSandbox(["a"])
        let output = CapturedOutput()
        let interpreter = Session(bucket: session.bucket, output: output, files: session.files, options: RunOptions())
        let calls = Counter()
        interpreter.isCancelled = { calls.increment() > 2 }
        let script = try Parser.parse(
            SourceText(name: "t", text: "put --data 1 b\nput --data 2 c\nput --data 3 d\nput --data 4 e"))
        #expect(await interpreter.run(script) == .interrupted)
        #expect(output.errors.first?.code == "cancelled")
        #expect(try await session.names() == ["a"])
    }
}

@Suite("What a new user's trial found")
struct TrialFindingsTests {
    @Test("binary content goes through get and cat byte for byte")
    func binaryContent() async throws {
        let session = try LanguageSandbox()
        let bytes = Data((0...255).map { UInt8($0) } + [0xFF, 0xFE, 0x00, 0xC3])
        _ = try await session.bucket.write(bytes, to: ObjectName("bin/all.bytes"), options: WriteOptions())
        let (status, output) = try await session.run(
            "cat bin/all.bytes\nget bin/all.bytes\nget bin/all.bytes downloads", json: false)
        #expect(status == .success)
        #expect(output.bytes == bytes)
        #expect(session.files.files["all.bytes"] == bytes)
        #expect(session.files.files["downloads/all.bytes"] == bytes)
    }

    @Test("--raw reaches names that normalising would change; hints say when to use it, and when a path is a folder")
    func rawNamesAndHints() async throws {
        let session = try LanguageSandbox(["wrongPrefix//sadItem", "lonelyItem/", "images/forest.jpg"])
        let (status, output) = try await session.run(
            "meta get --raw wrongPrefix//sadItem\ncat --raw lonelyItem/", json: false)
        #expect(status == .success, "\(output.errors)")
        #expect(output.lines.contains("fullPath        wrongPrefix//sadItem"))
        let (_, normalised) = try await session.run("meta get wrongPrefix//sadItem")
        #expect(
            normalised.errors.first?.message
                == "Object wrongPrefix/sadItem does not exist. Paths are normalised (rule P1); to name 'wrongPrefix//sadItem' exactly, use --raw."
        )
        let (_, folder) = try await session.run("meta set contentType=x -- images")
        #expect(
            folder.errors.first?.message.hasSuffix(
                "images is a folder (a prefix), not an object; its objects are images/* (directly in it) or images/** (all under it)."
            ) == true)
        let (_, pattern) = try await session.run("ls images/*")
        #expect(pattern.errors.first?.message.hasPrefix("`ls` takes a path, not a pattern") == true)
        let (_, object) = try await session.run("ls images/forest.jpg", json: false)
        #expect(
            object.lines == [
                "(nothing under gs://teaching/images/forest.jpg) — it is an object: meta get shows it (rule L5)"
            ])
        let (_, removed) = try await session.run("rm --raw lonelyItem/ wrongPrefix//sadItem")
        #expect(removed.lines == [#"{"deleted":["lonelyItem/","wrongPrefix//sadItem"]}"#])
    }

    @Test("put into a folder keeps the file's name; help for meta and page lists their subcommands")
    func folderDestinationsAndHelp() async throws {
        let session = try LanguageSandbox()
        session.files.files["photo.jpg"] = Data([1, 2, 3])
        let (_, put) = try await session.run("put photo.jpg albums/2026/", json: false)
        #expect(put.lines == ["wrote albums/2026/photo.jpg (3 B, image/jpeg)"])
        let (_, help) = try await session.run("help meta", json: false)
        #expect(help.lines[0].hasPrefix("usage: meta get [--raw] [--where F]… [TARGET…]"))
        #expect(help.lines[0].contains("usage: meta set") && help.lines[0].contains("usage: meta unset"))
        let (_, overview) = try await session.run("help", json: false)
        #expect(overview.lines[0].split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    @Test("a dry run marks its JSON results; a failed script says nothing was saved")
    func dryRunMarksAndNotices() async throws {
        let session = try LanguageSandbox(["a"])
        let (_, dry) = try await session.run("meta set contentType=x -- a", dryRun: true)
        #expect(dry.lines.first?.hasSuffix(#","dryRun":true}"#) == true)
        let (_, put) = try await session.run("put --data x b", dryRun: true)
        #expect(
            put.lines.first?.hasPrefix(#"{"bucket":"teaching""#) == true
                && put.lines.first?.hasSuffix(#","dryRun":true}"#) == true)
        // A script that only reads says nothing about saving.
        let (_, reading) = try await session.run("ls\nmeta get missing", json: false)
        #expect(reading.notices.isEmpty)
        let (_, failed) = try await session.run("put --data x b\nrm missing", json: false)
        #expect(
            failed.notices == [
                "nothing was saved: a script lands whole or not at all; the 1 change reported above was undone (--keep-going keeps what succeeds)"
            ])
    }
}

/// A thread-safe count, for a cancellation check that trips after some calls.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func increment() -> Int {
        lock.withLock {
            value += 1
            return value
        }
    }
}
