import Foundation
import StoreshCore
import StoreshExecution

/// How a script runs (contract, Scripts; rule X1): the transaction policy, apart from what each command does.
///
/// - On a bucket with transactions, a script is one transaction: everything lands at the end, or, when a
///   command fails, nothing does; with `--keep-going` each command is a step of its own, undone alone when it
///   fails.
/// - A dry run is a plan (`PlannedBucket`) on every backend: commands read the real bucket (in a reading
///   transaction where there is one, so the plan is made on one state of it), their changes are computed and
///   shown, and nothing is sent.
/// - On a bucket without transactions, each command's changes land as it runs.
extension Session {
    /// How the statements of a script ended.
    struct ScriptEnd {
        var status: Status
        /// Whether the changes may land (no command failed, or `--keep-going`).
        var keep: Bool
        var failures: Int
        /// How many of the failed commands were commands that change the bucket.
        var changingFailures = 0
        /// True when the run stopped before the end (an error without `--keep-going`, Ctrl-C): it has said why.
        var stoppedEarly: Bool
        /// A dry run's plan, kept (`--plan`): what happened, said once the run has concluded.
        var keptPlan: KeptPlan? = nil
    }

    /// What became of a dry run's plan that was to be kept.
    enum KeptPlan {
        case kept(path: String, changes: Int)
        case notKept(reason: String)
    }

    /// Keeps the plan of a dry run that ran to its end without failures, when the program asked (`--plan`).
    func keepPlan(_ plan: PlannedBucket, _ end: ScriptEnd, _ script: ScriptSummary) -> KeptPlan? {
        guard let keep = applySettings.keepPlan, options.dryRun else { return nil }
        if end.stoppedEarly || end.failures > 0 {
            return .notKept(
                reason:
                    "the plan was not kept: \(end.failures > 0 ? "a command failed" : "the run stopped early"), and a plan is kept only whole"
            )
        }
        // A kept plan holds object changes; one that would carry others too is not kept, rather than kept without them.
        if let beyond = plan.changesBeyondObjects {
            return .notKept(
                reason:
                    "the plan was not kept: it changes \(beyond), which a kept plan does not carry (it holds object changes only); run the script itself to make those changes"
            )
        }
        // Tokens are never written: a kept plan is applied as whoever `storesh apply` runs as, so one whose changes
        // the script's own `login` made is not kept (applied later, they would be made as someone else).
        if let changes = plan.changesSignedIn, let signIn = bucket.endUserSignIn,
            (changes.user as AnyObject?) !== (signIn.signedInUser as AnyObject?)
        {
            return .notKept(
                reason:
                    "the plan was not kept: its changes were planned as \(changes.who), signed in by the script, and a kept plan is applied as whoever storesh apply runs as (STORESH_ID_TOKEN for a user); sign in that way instead of with login"
            )
        }
        do {
            return .kept(path: try keep(plan.store), changes: plan.store.countedChanges)
        } catch {
            _ = report(error, at: script.lastLocation ?? SourceLocation(line: 1, column: 1))
            return .notKept(reason: "the plan was not kept (see the error above); the dry run changed nothing")
        }
    }

    /// Rule B3: the first command that needs what the bucket cannot do, as an error made before anything runs.
    package func unsupported(_ script: ScriptSummary) -> Diagnostic? {
        let missing = script.requiredCapabilities.subtracting(bucket.capabilities)
        // The first statement that needs any of them is the first to need one of them.
        guard !missing.isEmpty,
            let first = script.firstNeeding.first(where: { !$0.command.declaration.requires.isDisjoint(with: missing) })
        else { return nil }
        let lacking = first.command.declaration.requires.subtracting(bucket.capabilities)
        var refusal = Diagnostic.beforeRunning(
            .invalidArgument(
                "`\(first.command.name)` needs a bucket with \(lacking.names.joined(separator: " and ")); \(bucket.url) has none, so nothing ran."
            ),
            at: first.location)
        refusal.lineText = first.line
        return refusal
    }

