import ArgumentParser
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

/// `storesh reset`: between two classes, the default bucket as new (the teaching sample, the open rules); with
/// `--bucket FILE`, that bucket emptied. Snapshots are kept, so a reset can itself be undone with
/// `snapshot restore`.
struct Reset: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract:
            "Bring the default bucket back to the teaching sample, open rules included; with --bucket FILE, empty that bucket.",
        discussion: """
            The objects are replaced in one transaction, then the rules; snapshots are kept (snapshot restore \
            NAME brings the objects back). Emptying another bucket file asks first on a terminal, and needs --yes otherwise.
            """)

    @OptionGroup var bucketOptions: BucketOptions

    @Flag(help: "Empty a bucket file other than the default one without asking.")
    var yes = false

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions)
        let location = try context.location()
        try location.refuseRemote(
            "storesh reset resets local bucket files",
            instead: "A real bucket's objects are deleted with rm (a script, planned and journaled).")
        let clock = try context.makeClock()
        // The default bucket named by its path is still the default bucket: reset it to the sample, not empty it.
        let isDefault = location.isDefault || RegularFile.isSameFile(location.path, BucketLocation.defaultPath())
        let sample: [ArchivedObject]
        if isDefault {
            sample = try BucketArchive.parse(Data(PackageResources.teaching_json), source: "teaching sample").objects
        } else {
            guard access(location.path, F_OK) == 0 else {
                throw UsageError(
                    "There is no bucket file \(location.path) to reset; the default bucket is reset without --bucket.")
            }
            sample = []
        }
        let bucket = try location.open(clock: clock, quiet: true, keepingClockAfterChanges: false)
        _ = OpenBuckets.shared.keep(bucket)
        let count = try bucket.objectCount()
        if !isDefault && !yes {
            let question =
                "Empty \(bucket.url) (\(location.path)): delete its \(MessageText.counted(count, "object")) and put back the open rules?"
            guard isatty(STDIN_FILENO) != 0 else {
                throw UsageError("\(question) Give --yes to do so without a terminal to ask at.")
            }
            Diagnostics.ask("\(question) Type yes to go on:")
            let answer = readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "yes" || answer == "y" else {
                Diagnostics.notice("not yes: nothing was changed.")
                return .failed
            }
        }
        try bucket.importObjects(sample, replacingEverything: true)
        try bucket.storeRules(source: RulesEngine.openRules, origin: RulesEngine.openRulesOrigin)
        let what =
            isDefault
            ? "reset the default bucket \(bucket.url) to the teaching sample (\(MessageText.counted(sample.count, "object"))) with open rules"
            : "emptied \(bucket.url) (\(MessageText.counted(count, "object")) deleted) and put back the open rules"
        if !context.quiet {
            Diagnostics.notice("\(what), at \(bucket.path); its snapshots are kept.")
        }
        return .success
    }
}
