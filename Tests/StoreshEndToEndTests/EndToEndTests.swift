import Foundation
import StoreshCore
import StoreshLocal
import Testing

/// A fresh home directory per test.
final class Sandbox {
    let path: String
    let storesh: StoreshProcess

    init() {
        path = NSTemporaryDirectory() + "storesh-e2e-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        storesh = StoreshProcess(home: path)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func file(_ name: String) -> String { path + "/" + name }

    func write(_ text: String, to name: String) throws -> String {
        try Data(text.utf8).write(to: URL(fileURLWithPath: file(name)))
        return file(name)
    }

    /// An archive of `count` small objects named PREFIX/NNNN.
    func archive(_ name: String, prefix: String, count: Int) throws -> String {
        let lines = (0..<count).map { String(format: "{\"name\":\"%@/%04d\",\"text\":\"object %d\"}", prefix, $0, $0) }
        return try write(
            "{\"format\":\"storesh-bucket\",\"version\":1,\"objects\":[\n" + lines.joined(separator: ",\n") + "\n]}\n",
            to: name)
    }

    /// The bucket file the script, snapshot and plan suites work on: `t.bucket`, made by `storesh import` of five
    /// objects docs/0000…docs/0004.
    func seededBucket() throws -> String {
        let bucket = file("t.bucket")
        let seeded = try storesh.run(["import", "--bucket", bucket, try archive("seed.json", prefix: "docs", count: 5)])
        #expect(seeded.status == 0)
        return bucket
    }

    /// The whole of a bucket file, as `storesh export` writes it.
    func export(_ bucket: String) throws -> String { try storesh.run(["export", "--bucket", bucket]).stdout }
}

let clock = "2026-11-21T09:30:00.000Z"

@Suite("storesh end to end: the built binary")
struct EndToEndTests {
    let sandbox = Sandbox()

    @Test("the first run creates the default bucket from the teaching sample")
    func defaultBucket() throws {
        let result = try sandbox.storesh.run(["-c", "ls"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr
                == "storesh: created the default bucket gs://teaching from the teaching sample at \(sandbox.path)/data/storesh/default.bucket\n"
        )
        // Rule B2: a run that does not name its bucket says which one it uses; --quiet silences it.
        #expect(
            try sandbox.storesh.run(["-c", "ls"]).stderr
                == "storesh: bucket gs://teaching (the default bucket, \(sandbox.path)/data/storesh/default.bucket)\n",
            "the second run creates nothing")
        #expect(try sandbox.storesh.run(["--quiet", "-c", "ls"]).stderr == "")
        #expect(try sandbox.storesh.run(["--json", "-c", "ls"]).stderr == "", "with --json, stderr holds JSON only")
        // Rule L3 on the sample: prefixes only, shown with a trailing /.
        #expect(result.stdout == "correctPrefix/\ndata/\ndocs/\nfiles/\nimages/\nlessons/\nlonelyItem/\nwrongPrefix/\n")
        #expect(FileManager.default.fileExists(atPath: sandbox.file("data/storesh/default.bucket")))

        let exported = try sandbox.storesh.run(["export"])
        #expect(exported.status == 0)
        #expect(
            exported.stdout.contains(
                "{\"name\":\"images/forest.jpg\",\"cacheControl\":\"public, max-age=86400\",\"contentType\":\"image/jpeg\",\"customMetadata\":{\"activity\":\"Hiking\",\"location\":\"Yosemite, CA, USA\"}"
            ))
    }