    /// Runs a whole script and says what was saved. A script that needs what the bucket cannot do runs nothing
    /// (`unsupported`).
    package func run(_ script: Script) async -> Status {
        // `dry-run COMMAND` makes its line (its script) a dry run as a whole: never more saved than asked.
        let askedForDryRun = script.summary.asksForDryRun && !options.dryRun
        if askedForDryRun { options.dryRun = true }
        defer { if askedForDryRun { options.dryRun = false } }
        let summary = options.explainOnly ? script.summary.explained : script.summary
        if let refusal = unsupported(summary) {
            output.error(refusal)
            return .usage
        }
        exitRan = false
        reportedChanges = 0
        let identityBefore = rules?.identity
        let endUserBefore = bucket.endUserSignIn?.signedInUser
        // Only a script that puts rules in force (the commands that need rules administration) can roll them back.
        let rulesBefore =
            summary.requiredCapabilities.contains(.rulesAdministration) ? rules?.currentRules().origin : nil
        planned = nil
        let status = await runPolicy(script, summary)
        target = guarded(bucket)
        // A rolled-back `rules load` is undone in the bucket: the rules in force follow it, and a class is told
        // which rules are in force, not left believing the loaded ones are.
        if let store = bucket.rulesStore { try? rules?.reloadRules(from: store) }
        if let rules, status != .success, !options.keepGoing, !options.dryRun, let rulesBefore,
            rules.currentRules().origin == rulesBefore
        {
            output.notice(
                "the rules in force are still "
                    + (MessageText.rulesDescription(rulesBefore) ?? "those of \(rulesBefore)"))
        }
        // A `login` or `logout` is part of its line or script: undone with it when nothing of it lands (a failure
        // without --keep-going, or a dry run), and said so, since who is signed in decides every later request.
        let undoesSignIn = options.dryRun || (status != .success && !options.keepGoing)
        if let rules, rules.identity != identityBefore, undoesSignIn {
            rules.identity = identityBefore
            let now = identityBefore.map { "still signed in as \($0.uid)" } ?? "still signed out"
            output.notice("the \(options.atPrompt ? "line's" : "script's") sign-in was undone with it: \(now)")
        }
        // On a real bucket the sign-in is the bucket's (rule F1): put back the same way, whatever signed in or out.
        // A plan's `login` is the plan's: the bucket's own sign-in changes only when its changes are applied.
        let endUserAfter = planned.map(\.signedIn) ?? bucket.endUserSignIn?.signedInUser
        planned = nil
        if let signIn = bucket.endUserSignIn, undoesSignIn,
            (endUserAfter as AnyObject?) !== (endUserBefore as AnyObject?)
        {
            if (signIn.signedInUser as AnyObject?) !== (endUserBefore as AnyObject?) { signIn.restore(endUserBefore) }
            let now =
                endUserBefore.map { "still signed in as \($0.who)" }
                ?? "requests go with the bucket's own credentials again"
            output.notice("the \(options.atPrompt ? "line's" : "script's") sign-in was undone with it: \(now)")
        }
        return status
    }

    private func runPolicy(_ script: Script, _ summary: ScriptSummary) async -> Status {
        let start = summary.firstLocation ?? SourceLocation(line: 1, column: 1)
        guard let transactions = bucket.transactions else {
            if summary.changesBucket && !options.dryRun { return await planThenApply(script, summary) }
            let steps: PlannedBucket?
            do {
                steps = options.dryRun ? try PlannedBucket(over: bucket, clock: clock) : nil
            } catch {
                report(error, at: start)
                return .failed
            }
            target = guarded(steps ?? bucket)
            planned = steps
            let end = await runStatements(script, summary, steps: steps, transactional: false)
            return conclude(end, summary, keeping: steps)
        }
        var began = false
        do {
            let forWriting = !options.dryRun && (summary.changesBucket || options.snapshotBefore != nil)
            let end = try await transactions.withTransaction(forWriting: forWriting) {
                transaction -> TransactionOutcome<ScriptEnd> in
                began = true
                let steps: any BucketTransaction =
                    options.dryRun ? try PlannedBucket(over: transaction, clock: clock) : transaction
                target = guarded(steps)
                var end = await runStatements(script, summary, steps: steps, transactional: true)
                // A dry run's plan lives as long as its planned bucket: kept (`--plan`) before the transaction ends.
                if let plan = steps as? PlannedBucket { end.keptPlan = keepPlan(plan, end, summary) }
                return end.keep && !options.dryRun ? .commit(end) : .rollback(end)
            }
            return conclude(end, summary)
        } catch {
            // Before the first command (the bucket could not be opened for the script), or at the commit.
            report(error, at: began ? summary.lastLocation ?? start : start)
            return .failed
        }
    }

