import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import StoreshLocal

/// `storesh apply PLAN`: applies the plan a dry run kept (`--dry-run --plan PLAN`), as it was reviewed.
struct Apply: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Apply a plan kept by a dry run (storesh --dry-run --plan FILE …) as it was reviewed.",
        discussion: """
            Each change is guarded by the state of the object when the plan was made: an object changed since is \
            refused (precondition-failed), never overwritten, and nothing is planned anew. On a local bucket the \
            plan is one transaction: all of it lands, or (when a change is refused) none of it, unless \
            --keep-going. On a real bucket it is applied as a run's plan is: in parallel, journaled (--journal), \
            resumable (run --resume JOURNAL) and undoable (undo JOURNAL). The plan file is not changed, and \
            --dry-run prints it.
            """)

    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The plan a dry run kept.", valueName: "plan"))
    var file: String

    /// `--dry-run` prints the plan; `--keep-going` applies what can be; `--plan` is refused (the group every
    /// command shares, see Copy).
    @OptionGroup var planOptions: PlanOptions

    /// `--quiet`, `--clock`; `--bucket` must name the plan's own bucket.
    @OptionGroup var bucketOptions: BucketOptions

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions, output: outputOptions, apply: applyOptions, plan: planOptions)
        try context.refusePlan("apply")
        // The plan file as it is read: the journal that starts as its copy must hold the same bytes.
        let read = FileIdentity(path: file)
        let kept = try readJournal(file, counting: context.progressMeter) { origin throws(StorageError) in
            try FileContentSource(path: origin)
        }
        let started = try kept.plan.outcomeCounts()
        if kept.end != nil || started.applied + started.failed > 0 {
            throw UsageError(
                "\(file) is the journal of a run that has started, not a plan to apply: finish it with storesh run --resume \(file), or put it back with storesh undo \(file)."
            )
        }
        let location = try BucketLocation.parse(kept.bucket, source: "the plan's bucket")
        if case .file(let path) = location.kind {
            guard access(path, F_OK) == 0 else {
                throw UsageError(
                    "\(file) is a plan for the bucket \(path), which does not exist (any longer); nothing was applied.")
            }
        }
        if let given = context.bucket {
            let givenLocation = try BucketLocation.parse(given, source: "--bucket")
            guard givenLocation.sameBucket(as: location) else {
                throw UsageError(
                    "\(file) is a plan for \(kept.bucket), not \(given); it applies to the bucket it was made on.")
            }
        }
        storesh_install_interrupt_handler()
        let output = ConsoleOutput(json: context.json, source: SourceText(name: file, text: ""))
        let session = try context.session(on: try await context.open(location), output: output, journalSource: file)
        if context.dryRun {
            try session.showPlan(kept.plan)
            output.notice("dry run of the plan \(file): nothing was changed")
            return .success
        }
        guard kept.plan.count > 0 else {
            output.notice("\(file) plans no change: nothing to apply")
            return .success
        }
        // A kept plan is a journal of a run not started: a real bucket's journal starts as its copy (the plan is
        // written once, by the dry run; `-` was read from standard input and is written again).
        if let read, file != "-" {
            let journal = context.journal
            let bucket = session.bucket.name
            session.applySettings.openJournal = { _ in
                try JournalFile(
                    copying: file, read: read, creating: journal ?? JournalFile.defaultPath(bucket: bucket))
            }
        }
        // Line 1 of a plan is its header; change N is on line N + 2.
        return await session.apply(kept.plan) { index, _ in SourceLocation(line: index + 2, column: 1) }
    }
}

extension BucketLocation {
    /// Whether two locations name one bucket: the same file (however its path is written), or the same URL.
    func sameBucket(as other: BucketLocation) -> Bool {
        switch (kind, other.kind) {
        case (.file(let first), .file(let second)):
            return first == second || RegularFile.isSameFile(first, second)
        default:
            return kind == other.kind
        }
    }
}
