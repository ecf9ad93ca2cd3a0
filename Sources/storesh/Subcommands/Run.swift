import ArgumentParser
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import StoreshLocal

struct Run: StoreshCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a .store script: all of it lands, or (when a command fails) none of it.",
        discussion: """
            The script is parsed whole first: a syntax error anywhere runs nothing (exit 2). A script file may \
            start with #!/usr/bin/env -S storesh run.
            """)

    @OptionGroup var bucketOptions: BucketOptions
    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The script; - for standard input.", valueName: "file"))
    var file: String?

    @Option(
        help: ArgumentHelp(
            "Finish a run on a real bucket that was interrupted, from its journal: the changes not applied yet are sent, none twice.",
            valueName: "journal"))
    var resume: String?

    @OptionGroup var planOptions: PlanOptions

    @Flag(
        help:
            "Run nothing: explain each command, with the Firebase SDK call, the REST requests and the rules method it stands for."
    )
    var explain = false

    @Flag(
        help:
            "Print each command, after the prompt the shell would show, before its output: a lesson's script as its own transcript."
    )
    var echo = false

    @Option(
        help: ArgumentHelp(
            "Save a snapshot of the bucket under this name just before the script's first command (in the same transaction).",
            valueName: "name"))
    var snapshot: String?

    func validate() throws {
        if let snapshot {
            do {
                try SnapshotInfo.validate(name: snapshot)
            } catch {
                throw ValidationError("--snapshot: \(error.message)")
            }
        }
    }

    var context: RunContext {
        RunContext(bucket: bucketOptions, output: outputOptions, apply: applyOptions, plan: planOptions)
    }

    func execute() async throws -> Session.Status {
        if ProcessArguments.current.options.contains("-c") {
            throw UsageError("-c TEXT and run FILE each give the script; use one of them.")
        }
        let context = context
        if let resume {
            try context.refusePlan("run --resume")
            guard file == nil else {
                throw UsageError("run --resume JOURNAL finishes the journal's own plan; give no script with it.")
            }
            return try await resumeRun(resume, in: context)
        }
        guard let file else {
            throw UsageError("run needs a script file: storesh run FILE (or storesh run --resume JOURNAL).")
        }
        if explain { try context.refusePlan("run --explain") }
        let bytes = file == "-" ? standardInputScript() : try scriptBytes(at: file)
        return try await runScript(named: file, bytes: bytes, in: context) { options in
            options.snapshotBefore = snapshot
            options.explainOnly = explain
            options.echo = echo
        } open: {
            let opened = try await context.open()
            // A taken name, or a bucket without snapshots (rule B3), is a mistake in the command line: say so
            // before anything runs.
            if let snapshot {
                guard let store = opened.bucket.snapshotStore else {
                    throw UsageError("--snapshot \(snapshot): \(opened.bucket.url) keeps no snapshots.")
                }
                if try await store.snapshots().contains(where: { $0.name == snapshot }) {
                    throw UsageError(
                        "--snapshot \(snapshot): the bucket has a snapshot of that name already; choose another name, or remove it with storesh -c 'snapshot rm \(snapshot)'."
                    )
                }
            }
            return opened
        }
    }

    /// `run --resume JOURNAL`: the journal's plan, less what it records as applied, sent to its bucket; a change
    /// that landed unrecorded (the run was killed in between) is found by its planned state and not sent again.
    private func resumeRun(_ path: String, in context: RunContext) async throws -> Session.Status {
        let journal = try readJournal(path, counting: context.progressMeter) { origin throws(StorageError) in
            try FileContentSource(path: origin)
        }
        if let given = context.bucket, given != journal.bucket {
            throw UsageError(
                "\(path) is a journal of \(journal.bucket), not \(given); resume it without --bucket.")
        }
        if journal.end == ApplyOutcome.End.complete.rawValue {
            Diagnostics.notice("\(path): every change was applied already; nothing to resume")
            return .success
        }
        let session = try await journalSession(journal, journalSource: path, in: context)
        return await session.apply(journal.plan, journal: try JournalFile(appendingTo: path))
    }
}