    /// A script that changes a bucket without transactions (rule X1): planned whole against the real bucket,
    /// nothing written; then, when no command failed (or with `--keep-going`), the plan's changes are applied
    /// with preconditions, in parallel, journaled.
    private func planThenApply(_ script: Script, _ summary: ScriptSummary) async -> Status {
        let plan: PlannedBucket
        do {
            plan = try PlannedBucket(over: bucket, clock: clock)
        } catch {
            report(error, at: summary.firstLocation ?? SourceLocation(line: 1, column: 1))
            return .failed
        }
        target = guarded(plan)
        planned = plan
        // What the commands print is held until their changes have landed: a line says what happened, never what
        // was only planned (an interrupted apply did not update the objects its command's lines count).
        let held = HeldResults(output)
        output = held
        let end = await runStatements(script, summary, steps: plan, transactional: true)
        output = held.output
        if end.stoppedEarly || !end.keep { return end.status }
        // The script's sign-in is the bucket's from now on: its changes are made as the user who planned them,
        // and once they are applied whoever the script left signed in stays.
        let signIn = bucket.endUserSignIn
        guard plan.changeCount > 0 else {
            signIn?.restore(plan.signedIn)
            held.release()
            return conclude(end, summary)
        }
        if let changesSignedIn = plan.changesSignedIn { signIn?.restore(changesSignedIn.user) }
        defer { signIn?.restore(plan.signedIn) }
        // A change's step is the number of the statement that planned it: read again to say where it was written.
        let applied = await apply(
            plan.store, held: held,
            describeStep: { step in
                script.statement(step).map { statement in
                    PlannedCommand(
                        location: statement.location,
                        text: statement.text.isEmpty ? statement.command.header : statement.text)
                }
            }
        ) { _, change in
            script.location(ofStatement: change.step) ?? SourceLocation(line: 1, column: 1)
        }
        return applied == .success ? conclude(end, summary) : applied
    }

    /// Applies planned changes to the session's bucket and says how it went: a script's plan on a bucket without
    /// transactions, a plan a dry run kept (`storesh apply PLAN`), an undo, a resumed run, a copy. Each change is
    /// guarded by the state it was planned from, so that an object changed since is refused, never overwritten
    /// (rule G5), and each failure names its object.
    ///
    /// On a bucket with transactions the plan is one transaction: all of it lands or, when a change fails (without
    /// `--keep-going`), none of it. Elsewhere it is applied in parallel and journaled (rules X2–X5): a run that did
    /// not apply everything says what was and was not applied, and where the journal is (`journal`: the journal of
    /// a resumed run, written on; otherwise `applySettings` opens a new one).
    ///
    /// `locate` places a failed change (by its number and the change) in what the user gave: the command of the
    /// script that planned it, or the line of a kept plan.
    ///
    /// `held`: the results of the script that planned the changes, printed once every change has landed (and
    /// dropped otherwise); `describeStep` names the command that planned a step's changes, for what an
    /// incomplete run says landed of each.
    package func apply(
        _ plan: PlanStore, journal given: (any ApplyJournal)? = nil,
        locate: (Int, PlannedChange) -> SourceLocation = { _, _ in SourceLocation(line: 1, column: 1) }
    ) async -> Status {
        await apply(plan, journal: given, held: nil, describeStep: nil, locate: locate)
    }

