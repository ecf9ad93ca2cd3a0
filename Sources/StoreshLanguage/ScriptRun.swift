import Foundation
import StoreshCore

/// How a script runs (contract, Scripts; rule X1): the transaction policy, apart from what each command does.
///
/// - On a bucket with transactions, a script is one transaction: everything lands at the end, or, when a
///   command fails, nothing does; with `--keep-going` each command is a step of its own, undone alone when it
///   fails.
/// - A dry run is a plan (`PlannedBucket`) on every backend: commands read the real bucket (in a reading
///   transaction where there is one, so the plan is made on one state of it), their changes are computed and
///   shown, and nothing is sent.
/// - On a bucket without transactions, each command's changes land as it runs.
extension Interpreter {
    /// How the statements of a script ended.
    struct ScriptEnd {
        var status: Status
        /// Whether the changes may land (no command failed, or `--keep-going`).
        var keep: Bool
        var failures: Int
        /// True when the run stopped before the end (an error without `--keep-going`, Ctrl-C): it has said why.
        var stoppedEarly: Bool
    }

    /// Rule B3: the first command that needs what the bucket cannot do, as an error made before anything runs.
    public func unsupported(_ script: Script) -> Diagnostic? {
        let missing = script.requiredCapabilities.subtracting(bucket.capabilities)
        guard !missing.isEmpty,
            let statement = script.statements.first(where: { !$0.command.declaration.requires.isDisjoint(with: missing) })
        else { return nil }
        let lacking = statement.command.declaration.requires.subtracting(bucket.capabilities)
        return .beforeRunning(
            .invalidArgument(
                "`\(statement.command.name)` needs a bucket with \(lacking.names.joined(separator: " and ")); gs://\(bucket.name) has none, so nothing ran."),
            at: statement.location)
    }

    /// Runs a whole script and says what was saved. A script that needs what the bucket cannot do runs nothing
    /// (`unsupported`).
    public func run(_ script: Script) async -> Status {
        if let refusal = unsupported(script) {
            output.error(refusal)
            return .usage
        }
        exitRan = false
        let status = await runPolicy(script)
        target = guarded(bucket)
        // A rolled-back `rules load` is undone in the bucket: the rules in force follow it.
        if let store = bucket.rulesStore { try? rules?.reloadRules(from: store) }
        return status
    }

    private func runPolicy(_ script: Script) async -> Status {
        let start = script.statements.first?.location ?? SourceLocation(line: 1, column: 1)
        guard let transactions = bucket.transactions else {
            let steps: (any BucketTransaction)? = options.dryRun ? PlannedBucket(over: bucket, clock: clock) : nil
            target = guarded(steps ?? bucket)
            let end = await runStatements(script, steps: steps, transactional: false)
            return conclude(end, script)
        }
        var began = false
        do {
            let forWriting = !options.dryRun && (script.changesBucket || options.snapshotBefore != nil)
            let end = try await transactions.withTransaction(forWriting: forWriting) { transaction -> TransactionOutcome<ScriptEnd> in
                began = true
                let steps: any BucketTransaction = options.dryRun ? PlannedBucket(over: transaction, clock: clock) : transaction
                target = guarded(steps)
                let end = await runStatements(script, steps: steps, transactional: true)
                return end.keep && !options.dryRun ? .commit(end) : .rollback(end)
            }
            return conclude(end, script)
        } catch {
            // Before the first command (the bucket could not be opened for the script), or at the commit.
            report(error, at: began ? script.statements.last?.location ?? start : start)
            return .failed
        }
    }

    /// After the transaction ended: what was saved.
    private func conclude(_ end: ScriptEnd, _ script: Script) -> Status {
        if end.stoppedEarly { return end.status }
        if options.dryRun {
            deliver(.note("dry run: nothing was saved"))
        } else if end.failures > 0 && script.changesBucket {
            output.notice(
                "\(MessageText.counted(end.failures, "command")) failed and changed nothing; the changes of the other \(MessageText.counted(script.statements.count - end.failures, "command")) were saved")
        }
        return end.failures == 0 ? .success : .failed
    }

    /// The statements in order, each as a step of `steps` with `--keep-going`.
    private func runStatements(_ script: Script, steps: (any BucketTransaction)?, transactional: Bool) async -> ScriptEnd {
        if let name = options.snapshotBefore {
            let start = SourceLocation(line: 1, column: 1)
            do {
                try await runSnapshot(.save(Word(name, at: start)), at: start)
            } catch {
                report(error, at: start)
                return ScriptEnd(status: .failed, keep: false, failures: 1, stoppedEarly: true)
            }
        }
        var failures = 0
        for statement in script.statements {
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
                    break
                }
            } catch {
                let diagnostic = report(error, at: statement.location)
                if diagnostic.phase == .interrupted {
                    return ScriptEnd(status: .interrupted, keep: false, failures: failures + 1, stoppedEarly: true)
                }
                failures += 1
                if options.keepGoing { continue }
                if options.dryRun {
                    deliver(.note("dry run: stopped at the error; nothing was saved"))
                } else if transactional && script.statements.count > 1 && script.changesBucket {
                    output.notice(
                        options.atPrompt
                            ? "nothing was saved: a line lands whole or not at all"
                            : "nothing was saved: a script lands whole or not at all (storesh run --keep-going keeps what succeeds)")
                }
                return ScriptEnd(status: .failed, keep: false, failures: failures, stoppedEarly: true)
            }
        }
        return ScriptEnd(status: failures == 0 ? .success : .failed, keep: true, failures: failures, stoppedEarly: false)
    }
}
