import Foundation
import Testing

@Suite("storesh end to end: snapshots and check")
struct SnapshotEndToEndTests {
    let sandbox = Sandbox()
    var bucket: String { sandbox.file("t.bucket") }

    init() throws { _ = try sandbox.seededBucket() }

    func export() throws -> String { try sandbox.export(bucket) }

    func run(_ text: String, json: Bool = false) throws -> StoreshProcess.Result {
        try sandbox.storesh.run(["--bucket", bucket] + (json ? ["--json"] : []) + ["-c", text])
    }

    @Test("run --snapshot, then diff shows the script's changes and restore undoes them exactly")
    func snapshotAroundAScript() throws {
        let before = try export()
        let script = try sandbox.write(
            "meta set contentType=text/plain -- docs/000[01]\nrm docs/0004\nput --data new docs/new\n", to: "fix.store")
        let ran = try sandbox.storesh.run(["--bucket", bucket, "run", "--snapshot", "before-fix", script])
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(ran.stdout.hasPrefix("saved snapshot before-fix (5 objects)\n"))

        let diff = try run("snapshot diff before-fix")
        #expect(diff.status == 0)
        #expect(
            diff.stdout == """
                docs/0000
                  contentType  "application/octet-stream"  →  "text/plain"
                docs/0001
                  contentType  "application/octet-stream"  →  "text/plain"
                docs/0004 (removed)
                docs/new (added: 3 B, application/octet-stream)
                4 objects differ from snapshot before-fix to now: 1 added, 1 removed, 2 changed

                """)
        let json = try run("snapshot diff before-fix", json: true)
        #expect(
            json.stdout.hasPrefix(
                #"{"from":"before-fix","to":null,"added":["docs/new"],"removed":["docs/0004"],"changed":[{"path":"docs/0000","changes":{"contentType":{"old":"application/octet-stream","new":"text/plain"}}}"#
            ))

        let restored = try run("snapshot restore before-fix")
        #expect(restored.stdout == "restored snapshot before-fix: 1 added, 1 removed, 2 changed\n")
        #expect(try export() == before)
        let list = try run("snapshot list", json: true)
        #expect(
            list.stdout.hasPrefix(#"{"snapshots":[{"name":"before-fix","created":""#)
                && list.stdout.hasSuffix(#","objects":5}]}"# + "\n"))
        let check = try sandbox.storesh.run(["check", "--bucket", bucket, "--json"])
        #expect(check.status == 0)
        #expect(check.stdout.contains(#""sound":true,"objects":5,"snapshots":1,"keptVersions":3,"#), "\(check.stdout)")
    }

    @Test("--snapshot with a taken or invalid name runs nothing (exit 2); with --dry-run it saves nothing")
    func snapshotOptionMistakes() throws {
        #expect(try run("snapshot save taken").status == 0)
        let script = try sandbox.write("rm docs/0000\n", to: "rm.store")
        let exported = try export()
        let taken = try sandbox.storesh.run(["--bucket", bucket, "run", "--snapshot", "taken", script])
        #expect(taken.status == 2)
        #expect(taken.stderr.contains("--snapshot taken: the bucket has a snapshot of that name already"))
        let invalid = try sandbox.storesh.run(["--bucket", bucket, "run", "--snapshot", "no/slash", script])
        #expect(invalid.status == 2 && invalid.stderr.contains("is not a snapshot name"))
        #expect(try export() == exported)

        let bytes = try Data(contentsOf: URL(fileURLWithPath: bucket))
        let dry = try sandbox.storesh.run(["--bucket", bucket, "run", "--dry-run", "--snapshot", "dry", script])
        #expect(dry.status == 0)
        #expect(dry.stdout.hasPrefix("would save snapshot dry (5 objects)\n"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: bucket)) == bytes)
        #expect(try run("snapshot list").stdout.hasPrefix("taken "))
    }

    @Test("snapshot mistakes are positioned: unknown names with a suggestion, bad names before anything runs")
    func snapshotErrors() throws {
        #expect(try run("snapshot save v1").status == 0)
        let unknown = try run("snapshot diff v1 v2")
        #expect(unknown.status == 1)
        #expect(
            unknown.stderr.hasPrefix("-c:1:18: error: No snapshot named \"v2\"; did you mean v1? (invalid-argument)"))
        let bad = try run("rm docs/0000; snapshot save 'a b'")
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("-c:1:29: error: \"a b\" is not a snapshot name"))
        let sub = try run("snapshot lst")
        #expect(sub.status == 2 && sub.stderr.contains("did you mean 'snapshot list'?"))
        #expect(try run("ls docs").stdout.hasPrefix("0000\n"))
    }

    @Test("check: a sound bucket exits 0; a value changed behind storesh's back is found, exit 1, file untouched")
    func check() throws {
        let sound = try sandbox.storesh.run(["check", "--bucket", bucket])
        #expect(sound.status == 0)
        #expect(sound.stdout.hasPrefix("\(bucket): sound (5 objects, 0 snapshots, 0 versions kept for snapshots"))
        // Change one byte of a stored value: "docs/0003" becomes "docs/0008" in the file.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: bucket))
        let name = Data("docs/0003".utf8)
        var position = bytes.startIndex
        var changed = 0
        while let range = bytes[position...].firstRange(of: name) {
            bytes[range.upperBound - 1] = UInt8(ascii: "8")
            position = range.upperBound
            changed += 1
        }
        #expect(changed >= 1)
        try bytes.write(to: URL(fileURLWithPath: bucket))
        let damaged = try sandbox.storesh.run(["check", "--bucket", bucket])
        #expect(damaged.status == 1)
        #expect(damaged.stdout.contains("DAMAGED"), "\(damaged.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: bucket)) == bytes)
        let missing = try sandbox.storesh.run(["check", "--bucket", sandbox.file("absent.bucket")])
        #expect(missing.status == 1 && !FileManager.default.fileExists(atPath: sandbox.file("absent.bucket")))
    }
}