    func apply(
        _ plan: PlanStore, journal given: (any ApplyJournal)? = nil, held: HeldResults?,
        describeStep: ((Int) -> PlannedCommand?)?,
        locate: (Int, PlannedChange) -> SourceLocation
    ) async -> Status {
        if given == nil, let transactions = bucket.transactions {
            return await applyInOneTransaction(plan, transactions, locate: locate)
        }
        let journal: (any ApplyJournal)?
        do {
            journal = try given ?? applySettings.openJournal?(plan)
        } catch {
            report(error, at: SourceLocation(line: 1, column: 1))
            output.notice("nothing was applied: the journal could not be written")
            return .failed
        }
        if !bucket.guardsChanges {
            output.notice(Self.unguardedChanges)
        }
        let applier = PlanApplier(
            bucket: bucket, plan: plan, parallel: options.parallel, batchSize: options.batchSize,
            keepGoing: options.keepGoing, journal: journal,
            isCancelled: isCancelled, progress: applySettings.progress)
        let outcome = await applier.apply(resumed: given != nil)
        applySettings.progressEnded?()
        reportFailures(of: outcome, in: plan, journal: journal, locate: locate)
        let total = plan.countedChanges
        let where_ = journal.map { " (journal: \($0.location))" } ?? ""
        switch outcome.end {
        case .complete:
            held?.release()
            if outcome.landedOtherwiseCount > 0 {
                // Every change was sent and answered, but the bucket did not keep some as asked: not a success.
                output.notice(
                    "applied \(MessageText.counted(total, "change")) to \(bucketLocation)\(where_); \(MessageText.grouped(outcome.landedOtherwiseCount)) of them landed otherwise than planned (above)"
                )
                return .failed
            }
            // At the prompt a line's single change needs no notice: its result said it.
            if !options.atPrompt || total > 1 {
                output.notice("applied \(MessageText.counted(total, "change")) to \(bucketLocation)\(where_)")
            }
            return .success
        case .stopped, .interrupted, .finishedWithFailures:
            let why =
                outcome.end == .interrupted
                ? "interrupted"
                : outcome.end == .stopped
                    ? "stopped at the first failure (--keep-going goes on past failures)" : "some changes failed"
            var lines = [
                "\(why): applied \(MessageText.grouped(outcome.applied)) of \(MessageText.counted(total, "change")); \(MessageText.grouped(outcome.failed)) failed, \(MessageText.grouped(outcome.notSent)) not sent"
            ]
            let byCommand = describeStep.map { describe in landedByCommand(plan, describe) } ?? (shown: [], more: 0)
            if options.json {
                // Standard error holds only errors as JSON: what landed is this run's one result document.
                output.result(
                    Self.incompleteApplyDocument(
                        outcome, total: total, journal: journal?.location, byCommand: byCommand.shown,
                        more: byCommand.more
                    ).serialized)
                return outcome.end == .interrupted ? .interrupted : .failed
            }
            lines += byCommand.shown.map { step, command in
                let failed = step.failed > 0 ? ", \(MessageText.grouped(step.failed)) failed" : ""
                return
                    "  \(command.map(Self.describe) ?? "command \(step.step + 1)"): applied \(MessageText.grouped(step.applied)) of \(MessageText.counted(step.planned, "change"))\(failed)"
            }
            if byCommand.more > 0 {
                lines.append(
                    "  … and \(MessageText.counted(byCommand.more, "more command")) (the journal lists each change)")
            }
            if let journal {
                // Resuming helps what was not sent or met a passing fault; an object that changed meanwhile or was
                // refused needs a new plan.
                if outcome.notSent > 0 || outcome.hasPassingFailures {
                    lines.append("finish with: storesh run --resume \(journal.location)")
                }
                if outcome.hasLastingFailures {
                    lines.append(
                        "a change refused or overtaken by another writer is not resumed: \(applySettings.replanAdvice)")
                }
                if outcome.applied > 0 {
                    lines.append("put back what was applied with: storesh undo \(journal.location)")
                }
            }
            for line in lines { output.notice(line) }
            return outcome.end == .interrupted ? .interrupted : .failed
        }
    }

    /// What landed of each command's changes, when the plan holds more than one command's (the first
    /// `commandsShownLanded`, and how many more): the results the commands printed while planning were not
    /// released, so this is what the run says of each.
    private func landedByCommand(
        _ plan: PlanStore, _ describeStep: (Int) -> PlannedCommand?
    ) -> (shown: [(PlanStore.StepOutcome, PlannedCommand?)], more: Int) {
        guard let (steps, stepCount) = try? plan.outcomesByStep(limit: Self.commandsShownLanded), stepCount > 1 else {
            return ([], 0)
        }
        return (steps.map { ($0, describeStep($0.step)) }, stepCount - steps.count)
    }

    /// `line 3, column 12 (meta set …)`: where a command is, and what it says.
    static func describe(_ command: PlannedCommand) -> String {
        let place =
            command.location.column > 1
            ? "line \(command.location.line), column \(command.location.column)" : "line \(command.location.line)"
        return "\(place) (\(MessageText.oneLine(command.text)))"
    }

