import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal

/// The fuzzer's check for accepted scripts: run as a dry run on `bucket`, a script must leave the bucket
/// exactly as it was (compared through its full export) and write no local file.
package struct DryRunCheck {
    let bucket: LocalBucket
    let files: LocalFiles
    let baseline: String

    package init(bucket: LocalBucket, files: LocalFiles) throws {
        self.bucket = bucket
        self.files = files
        var exported = ""
        try BucketArchive.export(bucket) { exported += $0 }
        self.baseline = exported
    }

    /// nil when the invariant holds, else what broke.
    package func callAsFunction(_ text: String) async -> String? {
        guard let script = try? Parser.parse(SourceText(name: "fuzz", text: text)) else {
            return "accepted, then rejected"
        }
        let interpreter = Session(
            bucket: bucket, output: DiscardedOutput(), files: files, options: RunOptions(dryRun: true))
        _ = await interpreter.run(script)
        var now = ""
        do {
            try BucketArchive.export(bucket) { now += $0 }
        } catch {
            return "the bucket could not be read after a dry run: \(error)"
        }
        return now == baseline ? nil : "a dry run changed the bucket"
    }
}

/// Output that is thrown away: the fuzzer checks effects, not text.
package final class DiscardedOutput: SessionOutput {
    package init() {}
    package func result(_ line: String) {}
    package func resultBytes(_ bytes: Data) {}
    package func error(_ diagnostic: Diagnostic) {}
    package func notice(_ text: String) {}
}
