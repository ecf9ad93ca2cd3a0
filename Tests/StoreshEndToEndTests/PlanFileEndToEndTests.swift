import Foundation
import Testing

/// A dry run's plan kept in a file (`--dry-run --plan FILE`) and applied later as reviewed (`storesh apply FILE`).
@Suite("storesh end to end: kept plans")
struct PlanFileEndToEndTests {
    let sandbox = Sandbox()
    var bucket: String { sandbox.file("t.bucket") }
    var plan: String { sandbox.file("fix.plan") }

    init() throws { _ = try sandbox.seededBucket() }

    func export() throws -> String { try sandbox.export(bucket) }

    /// An object's cacheControl, or "" when it has none.
    func cacheControl(_ name: String) throws -> String {
        let got = try sandbox.storesh.run(["--bucket", bucket, "--json", "-c", "meta get \(name)"])
        let document = try JSONSerialization.jsonObject(with: Data(got.stdout.utf8)) as? [String: Any]
        return document?["cacheControl"] as? String ?? ""
    }

    /// Plans the edit of every docs object but the last (which is deleted), keeping the plan.
    func makePlan() throws -> StoreshProcess.Result {
        try sandbox.storesh.run([
            "--bucket", bucket, "--dry-run", "--plan", plan, "-c",
            "meta set cacheControl=no-cache -- docs/000[0-3]; rm docs/0004",
        ])
    }

    @Test("a kept plan changes nothing, prints as the dry run did, then lands whole with apply")
    func keepThenApply() throws {
        let before = try export()
        let dryRun = try makePlan()
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(
            dryRun.stdout.hasSuffix(
                "would update 4 objects, 0 unchanged\n# line 1: rm\nwould delete docs/0004\ndry run: nothing was saved\n"
            ))
        #expect(
            dryRun.stderr
                == "storesh: plan of 5 changes kept in \(plan): review it, then apply it with: storesh apply \(plan)\n")
        #expect(try export() == before)

        let shown = try sandbox.storesh.run(["apply", "--dry-run", plan])
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("docs/0003\n  cacheControl  (not set)  →  \"no-cache\"\nwould update 4 objects"))
        #expect(shown.stdout.hasSuffix("would delete docs/0004\n"))
        #expect(try export() == before)

        let applied = try sandbox.storesh.run(["apply", plan])
        #expect(applied.status == 0, "\(applied.stderr)")
        // The changes went to the bucket file (gs://t is only the name inside it).
        #expect(applied.stderr == "storesh: applied 5 changes to the bucket file \(bucket)\n")
        #expect(try cacheControl("docs/0002") == "no-cache")
        #expect(try sandbox.storesh.run(["--bucket", bucket, "-c", "ls docs"]).stdout == "0000\n0001\n0002\n0003\n")
    }

    @Test("an object changed after the plan was made is refused, and on a local bucket nothing lands")
    func changedSinceIsRefused() throws {
        #expect(try makePlan().status == 0)
        #expect(
            try sandbox.storesh.run(["--bucket", bucket, "-c", "meta set contentLanguage=fr docs/0002"]).status == 0)
        let before = try export()
        let refused = try sandbox.storesh.run(["apply", plan])
        #expect(refused.status == 1)
        // Change 2 (the third) is on line 4 of the plan: the header is line 1.
        #expect(
            refused.stderr.hasPrefix(
                "\(plan):4:1: error: Object docs/0002 changed meanwhile: its metageneration is 2, not 1."))
        #expect(refused.stderr.contains("storesh: nothing was applied: the plan is one transaction"))
        #expect(try export() == before)

        // --keep-going applies the others and leaves the changed object as its writer left it.
        let partly = try sandbox.storesh.run(["apply", "--keep-going", plan])
        #expect(partly.status == 1)
        #expect(
            partly.stderr.contains(
                "storesh: applied 4 of 5 changes to the bucket file \(bucket); 1 failed and were left as they are"))
        #expect(try cacheControl("docs/0001") == "no-cache")
        #expect(try cacheControl("docs/0002") == "")
        #expect(
            try sandbox.storesh.run(["--bucket", bucket, "-c", "meta get docs/0002"]).stdout.contains(
                "contentLanguage  fr\n"))
    }

    @Test("a kept plan keeps the bucket's snapshots true: the snapshot still shows the old values")
    func snapshotsStayTrue() throws {
        #expect(try sandbox.storesh.run(["--bucket", bucket, "-c", "snapshot save before"]).status == 0)
        #expect(try makePlan().status == 0)
        #expect(try sandbox.storesh.run(["apply", plan]).status == 0)
        let diff = try sandbox.storesh.run(["--bucket", bucket, "-c", "snapshot diff before"])
        #expect(diff.status == 0, "\(diff.stderr)")
        #expect(diff.stdout.contains("docs/0004"))
        let restored = try sandbox.storesh.run(["--bucket", bucket, "-c", "snapshot restore before; ls docs"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.stdout.hasSuffix("\n0000\n0001\n0002\n0003\n0004\n"))
        #expect(try cacheControl("docs/0001") == "")
        #expect(try sandbox.storesh.run(["--bucket", bucket, "check"]).status == 0)
    }

    @Test("mistakes are refused before anything changes")
    func mistakes() throws {
        let withoutDryRun = try sandbox.storesh.run(["--bucket", bucket, "--plan", plan, "-c", "rm docs/0000"])
        #expect(withoutDryRun.status == 2)
        #expect(withoutDryRun.stderr.contains("--plan keeps the plan of a dry run: add --dry-run"))

        // A command that fails keeps no plan: a plan is kept whole or not at all.
        let failing = try sandbox.storesh.run([
            "--bucket", bucket, "--dry-run", "--plan", plan, "-c", "rm docs/0000; rm docs/none",
        ])
        #expect(failing.status == 1)
        #expect(!FileManager.default.fileExists(atPath: plan))

        #expect(try makePlan().status == 0)
        let other = sandbox.file("other.bucket")
        #expect(try sandbox.storesh.run(["--bucket", other, "-c", "put --data x a"]).status == 0)
        let wrongBucket = try sandbox.storesh.run(["apply", "--bucket", other, plan])
        #expect(wrongBucket.status == 2)
        #expect(wrongBucket.stderr.contains("is a plan for \(bucket), not \(other)"))

        let notAPlan = try sandbox.write("{\"hello\": 1}\n", to: "not.plan")
        let unreadable = try sandbox.storesh.run(["apply", notAPlan])
        #expect(unreadable.status == 1)
        #expect(unreadable.stderr.contains("not.plan is not a storesh journal"))

        // A journal of a run that started is resumed or undone, not applied again.
        let started = try String(contentsOfFile: plan, encoding: .utf8) + "{\"applied\":0,\"result\":null}\n"
        let journal = try sandbox.write(started, to: "started.journal")
        let again = try sandbox.storesh.run(["apply", journal])
        #expect(again.status == 2)
        #expect(again.stderr.contains("is the journal of a run that has started"))
        #expect(try cacheControl("docs/0000") == "")
    }
}