    /// An incomplete apply as JSON: why it ended, its counts, its journal, and what landed of each command.
    static func incompleteApplyDocument(
        _ outcome: ApplyOutcome, total: Int, journal: String?, byCommand: [(PlanStore.StepOutcome, PlannedCommand?)],
        more: Int
    ) -> JSONValue {
        let end = outcome.end == .interrupted ? "interrupted" : outcome.end == .stopped ? "stopped" : "failed"
        let commands: [JSONValue] = byCommand.map { step, command in
            .object(
                (command.map {
                    [
                        ("line", .integer(Int64($0.location.line))), ("column", .integer(Int64($0.location.column))),
                        ("command", .string($0.text)),
                    ]
                } ?? [])
                    + [
                        ("planned", .integer(Int64(step.planned))), ("applied", .integer(Int64(step.applied))),
                        ("failed", .integer(Int64(step.failed))),
                    ])
        }
        return .object([
            ("incomplete", .string(end)), ("changes", .integer(Int64(total))),
            ("applied", .integer(Int64(outcome.applied))),
            ("failed", .integer(Int64(outcome.failed))), ("notSent", .integer(Int64(outcome.notSent))),
            ("journal", journal.map(JSONValue.string) ?? .null), ("commands", .array(commands)),
            ("moreCommands", .integer(Int64(more))),
        ])
    }

    /// The commands whose landed changes an incomplete run lists one by one.
    static let commandsShownLanded = 20

    /// Each failed change (the first `ApplyOutcome.shownFailures`) as an error at its place, then how many more.
    private func reportFailures(
        of outcome: ApplyOutcome, in plan: PlanStore, journal: (any ApplyJournal)?,
        locate: (Int, PlannedChange) -> SourceLocation
    ) {
        for failure in outcome.failures {
            let change = try? plan.change(failure.index)
            output.error(
                Diagnostic.running(
                    failure.error, at: change.map { locate(failure.index, $0) } ?? SourceLocation(line: 1, column: 1)))
        }
        if outcome.failed > outcome.failures.count {
            output.notice(
                "… and \(MessageText.grouped(outcome.failed - outcome.failures.count)) more failures\(journal.map { " (the journal \($0.location) lists each)" } ?? "")"
            )
        }
        // Applied, but not as planned: the bucket's answer says so, and the results printed from the plan would not.
        for (object, differences) in outcome.landedOtherwise {
            let said = differences.map { "\($0.key) is \(Self.quoted($0.old)) (planned \(Self.quoted($0.new)))" }
            output.notice("\(MessageText.name(object)) landed otherwise than planned: \(said.joined(separator: ", "))")
        }
        if outcome.landedOtherwiseCount > outcome.landedOtherwise.count {
            output.notice(
                "… and \(MessageText.counted(outcome.landedOtherwiseCount - outcome.landedOtherwise.count, "more change")) landed otherwise than planned\(journal.map { " (the journal \($0.location) has each result)" } ?? "")"
            )
        }
    }

    private static func quoted(_ value: String?) -> String {
        value.map { "\"\(MessageText.oneLine($0))\"" } ?? "not set"
    }

    /// `apply` on a bucket with transactions: the whole plan in one transaction, through the session's rules.
    private func applyInOneTransaction(
        _ plan: PlanStore, _ transactions: any TransactionalBucket, locate: (Int, PlannedChange) -> SourceLocation
    ) async -> Status {
        let total = plan.countedChanges
        do {
            return try await transactions.withTransaction(forWriting: true) {
                transaction -> TransactionOutcome<Status> in
                let applier = PlanApplier(
                    bucket: guarded(transaction), plan: plan, parallel: 1, batchSize: 1, keepGoing: options.keepGoing,
                    journal: nil,
                    isCancelled: isCancelled, progress: applySettings.progress)
                let outcome = await applier.apply()
                applySettings.progressEnded?()
                reportFailures(of: outcome, in: plan, journal: nil, locate: locate)
                let changedSince =
                    outcome.hasLastingFailures
                    ? "; an object changed since the plan was made is refused, not overwritten: make the plan again (the dry run) and review it"
                    : ""
                switch outcome.end {
                case .complete:
                    output.notice("applied \(MessageText.counted(total, "change")) to \(bucketLocation)")
                    return .commit(.success)
                case .finishedWithFailures where options.keepGoing:
                    output.notice(
                        "applied \(MessageText.grouped(outcome.applied)) of \(MessageText.counted(total, "change")) to \(bucketLocation); \(MessageText.grouped(outcome.failed)) failed and were left as they are\(changedSince)"
                    )
                    return .commit(.failed)
                case .interrupted:
                    output.notice(
                        "interrupted: nothing was applied (the plan is one transaction); the bucket is as it was")
                    return .rollback(.interrupted)
                default:
                    output.notice(
                        "nothing was applied: the plan is one transaction, and a change failed (--keep-going applies the others)\(changedSince)"
                    )
                    return .rollback(.failed)
                }
            }
        } catch {
            _ = report(error, at: SourceLocation(line: 1, column: 1))
            return .failed
        }
    }

