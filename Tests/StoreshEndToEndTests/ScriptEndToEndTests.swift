import Foundation
import Testing

@Suite("storesh end to end: scripts")
struct ScriptEndToEndTests {
    let sandbox = Sandbox()
    var bucket: String { sandbox.file("t.bucket") }

    init() throws { _ = try sandbox.seededBucket() }

    @Test(
        "a dry run's last bulk edit is previewed by the bucket: the same lines as a plan of every object, nothing changed"
    )
    func previewedDryRun() throws {
        let before = try sandbox.export(bucket)
        let edit = "meta set cacheControl=no-cache custom.k=v -- docs/**"
        // As the script's last statement the edit is previewed (issue 55); followed by another, it is planned.
        let previewed = try sandbox.storesh.run(["--bucket", bucket, "--dry-run", "-c", edit])
        let planned = try sandbox.storesh.run(["--bucket", bucket, "--dry-run", "-c", edit + "; echo done"])
        #expect(previewed.status == 0 && planned.status == 0, "\(previewed.stderr)\(planned.stderr)")
        #expect(previewed.stdout.contains("would update 5 objects, 0 unchanged"))
        #expect(previewed.stdout == planned.stdout.replacingOccurrences(of: "done\n", with: ""))
        for format in ["--json", "--summary"] {
            let one = try sandbox.storesh.run(["--bucket", bucket, "--dry-run", format, "-c", edit])
            let other = try sandbox.storesh.run(["--bucket", bucket, "--dry-run", format, "-c", edit + "; echo done"])
            // The echo's line (text or JSON) set aside, the same lines.
            let others = other.stdout.split(separator: "\n").filter { !$0.contains("done") }
            #expect(one.stdout.split(separator: "\n") == others, "\(format)")
        }
        #expect(try sandbox.export(bucket) == before)
    }

    func export() throws -> String { try sandbox.export(bucket) }