    @Test("STORESH_BUCKET and --bucket choose the bucket; a missing location is created empty")
    func bucketLocation() throws {
        let fromEnvironment = try sandbox.storesh.run(
            ["-c", "pwd"], environment: ["STORESH_BUCKET": sandbox.file("env.bucket")])
        #expect(fromEnvironment.stdout == "gs://env/\n")
        let fromFlag = try sandbox.storesh.run(
            ["--bucket", sandbox.file("flag.bucket"), "-c", "pwd; ls"],
            environment: ["STORESH_BUCKET": sandbox.file("env.bucket")])
        #expect(fromFlag.stdout == "gs://flag/\n(nothing under gs://flag/)\n")
        #expect(
            fromFlag.stderr == """
                storesh: created an empty bucket gs://flag at \(sandbox.file("flag.bucket")) (a new file, since there was none; \
                the default bucket, with the teaching sample, is used without --bucket: \(sandbox.file("data/storesh/default.bucket")))

                """)
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("data/storesh/default.bucket")))
    }

    @Test("-c given twice is a usage error that runs neither script (argument-parser would keep one and drop one)")
    func repeatedCommand() throws {
        let result = try sandbox.storesh.run([
            "--bucket", sandbox.file("c.bucket"), "-c", "put --data x a.txt", "-c", "rm a.txt",
        ])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("-c is given 2 times; give one script"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("c.bucket")))
        // --journal on a bucket file would be a journal promised and never written.
        let journaled = try sandbox.storesh.run([
            "--bucket", sandbox.file("j.bucket"), "--journal", sandbox.file("j.journal"), "-c", "put --data x a.txt",
        ])
        #expect(
            journaled.status == 2 && journaled.stderr.contains("keeps the journal of a run on a real bucket"),
            "\(journaled.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("j.journal")))
    }

    @Test("a bucket in a directory that does not exist is an error, and nothing is made")
    func mistypedDirectory() throws {
        let result = try sandbox.storesh.run(["export", "--bucket", sandbox.file("nodir/x.bucket")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("there is no directory \(sandbox.file("nodir"))"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("nodir")))
        let empty = try sandbox.storesh.run(["--bucket", "", "-c", "ls"])
        #expect(empty.status == 2)
        #expect(
            empty.stderr
                == "storesh: error: --bucket needs a bucket: a local bucket file (a path), gs://NAME (Google Cloud Storage, Firebase) or s3://NAME (S3-compatible).\n"
        )
    }

    @Test("rule B1: gs:// and s3:// are real buckets, never directories; an unknown scheme is a usage error")
    func bucketLocationKinds() throws {
        // Rule B3: local-bucket features on a real bucket are usage errors that say what to use instead.
        for location in ["gs://my-app.appspot.com", "s3://media"] {
            for arguments in [["check"], ["export"], ["backup", sandbox.file("copy.bucket")], ["serve"]] {
                let result = try sandbox.storesh.run(["--bucket", location] + arguments)
                #expect(result.status == 2, "\(arguments)")
                #expect(result.stderr.hasPrefix("storesh: error: \(location) is a real bucket: "), "\(result.stderr)")
            }
        }
        // Rule S4: without credentials, the error lists what was tried.
        let s3 = try sandbox.storesh.run(["-c", "ls"], environment: ["STORESH_BUCKET": "s3://media"])
        #expect(
            s3.status == 1 && s3.stderr.contains("No AWS credentials were found. Tried: $AWS_ACCESS_KEY_ID"),
            "\(s3.stderr)")
        let unknown = try sandbox.storesh.run(["--bucket", "ftp://host/b", "-c", "ls"])
        #expect(unknown.status == 2)
        #expect(
            unknown.stderr.contains(
                "unknown kind of location 'ftp://'; a bucket is a local bucket file (a path), gs://NAME"))
        let nearMiss = try sandbox.storesh.run(["--bucket", "gs:my-app", "-c", "ls"])
        #expect(
            nearMiss.status == 2
                && nearMiss.stderr.contains("a real bucket is written gs://NAME (did you mean gs://my-app?)"))
        let noName = try sandbox.storesh.run(["--bucket", "s3://", "-c", "ls"])
        #expect(noName.status == 2 && noName.stderr.contains("give the bucket's name, as s3://NAME"))
        let withPath = try sandbox.storesh.run(["--bucket", "gs://b/images", "-c", "ls"])
        #expect(withPath.status == 2 && withPath.stderr.contains("give the bucket alone, as gs://NAME"))
        let json = try sandbox.storesh.run(["--json", "--bucket", "ftp://x", "-c", "ls"])
        #expect(
            json.stderr.hasPrefix("{\"error\":{\"code\":\"usage-error\",\"message\":\"--bucket ftp://x: unknown kind"))
        for made in ["gs:", "s3:", "ftp:", "gs:my-app"] {
            #expect(!FileManager.default.fileExists(atPath: sandbox.file(made)))
        }
    }

    @Test("rule B2: a bucket from STORESH_BUCKET is named once on stderr")
    func bucketFromEnvironmentIsNamed() throws {
        let bucket = sandbox.file("env.bucket")
        _ = try sandbox.storesh.run(["--bucket", bucket, "-c", "ls"])
        let result = try sandbox.storesh.run(["-c", "pwd; pwd"], environment: ["STORESH_BUCKET": bucket])
        #expect(result.stderr == "storesh: bucket gs://env ($STORESH_BUCKET, \(bucket))\n")
        #expect(try sandbox.storesh.run(["--bucket", bucket, "-c", "pwd"]).stderr == "", "--bucket names it")
    }

    @Test("an export that cannot be written fails with the reason, exit 1")
    func exportWriteFailure() throws {
        // A standard output that refuses writes (opened read-only): every write fails, as on a full disk.
        let refusing = try sandbox.write("", to: "refusing.txt")
        let full = try sandbox.storesh.run(["export"], stdout: FileHandle(forReadingAtPath: refusing))
        #expect(full.status == 1)
        #expect(full.stderr.hasSuffix("storesh: error: Cannot write standard output: Bad file descriptor. (unknown)\n"))
        let noDirectory = try sandbox.storesh.run(["export", sandbox.file("nodir/out.json")])
        #expect(noDirectory.status == 1)
        #expect(
            noDirectory.stderr.contains("Cannot write \(sandbox.file("nodir/out.json")): No such file or directory."))
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("nodir")))
    }

    @Test("--clock makes the default bucket reproducible, and export/import round-trips exactly")
    func reproducibleRoundTrip() throws {
        let other = Sandbox()
        let first = try sandbox.storesh.run(["--clock", clock, "export"])
        let second = try other.storesh.run(["export"], environment: ["STORESH_CLOCK": clock])
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout == second.stdout)
        #expect(first.stdout.contains("\"timeCreated\":\"2026-11-21T09:30:00.000Z\""))

        let archive = try sandbox.write(first.stdout, to: "teaching.json")
        let copy = sandbox.file("copy/teaching.bucket")
        try FileManager.default.createDirectory(atPath: sandbox.file("copy"), withIntermediateDirectories: true)
        let imported = try sandbox.storesh.run(["import", "--bucket", copy, archive])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stderr.contains("imported 320 objects into gs://teaching"))
        let reexported = try sandbox.storesh.run(["export", "--bucket", copy, sandbox.file("again.json")])
        #expect(reexported.status == 0)
        #expect(try String(contentsOfFile: sandbox.file("again.json"), encoding: .utf8) == first.stdout)
    }

    @Test("a bad archive is refused with where it is wrong, exit 1, and the bucket unchanged")
    func badImport() throws {
        let bucket = sandbox.file("b.bucket")
        _ = try sandbox.storesh.run([
            "import", "--bucket", bucket, try sandbox.archive("good.json", prefix: "good", count: 3),
        ])
        let before = try sandbox.storesh.run(["export", "--bucket", bucket]).stdout
        let bad = try sandbox.write(
            "{\"format\":\"storesh-bucket\",\"version\":1,\"objects\":[\n{\"name\":\"new\"},\n{\"name\":\"x\",\"cacheControll\":\"no\"}\n]}",
            to: "bad.json")
        let result = try sandbox.storesh.run(["import", "--replace", "--bucket", bucket, bad])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "storesh: error: \(bad): object #2 (x): unknown field \"cacheControll\"; did you mean \"cacheControl\"? (invalid-argument)\n"
        )
        #expect(try sandbox.storesh.run(["export", "--bucket", bucket]).stdout == before)
    }

    @Test("a change interrupted just before its commit leaves the old state, and the bucket stays sound")
    func crashBeforeCommit() throws {
        let bucket = sandbox.file("crash.bucket")
        let seeded = try sandbox.storesh.run([
            "import", "--bucket", bucket, try sandbox.archive("a.json", prefix: "old", count: 50),
        ])
        #expect(seeded.status == 0)
        let before = try sandbox.storesh.run(["export", "--bucket", bucket]).stdout

        let crashed = try sandbox.storesh.run(
            ["import", "--replace", "--bucket", bucket, try sandbox.archive("b.json", prefix: "new", count: 500)],
            environment: ["STORESH_FAULT": "crash-before-commit"])
        #expect(crashed.killedBySignal && crashed.status == SIGKILL)

        #expect(try sandbox.storesh.run(["export", "--bucket", bucket]).stdout == before)
        let reopened = try LocalBucket.open(at: bucket, options: LocalBucketOptions(createIfMissing: false))
        #expect(try reopened.integrityProblems() == [])
        #expect(try reopened.objectCount() == 50)
    }

    @Test("four processes writing one bucket at once lose nothing and corrupt nothing")
    func concurrentProcesses() async throws {
        let bucket = sandbox.file("shared.bucket")
        let archives = try (0..<4).map { try sandbox.archive("w\($0).json", prefix: "writer\($0)", count: 250) }
        let storesh = sandbox.storesh
        let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
            for archive in archives {
                group.addTask { try storesh.run(["import", "--bucket", bucket, archive]).status }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(statuses == [0, 0, 0, 0])
        let opened = try LocalBucket.open(at: bucket, options: LocalBucketOptions(createIfMissing: false))
        #expect(try opened.objectCount() == 1000)
        #expect(try opened.integrityProblems() == [])
        let generations = try opened.scanPage(prefix: "", after: nil, limit: 2000).objects.map(\.generation)
        #expect(Set(generations).count == 1000)
    }

    @Test("a damaged or foreign bucket file: clear message, exit 1, file untouched")
    func damagedFile() throws {
        let bucket = sandbox.file("ok.bucket")
        _ = try sandbox.storesh.run([
            "import", "--bucket", bucket, try sandbox.archive("a.json", prefix: "x", count: 200),
        ])
        var bytes = try Data(contentsOf: URL(fileURLWithPath: bucket))
        bytes = bytes.prefix(bytes.count / 3)
        let truncated = sandbox.file("truncated.bucket")
        try bytes.write(to: URL(fileURLWithPath: truncated))
        let text = try sandbox.write("just some text\n", to: "text.bucket")
        for (path, expected) in [(truncated, "is damaged"), (text, "is not a storesh bucket")] {
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            let result = try sandbox.storesh.run(["export", "--bucket", path])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("storesh: error: "))
            #expect(result.stderr.contains(expected), "\(result.stderr)")
            #expect(result.stderr.hasSuffix("(internal-error)\n"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        }
    }

    @Test("usage errors exit 2 and say what was wrong; --help and --version exit 0")
    func usage() throws {
        let unknown = try sandbox.storesh.run(["--bogus"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.hasPrefix("storesh: error: Unknown option '--bogus'"))
        let badClock = try sandbox.storesh.run(["--clock", "yesterday", "-c", "ls"])
        #expect(badClock.status == 2)
        #expect(badClock.stderr.contains("--clock takes an RFC 3339 time"))
        let missingFile = try sandbox.storesh.run(["import"])
        #expect(missingFile.status == 2)
        let unreadable = try sandbox.storesh.run(["import", sandbox.file("nope.json")])
        #expect(unreadable.status == 2)
        #expect(
            unreadable.stderr == "storesh: error: cannot read \(sandbox.file("nope.json")): there is no such file.\n")
        let directory = try sandbox.storesh.run(["import", sandbox.path])
        #expect(directory.stderr == "storesh: error: cannot read \(sandbox.path): it is a directory.\n")
        let badEnvironmentClock = try sandbox.storesh.run(["-c", "ls"], environment: ["STORESH_CLOCK": "soon"])
        #expect(badEnvironmentClock.status == 2)
        #expect(badEnvironmentClock.stderr.hasPrefix("storesh: error: $STORESH_CLOCK takes an RFC 3339 time"))
        let version = try sandbox.storesh.run(["--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("storesh "))
        let help = try sandbox.storesh.run(["--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: storesh"))
        // Nothing was created by any of these.
        #expect(!FileManager.default.fileExists(atPath: sandbox.file("data/storesh/default.bucket")))
    }
}