    /// Rule F1: the plan of a run through an API without preconditions says what that means.
    static let unguardedChanges =
        "the Firebase v0 API has no preconditions: each object is read just before it is changed, which narrows but does not close the window in which a change made meanwhile by someone else could be overwritten"

    /// After the transaction ended: what was saved. `keeping`: a dry run's plan not kept yet (no transaction).
    private func conclude(_ end: ScriptEnd, _ script: ScriptSummary, keeping plan: PlannedBucket? = nil) -> Status {
        var end = end
        if let plan { end.keptPlan = keepPlan(plan, end, script) }
        var status: Status = end.failures == 0 ? .success : .failed
        if end.stoppedEarly {
            status = end.status
        } else if options.dryRun {
            if !(planned ?? bucket).guardsChanges && script.changesBucket { output.notice(Self.unguardedChanges) }
            if end.failures > 0 {
                output.notice(
                    "\(MessageText.counted(end.failures, "command")) failed; the plan above shows what the others would change"
                )
            }
            // A line that could not change anything (`ls` in a `storesh --dry-run` session) has nothing to not save.
            if script.changesBucket { deliver(.note("dry run: nothing was saved")) }
        } else if end.failures > 0 && script.changesBucket {
            // Only commands that change the bucket count among those whose changes were saved (not `echo`, `ls`).
            let others = script.changingStatementCount - end.changingFailures
            output.notice(
                "\(MessageText.counted(end.failures, "command")) failed and changed nothing; "
                    + (others > 0
                        ? (others == 1
                            ? "the changes of the other command that changes the bucket were saved"
                            : "the changes of the other \(MessageText.counted(others, "command")) that change the bucket were saved")
                        : "no other command changes the bucket"))
        }
        switch end.keptPlan {
        case .kept(let path, let changes)?:
            output.notice(
                changes == 0
                    ? "the plan has no change; kept in \(path) all the same"
                    : "plan of \(MessageText.counted(changes, "change")) kept in \(path): review it, then apply it with: storesh apply \(path)"
            )
        case .notKept(let reason)?:
            output.notice(reason)
            // Asked to keep the plan and did not: not a success, even when every command ran.
            if status == .success { status = .failed }
        case nil:
            break
        }
        return status
    }

    /// A statement as the run takes it: without its `dry-run` prefix (the run is then a dry run as a whole); with
    /// `run --explain`, explained instead of run. A `cd` is explained and also run, so that the paths of the
    /// commands after it are the script's.
    private func prepared(_ statement: Statement) -> [Statement] {
        var statement = statement
        if let dryRun = statement.command as? DryRunCommand { statement.command = dryRun.planned }
        guard options.explainOnly, !(statement.command is ExplainCommand) else { return [statement] }
        let explanation = Statement(
            ExplainCommand(statement.command, text: "line \(statement.location.line): \(statement.command.header)"),
            at: statement.location)
        return statement.command is CdCommand ? [explanation, statement] : [explanation]
    }