    @Test("run FILE: exit 0 and the results on stdout")
    func runFile() throws {
        let script = try sandbox.write("cd docs\nls -n 2\npage next\npwd\n", to: "ok.store")
        let result = try sandbox.storesh.run(["--bucket", bucket, "run", script])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("0000\n0001\n… more entries: `page next` shows them (token "))
        #expect(result.stdout.hasSuffix("\n0002\n0003\n… more entries: `page next` shows them (token ") == false)
        #expect(result.stdout.hasSuffix("gs://t/docs\n"))
        #expect(result.stderr == "")
    }

    @Test("run FILE: a bad byte is FILE:LINE:COLUMN, and with --json every error names the file")
    func errorsNameTheFile() throws {
        let before = try export()
        let script = sandbox.file("bytes.store")
        try Data("put --data x docs/new\nls \u{1}".utf8 + [0xFF] + Data("\n".utf8)).write(
            to: URL(fileURLWithPath: script))
        let text = try sandbox.storesh.run(["--bucket", bucket, "run", script])
        #expect(text.status == 2)
        // The line is shown with the bad byte as a replacement character, the caret under it (the control
        // character before it as a space).
        #expect(
            text.stderr
                == "\(script):2:5: error: the script is not valid UTF-8 (byte 0xFF) (syntax-error)\n    ls  \u{FFFD}\n        ^\n"
        )
        let json = try sandbox.storesh.run(["--bucket", bucket, "--json", "run", script])
        #expect(json.status == 2)
        #expect(
            json.stderr
                == "{\"error\":{\"code\":\"syntax-error\",\"message\":\"the script is not valid UTF-8 (byte 0xFF)\",\"line\":2,\"column\":5,\"file\":\"\(script)\"}}\n"
        )
        let failing = try sandbox.write("ls\nrm docs/none\n", to: "fails.store")
        let runtime = try sandbox.storesh.run(["--bucket", bucket, "--json", "run", failing])
        #expect(runtime.status == 1)
        #expect(runtime.stderr.contains("\"line\":2,\"column\":4,\"file\":\"\(failing)\"}}"))
        #expect(try export() == before)
    }

    @Test("a syntax error anywhere runs nothing: exit 2, FILE:LINE:COLUMN, the line and a caret")
    func syntaxError() throws {
        let before = try export()
        let script = try sandbox.write(
            "put --data x docs/new\nmeta set cacheControl=no-cache -- docs/0000\nls --al\n", to: "bad.store")
        let result = try sandbox.storesh.run(["--bucket", bucket, "run", script])
        #expect(result.status == 2)
        #expect(result.stdout == "")
        #expect(
            result.stderr
                == "\(script):3:4: error: `ls` has no option '--al'; did you mean '--all'? (syntax-error)\n    ls --al\n       ^\n"
        )
        #expect(try export() == before)
    }

    @Test("a failing command rolls the whole script back: exit 1")
    func rollback() throws {
        let before = try export()
        let result = try sandbox.storesh.run([
            "--bucket", bucket, "-c", "put --data x docs/new; rm docs/0000; meta get docs/none",
        ])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "-c:1:47: error: Object docs/none does not exist. (object-not-found)\nstoresh: nothing was saved: a script lands whole or not at all; the 2 changes reported above were undone (--keep-going keeps what succeeds)\n"
        )
        #expect(try export() == before)
    }

    @Test("--keep-going reports each failure, keeps the rest, and exits 1")
    func keepGoing() throws {
        let script = try sandbox.write("rm docs/0000\nrm docs/none\nrm docs/0001\ncat docs/none\n", to: "k.store")
        let result = try sandbox.storesh.run(["--bucket", bucket, "run", "--keep-going", script])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines.map { String($0.prefix(while: { $0 != " " })) } == ["\(script):2:4:", "\(script):4:5:", "storesh:"])
        // `cat` changes nothing: the other commands whose changes were saved are the two `rm`s that succeeded.
        #expect(
            lines.last
                == "storesh: 2 commands failed and changed nothing; the changes of the other 2 commands that change the bucket were saved"
        )
        #expect(try sandbox.storesh.run(["--bucket", bucket, "-c", "ls docs"]).stdout == "0002\n0003\n0004\n")
    }

    @Test("--dry-run prints the plan and leaves the bucket byte for byte as it was")
    func dryRun() throws {
        let before = try Data(contentsOf: URL(fileURLWithPath: bucket))
        let exported = try export()
        let script = try sandbox.write(
            "meta set contentType=text/plain custom.k=v -- docs/*\nrm docs/0004\n", to: "d.store")
        let result = try sandbox.storesh.run(["--bucket", bucket, "run", script, "--dry-run"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.hasPrefix(
                "# line 1: meta set\ndocs/0000\n  contentType  \"application/octet-stream\"  →  \"text/plain\"\n  custom.k     (not set)                   →  \"v\"\n"
            ))
        #expect(
            result.stdout.hasSuffix(
                "would update 5 objects, 0 unchanged\n# line 2: rm\nwould delete docs/0004\ndry run: nothing was saved\n"
            ))
        #expect(try export() == exported)
        #expect(try Data(contentsOf: URL(fileURLWithPath: bucket)) == before)
    }

    @Test("a script on standard input is named - in errors; --json errors are JSON on stderr")
    func stdinAndJSON() throws {
        let result = try sandbox.storesh.run(["--bucket", bucket], stdin: Data("pwd\nmeta get docs/zz\n".utf8))
        #expect(result.status == 1)
        #expect(result.stdout == "gs://t/\n")
        // A script that changes nothing says nothing about saving.
        #expect(result.stderr == "-:2:10: error: Object docs/zz does not exist. (object-not-found)\n")
        let json = try sandbox.storesh.run(["--bucket", bucket, "--json", "-c", "pwd; ls -n 0"])
        #expect(json.status == 1)
        #expect(json.stdout == "{\"path\":\"gs://t/\"}\n")
        #expect(
            json.stderr
                == "{\"error\":{\"code\":\"invalid-argument\",\"message\":\"Argument 'maxResults' must be between 1 and 1000 inclusive.\",\"line\":1,\"column\":12}}\n"
        )
        let syntax = try sandbox.storesh.run(["--bucket", bucket, "--json", "-c", "ls\n'x"])
        #expect(syntax.status == 2)
        #expect(
            syntax.stderr.hasPrefix("{\"error\":{\"code\":\"syntax-error\",\"message\":\"unterminated single quote"))
    }

    @Test("samples/fix-meta.store: dry run, run, and a second run that changes nothing")
    func fixMetaSample() throws {
        let sample = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../samples/fix-meta.store"
        ).path
        let dry = try sandbox.storesh.run(["--clock", clock, "run", "--dry-run", sample])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(
            dry.stdout.contains(
                "images/thumbnails/forest-small.jpg\n  cacheControl  \"public, max-age=604800, immutable\"  →  \"public, max-age=86400\"\n"
            ))
        let real = try sandbox.storesh.run(["run", sample])
        #expect(real.status == 0, "\(real.stderr)")
        #expect(real.stdout.contains("updated 6 objects, 294 unchanged"))
        let again = try sandbox.storesh.run(["run", sample])
        #expect(
            again.stdout.contains("updated 0 objects, 4 unchanged")
                && again.stdout.contains("updated 0 objects, 300 unchanged"))
    }

    @Test("a .store file with the shebang line runs by itself")
    func shebang() throws {
        let script = try sandbox.write("#!/usr/bin/env -S storesh run\necho hello from a script\n", to: "hello.store")
        #expect(chmod(script, 0o755) == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        let binaryFolder = URL(fileURLWithPath: StoreshProcess.binary).deletingLastPathComponent().path
        process.environment = sandbox.storesh.environment.merging(["PATH": binaryFolder + ":/usr/bin:/bin"]) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text == "hello from a script\n")
    }

    @Test("get and cat give binary content byte for byte")
    func binaryContent() throws {
        let bytes = Data((0...255).map { UInt8($0) } + [0xFF, 0xFE, 0x00, 0xC3])
        let archive = try sandbox.write(
            "{\"format\":\"storesh-bucket\",\"version\":1,\"objects\":[{\"name\":\"bin/all.bytes\",\"base64\":\"\(bytes.base64EncodedString())\"}]}",
            to: "bin.json")
        #expect(try sandbox.storesh.run(["import", "--bucket", bucket, archive]).status == 0)
        let folder = sandbox.file("downloads")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let got = try sandbox.storesh.run(["--bucket", bucket, "-c", "get bin/all.bytes \(folder)"])
        #expect(got.status == 0, "\(got.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/all.bytes")) == bytes)
        let catted = Process()
        catted.executableURL = URL(fileURLWithPath: StoreshProcess.binary)
        catted.arguments = ["--bucket", bucket, "-c", "cat bin/all.bytes"]
        catted.environment = sandbox.storesh.environment
        let pipe = Pipe()
        catted.standardOutput = pipe
        try catted.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        catted.waitUntilExit()
        #expect(output == bytes)
    }

    @Test("a script can come through a pipe given as a path; -c with run is a usage error")
    func pipesAndMixups() throws {
        let piped = try sandbox.storesh.run(["--bucket", bucket, "run", "/dev/stdin"], stdin: Data("pwd\n".utf8))
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.stdout == "gs://t/\n")
        let both = try sandbox.storesh.run(["--bucket", bucket, "-c", "pwd", "run", "x.store"])
        #expect(both.status == 2)
        #expect(both.stderr.contains("-c TEXT and run FILE each give the script"))
        let bare = try sandbox.storesh.run(["--bucket", bucket, "ls"])
        #expect(bare.status == 2)
        #expect(bare.stderr.contains("storesh -c 'ls …'"))
    }

    @Test("flags and arguments that make no sense are usage errors: exit 2")
    func usage() throws {
        for arguments in [
            ["run"], ["run", "x.store", "--bogus"], ["-c"], ["run", sandbox.file("missing.store")], ["ls"],
        ] {
            let result = try sandbox.storesh.run(["--bucket", bucket] + arguments)
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("storesh: error: "), "\(arguments): \(result.stderr)")
        }
    }
}

