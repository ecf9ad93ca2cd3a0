import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import StoreshLocal

/// `storesh copy SOURCE DEST`: a real bucket into a local file and back (or any kind into any other).
struct Copy: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract:
            "Copy the objects of one bucket into another (a bucket file, gs://NAME): content and every writable property.",
        discussion: """
            Each object is copied with its content, contentType, cacheControl, contentDisposition, contentEncoding, \
            contentLanguage and custom metadata (download tokens included); the destination gives it a generation \
            and times of its own. Objects the destination already holds as they are in the source are left alone, \
            so copying again sends only what changed. A bucket file that does not exist is created, named after the \
            source (gs://my-app.appspot.com copied into class.bucket stays gs://my-app.appspot.com). Into a bucket \
            file the copy is one transaction: all of it lands, or none (--keep-going keeps what could be copied). Into gs:// it is applied as a script's \
            changes are: each write guarded by what was read of the destination, --parallel at a time, journaled, \
            finished after an interruption with storesh run --resume JOURNAL. Contents are held in memory.
            """)

    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The bucket to copy from: a bucket file or gs://NAME.", valueName: "source"))
    var source: String

    @Argument(
        help: ArgumentHelp(
            "The bucket to copy into: a bucket file (created when missing) or gs://NAME.", valueName: "destination"))
    var destination: String

    @Option(help: ArgumentHelp("Copy only the objects under this folder (e.g. images/2024).", valueName: "folder"))
    var prefix: String?

    /// `--dry-run`: print what would be copied and write nothing; `--keep-going`: into a real bucket, go on past a
    /// change that fails (exit 1 if any failed). The group the root command declares too: a flag of the root's
    /// would otherwise take it from this command's arguments.
    @OptionGroup var planOptions: PlanOptions

    /// `--quiet` (the same option group as the other commands', so that the flag reaches this command wherever it
    /// is written); `--bucket` is refused: the buckets are the arguments.
    @OptionGroup(visibility: .hidden) var bucketOptions: BucketOptions

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions, output: outputOptions, apply: applyOptions, plan: planOptions)
        try context.refusePlan("copy")
        if context.bucket != nil {
            throw UsageError(
                "copy takes its buckets as arguments: storesh copy SOURCE DESTINATION (not --bucket).")
        }
        let from = try BucketLocation.parse(source, source: "copy's source")
        let to = try BucketLocation.parse(destination, source: "copy's destination")
        guard from.displayed != to.displayed else {
            throw UsageError("copy: the source and the destination are the same bucket, \(from.displayed).")
        }
        let folder = try Self.folderPrefix(prefix)
        storesh_install_interrupt_handler()
        let isCancelled: @Sendable () -> Bool = { storesh_interrupt_pending() != 0 }
        let clock = try context.makeClock()
        // A copy never creates what it reads.
        if case .file(let path) = from.kind, access(path, F_OK) != 0 {
            throw UsageError("copy: there is no bucket file \(path) to copy from.")
        }
        let sourceBucket = try await context.open(from, clock: clock).bucket
        // A dry run makes nothing, not even the destination's file: a file not there yet is an empty bucket.
        let opened: OpenedBucket?
        if context.dryRun, case .file(let path) = to.kind, access(path, F_OK) != 0 {
            opened = nil
        } else {
            opened = try await context.open(to, clock: clock, nameForNewBucket: sourceBucket.name)
        }
        let output = ConsoleOutput(json: context.json, source: SourceText(name: "copy", text: ""))
        let plan = try await BucketCopy.plan(
            from: sourceBucket, to: opened?.bucket, destinationName: opened?.bucket.name ?? sourceBucket.name,
            prefix: folder,
            parallel: context.parallel ?? ApplySettings.defaultParallel, isCancelled: isCancelled)
        let summary =
            "\(MessageText.counted(plan.changes.count, "object")) (\(plan.bytes) bytes) from \(from.displayed) to \(to.displayed)"
            + (plan.unchanged > 0 ? "; \(plan.unchanged) already there as they are" : "")
        guard let opened, !context.dryRun, plan.changes.count > 0 else {
            if context.json {
                output.result(try Self.document(plan, from: from, to: to, dryRun: true).serialized)
            } else {
                try plan.changes.forEachChange { _, change in
                    output.result(
                        "would copy \(MessageText.oneLine(change.object)) (\(change.after?.size ?? 0) B, \(change.after?.contentType ?? "no type"))"
                    )
                }
                output.notice(
                    plan.changes.count == 0
                        ? "nothing to copy: \(to.displayed) holds the \(MessageText.counted(plan.unchanged, "object")) of \(from.displayed)\(folder.isEmpty ? "" : " under \(folder)") as they are"
                        : "dry run: would copy \(summary)")
            }
            output.flush()
            return .success
        }
        // Into a bucket file: one transaction, all of it or none; into a real bucket: in parallel, journaled.
        // Copy is administration, as import is: the destination's security rules do not decide it.
        let session = try context.session(
            on: opened, output: output, journalSource: "copy \(from.displayed) \(to.displayed)", underRules: false)
        let status = await session.apply(plan.changes)
        if status == .success {
            if context.json {
                output.result(try Self.document(plan, from: from, to: to, dryRun: false).serialized)
            } else {
                output.notice("copied \(summary)")
            }
        }
        output.flush()
        return status
    }

    /// `images/2024` → `images/2024/`; the root is "".
    static func folderPrefix(_ prefix: String?) throws -> String {
        guard let prefix, !prefix.isEmpty else { return "" }
        let path = StoragePath(normalizing: prefix)
        guard !path.fullPath.isEmpty else { return "" }
        return path.fullPath + "/"
    }

    static func document(
        _ plan: BucketCopy.Plan, from: BucketLocation, to: BucketLocation, dryRun: Bool
    ) throws -> JSONValue {
        var copied: [JSONValue] = []
        try plan.changes.forEachChange { _, change in copied.append(.string(change.object)) }
        return .object([
            ("copied", .array(copied)), ("from", .string(from.displayed)),
            ("to", .string(to.displayed)), ("bytes", .integer(plan.bytes)),
            ("unchanged", .integer(Int64(plan.unchanged))),
            ("dryRun", .bool(dryRun)),
        ])
    }
}