    /// The statements in order, each as a step of `steps` with `--keep-going`.
    private func runStatements(
        _ script: Script, _ summary: ScriptSummary, steps: (any BucketTransaction)?, transactional: Bool
    ) async -> ScriptEnd {
        if let name = options.snapshotBefore {
            let start = SourceLocation(line: 1, column: 1)
            do {
                _ = try await SnapshotSaveCommand(Word(name, at: start)).run(in: self, at: start)
            } catch {
                report(error, at: start)
                return ScriptEnd(status: .failed, keep: false, failures: 1, stoppedEarly: true)
            }
        }
        var failures = 0
        var changingFailures = 0
        var statements = script.statements()
        reading: while true {
            // The statement's number is its step: a failed change is traced back to where it was written.
            let number = statements.number
            let written: Statement
            do {
                guard let next = try statements.next() else { break }
                written = next
            } catch {
                // The script could not be read again as it was checked: nothing of it may land.
                var error = error
                error.phase = .running
                output.error(error)
                return ScriptEnd(status: .failed, keep: false, failures: failures + 1, stoppedEarly: true)
            }
            for statement in prepared(written) {
                if let plan = steps as? PlannedBucket {
                    plan.step = number
                    // The last statement of a dry run whose plan is not kept: its uniform update may be previewed.
                    plan.previewsUniformUpdates =
                        options.dryRun && applySettings.keepPlan == nil && number == summary.statementCount - 1
                }
                if isCancelled() {
                    output.error(Diagnostic.running(Self.interruption, at: statement.location))
                    return ScriptEnd(status: .interrupted, keep: false, failures: failures, stoppedEarly: true)
                }
                do {
                    let flow: Flow
                    if options.keepGoing, let steps {
                        flow = try await steps.withSavepoint { try await self.execute(statement) }
                    } else {
                        flow = try await execute(statement)
                    }
                    if flow == .exit {
                        exitRan = true
                        break reading
                    }
                } catch {
                    let diagnostic = report(error, at: statement.location)
                    if diagnostic.phase == .interrupted {
                        return ScriptEnd(status: .interrupted, keep: false, failures: failures + 1, stoppedEarly: true)
                    }
                    failures += 1
                    if statement.command.changesBucket { changingFailures += 1 }
                    if options.keepGoing { continue }
                    if options.dryRun {
                        deliver(.note("dry run: stopped at the error; nothing was saved"))
                    } else if output is HeldResults {
                        // Planned, not sent: the held results are dropped and nothing was sent.
                        output.notice(
                            options.atPrompt
                                ? "nothing was sent to \(bucketLocation): a line is planned whole before any change is sent"
                                : "nothing was sent to \(bucketLocation): a script is planned whole before any change is sent (--keep-going sends what succeeds)"
                        )
                    } else if transactional && reportedChanges > 0 {
                        // Changes were reported before the failure, and did not land: say so, with how many. (A line
                        // that changed nothing before it failed has nothing to take back, and says nothing more.)
                        let undone =
                            "the \(MessageText.counted(reportedChanges, "change")) reported above \(reportedChanges == 1 ? "was" : "were") undone"
                        output.notice(
                            options.atPrompt
                                ? "nothing was saved: a line lands whole or not at all; \(undone)"
                                : "nothing was saved: a script lands whole or not at all; \(undone) (--keep-going keeps what succeeds)"
                        )
                    }
                    return ScriptEnd(status: .failed, keep: false, failures: failures, stoppedEarly: true)
                }
            }
        }
        return ScriptEnd(
            status: failures == 0 ? .success : .failed, keep: true, failures: failures,
            changingFailures: changingFailures, stoppedEarly: false)
    }
}

