import Foundation
import Testing
import StoreshCore
import StoreshFuzzing
import StoreshLanguage
import StoreshLocal

@Suite("Fuzzing (short run; scripts/fuzz runs 1,000,000 inputs)")
struct FuzzTests {
    @Test("random and mutated scripts: no crash, every rejection positioned, dry runs change nothing")
    func shortRun() async throws {
        let session = try Session(["a", "a/b", "a//b", "images/forest.jpg", "lonelyItem/"])
        var exported = ""
        try BucketArchive.export(session.bucket) { exported += $0 }
        let baseline = exported
        let bucket = session.bucket
        let files = session.files
        var fuzzer = ScriptFuzzer(seed: 2026) { text in
            guard let script = try? Parser.parse(SourceText(name: "fuzz", text: text)) else { return "accepted, then rejected" }
            let interpreter = Interpreter(bucket: bucket, output: CapturedOutput(), files: files, options: RunOptions(dryRun: true))
            _ = await interpreter.run(script)
            var now = ""
            do { try BucketArchive.export(bucket) { now += $0 } } catch { return "unreadable after a dry run: \(error)" }
            return now == baseline ? nil : "a dry run changed the bucket"
        }
        let report = await fuzzer.run(inputs: 20_000, interpretEvery: 50)
        #expect(report.failures == [])
        #expect(report.accepted > 1000 && report.rejected > 1000 && report.interpreted > 50)
        #expect(files.files.isEmpty, "a dry run wrote local files")
    }
}
