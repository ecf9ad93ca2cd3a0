import Foundation
import StoreshCore
import StoreshFuzzing
import StoreshLanguage
import StoreshLocal
import Testing

@Suite("Fuzzing (short run; scripts/fuzz runs 1,000,000 inputs)", .tags(.fuzzing))
struct FuzzTests {
    @Test("random and mutated scripts: no crash, every rejection positioned, dry runs change nothing")
    func shortRun() async throws {
        let session = try LanguageSandbox(["a", "a/b", "a//b", "images/forest.jpg", "lonelyItem/"])
        let check = try DryRunCheck(bucket: session.bucket, files: session.files)
        var fuzzer = ScriptFuzzer(seed: 2026) { await check($0) }
        let report = await fuzzer.run(inputs: 20_000, interpretEvery: 50)
        #expect(report.failures == [])
        #expect(report.accepted > 1000 && report.rejected > 1000 && report.interpreted > 50)
        #expect(session.files.files.isEmpty, "a dry run wrote local files")
    }
}

extension Tag {
    /// A fuzz run: scripts/test runs these in a step of their own (every suite named *FuzzTests*), after the rest.
    @Tag static var fuzzing: Self
}