extension Session {
    /// Prints planned changes as a dry run prints them (`storesh undo --dry-run`): each object, each property
    /// old → new; deletions by name.
    /// The restores of soft-deleted generations that `plan` would send (rule B6), each checked against the bucket
    /// now: those whose generation it no longer keeps (restored or deleted for good since, or never kept: a bucket
    /// without a soft delete policy), by change number, with the bucket's words. A dry run says them, and shows the
    /// others as what they are: kept, so restorable. Read a page of the plan at a time, a few generations at once.
    package func restoresNotPossible(in plan: PlanStore) async throws -> [Int: StorageError] {
        guard let versions = bucket.objectVersions else { return [:] }
        let url = bucket.url
        var missing: [Int: StorageError] = [:]
        var next = 0
        // Bounded: each page moves `next` on, and the plan ends.
        while true {
            let page = try plan.pending(from: next, limit: 256)
            guard let following = page.next else { break }
            next = following
            let restores = page.changes.compactMap { pending in
                pending.change.restoresGeneration.map { (pending.index, pending.change.object, $0) }
            }
            try await withThrowingTaskGroup(of: (Int, StorageError?).self) { group in
                var started = 0
                for (index, object, generation) in restores {
                    if started >= 16, let (done, error) = try await group.next() { missing[done] = error }
                    started += 1
                    group.addTask {
                        let name = try ObjectName(object)
                        if case .version = generation {
                            // An S3 version, restored by a copy of it while the bucket keeps it (rule S2).
                            do {
                                _ = try await versions.metadata(of: name, generation: generation)
                                return (index, nil)
                            } catch let error as StorageError where error.code == .objectNotFound {
                                return (index, error)
                            }
                        }
                        do {
                            _ = try await versions.softDeletedMetadata(of: name, generation: generation)
                            return (index, nil)
                        } catch let error as StorageError where error.code == .objectNotFound {
                            // Kept otherwise: as a noncurrent generation (versioning was on), which no restore takes.
                            guard let kept = try? await versions.metadata(of: name, generation: generation),
                                kept.timeDeleted != nil
                            else {
                                return (index, error)
                            }
                            return (
                                index,
                                StorageError(
                                    .objectNotFound,
                                    "\(url) keeps generation \(generation) of \(MessageText.name(object)) as a noncurrent generation (versioning), not soft-deleted, and a restore takes only soft-deleted ones: get \(MessageText.oneLine(object))#\(generation) FILE, then put FILE \(MessageText.oneLine(object)), brings its content back."
                                )
                            )
                        }
                    }
                }
                for try await (done, error) in group { missing[done] = error }
            }
            if isCancelled() {
                throw StorageError(
                    .cancelled, "Interrupted while checking which deleted generations the bucket still keeps.")
            }
        }
        return missing.compactMapValues { $0 }
    }

    /// Shows what `plan` would do. `restoresChecked`: its restores were checked (`restoresNotPossible`), and those
    /// it names are left out; the others are kept, so each is said without doubt.
    package func showPlan(_ plan: PlanStore, restoresChecked: [Int: StorageError]? = nil) throws {
        var shown = options
        shown.dryRun = true
        // Updates first, then deletions, each printed as it is read from the plan.
        let updates = BulkResults(.updates, output: output, options: shown, progress: progress)
        try plan.forEachChange { _, change in
            if let before = change.before, let after = change.after, !change.writesContent {
                updates.updated(change.object, before.differences(to: after))
            }
        }
        if updates.updatedCount > 0 { updates.finish(single: true) }
        let deletions = BulkResults(.deletions, output: output, options: shown, progress: progress)
        try plan.forEachChange { _, change in
            // The source leaving in a move is said with its move.
            if change.before != nil && change.after == nil && change.movedTo == nil { deletions.deleted(change.object) }
        }
        if deletions.deletedCount > 0 { deletions.finish(single: true) }
        // Writes (put, copy) and restores of soft-deleted generations (rule B6): each with its size, then how many.
        var (writes, restores, moves) = (0, 0, 0)
        try plan.forEachChange { index, change in
            guard change.writesContent, let after = change.after else { return }
            let size = MessageText.counted(Int(after.size), "byte")
            if let origin = change.movesFrom {
                moves += 1
                if !options.summaryOnly && !options.json {
                    output.result(
                        "would move \(MessageText.oneLine(origin)) to \(MessageText.oneLine(change.object)) (\(size))")
                }
                return
            }
            if let generation = change.restoresGeneration {
                if restoresChecked?[index] != nil { return }
                restores += 1
                if !options.summaryOnly && !options.json {
                    let kept = if case .version = generation { "kept" } else { "kept soft-deleted" }
                    let doubt = restoresChecked == nil ? ", if it is still \(kept)" : ""
                    output.result(
                        "would restore \(MessageText.oneLine(change.object))#\(generation) (\(size)) as the live object\(doubt)"
                    )
                }
                return
            }
            writes += 1
            if !options.summaryOnly && !options.json {
                output.result("would write \(MessageText.oneLine(change.object)) (\(size))")
            }
        }
        if writes > 0 && !options.json { output.result("would write \(MessageText.counted(writes, "object"))") }
        if restores > 0 && !options.json { output.result("would restore \(MessageText.counted(restores, "object"))") }
        if moves > 0 && !options.json { output.result("would move \(MessageText.counted(moves, "object"))") }
    }
}

/// A command of a script that planned changes: where it is and what it says (what an incomplete run says landed of
/// each).
struct PlannedCommand {
    var location: SourceLocation
    var text: String
}
