import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage

/// `storesh undo JOURNAL`: puts back the old values of what a run applied (rule X4).
struct Undo: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo",
        abstract: "Put back what a run on a real bucket applied, from its journal (--dry-run shows the plan first).",
        discussion: """
            Each object the run changed gets its metadata from before the run, guarded by the state the run left \
            it in: an object changed since is reported (precondition-failed) and not touched. An object the run \
            created is deleted. Content the run replaced or deleted on a gs:// bucket is restored from its \
            soft-deleted generation (objects.restore, rule B6), where the bucket's soft delete policy still keeps it; \
            elsewhere it cannot be put back (the journal keeps metadata, not content): those objects are listed. An \
            object the run moved (mv) is moved back (rule M10). The undo is journaled too. --dry-run checks each \
            generation it would restore and names those the bucket no longer keeps (exit 1, as the undo would fail).
            """)

    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The journal of the run to undo.", valueName: "journal"))
    var file: String

    /// `--dry-run`: print the plan of the undo and change nothing; `--keep-going`: go on past a change that fails
    /// (exit 1 if any failed). The root command's group (see PlanOptions).
    @OptionGroup var planOptions: PlanOptions

    /// `--quiet` (the same option group as the other commands', so that the flag reaches this command wherever it
    /// is written); `--bucket` is refused: the journal names its bucket.
    @OptionGroup(visibility: .hidden) var bucketOptions: BucketOptions

    func execute() async throws -> Session.Status {
        let context = RunContext(bucket: bucketOptions, output: outputOptions, apply: applyOptions, plan: planOptions)
        try context.refusePlan("undo")
        let journal = try readJournal(file, counting: context.progressMeter)
        if let given = context.bucket, given != journal.bucket {
            throw UsageError(
                "\(file) is a journal of \(journal.bucket), not \(given); undo works on the bucket its journal names.")
        }
        let (changes, impossible) = try JournalRecord.undo(journal, counting: context.progressMeter)
        // Its failures name the journal they come from, not the script the journal's run came from.
        let session = try await journalSession(journal, journalSource: "undo \(file)", sourceName: file, in: context)
        session.applySettings.replanAdvice =
            "an object another writer changed since the run is left as that writer made it (undo puts back only what is still as the run left it)"
        for (object, reason) in impossible.first {
            session.output.notice("cannot undo the change to \(object): \(reason)")
        }
        if impossible.count > impossible.first.count {
            session.output.notice(
                "… and \(MessageText.counted(impossible.count - impossible.first.count, "more change")) that cannot be undone, for the same reason"
            )
        }
        guard changes.count > 0 else {
            session.output.notice("nothing to undo: \(file) records no applied change that can be put back")
            return impossible.isEmpty ? .success : .failed
        }
        if context.dryRun {
            // Each deleted or replaced generation the undo would restore, checked now: one the bucket no longer
            // keeps is said, not shown as a restore that would fail.
            let missing = try await session.restoresNotPossible(in: changes)
            for (_, error) in missing.sorted(by: { $0.key < $1.key }).prefix(ChangesNotUndone.named) {
                session.output.notice("cannot undo: \(error.message)")
            }
            if missing.count > ChangesNotUndone.named {
                session.output.notice(
                    "… and \(MessageText.counted(missing.count - ChangesNotUndone.named, "more generation")) the bucket no longer keeps"
                )
            }
            try session.showPlan(changes, restoresChecked: missing)
            session.output.notice("dry run: nothing was changed")
            return missing.isEmpty && impossible.isEmpty ? .success : .failed
        }
        let status = await session.apply(changes)
        return impossible.isEmpty || status != .success ? status : .failed
    }
}

/// A session on the bucket a journal names, for resuming or undoing its run.
func journalSession(
    _ journal: JournalRecord.Contents, journalSource: String, sourceName: String? = nil, in context: RunContext
) async throws -> Session {
    storesh_install_interrupt_handler()
    let location = try BucketLocation.parse(journal.bucket, source: "the journal's bucket")
    let output = ConsoleOutput(json: context.json, source: SourceText(name: sourceName ?? journal.source, text: ""))
    return try context.session(on: try await context.open(location), output: output, journalSource: journalSource)
}