@Suite("storesh end to end: security rules")
struct RulesEndToEndTests {
    let sandbox = Sandbox()

    func sample(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../samples/rules/\(name)"
        ).path
    }

    @Test("owner-only rules: a denied write fails the script (exit 1) and saves nothing; rules why explains")
    func ownerOnly() throws {
        #expect(try sandbox.storesh.run(["-c", "rules load \(sample("owner-only.rules"))"]).status == 0)
        let before = try sandbox.storesh.run(["export"]).stdout
        let denied = try sandbox.storesh.run([
            "--quiet", "-c", "login uid\nput --data mine files/uid/new.txt\nput --data theirs files/alice/new.txt",
        ])
        #expect(denied.status == 1)
        #expect(
            denied.stderr.hasPrefix(
                "-c:3:19: error: User does not have permission to access gs://teaching/files/alice/new.txt. (unauthorized)\n"
            ))
        #expect(try sandbox.storesh.run(["export"]).stdout == before)
        let why = try sandbox.storesh.run(["-c", "login uid\nls -n 1 files/uid\nrules why"])
        #expect(why.status == 0, "\(why.stderr)")
        #expect(
            why.stdout.hasSuffix(
                "allowed list on gs://teaching/files/uid by `allow read: if isOwner(uid);` at \(sample("owner-only.rules")):16\n"
            ))
        let missing = try sandbox.storesh.run(["-c", "meta get files/alice/none"])
        #expect(missing.stderr.contains("(unauthorized)"))  // rule R3: not object-not-found
    }

    @Test("rules_version 1: every listing fails with the message of rule L12")
    func versionOne() throws {
        #expect(try sandbox.storesh.run(["-c", "rules load \(sample("version1.rules"))"]).status == 0)
        let listing = try sandbox.storesh.run(["--quiet", "-c", "ls"])
        #expect(listing.status == 1)
        #expect(
            listing.stderr
                == "-c:1:1: error: Listing objects in a bucket is disallowed for rules_version = \"1\". Please update storage security rules to rules_version = \"2\" to use list. (unauthorized)\n"
        )
        #expect(try sandbox.storesh.run(["-c", "cat docs/notes.txt"]).stdout == "Notes for the class.\n")
    }
}
