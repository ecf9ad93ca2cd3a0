import StoreshCore

/// `rm [--raw] [--where F]… TARGET…`: deletes objects; targets may be patterns.
package struct RmCommand: LanguageCommand, Equatable {
    package var targets: [Word]
    package var raw: Bool
    package var filters: [MetadataFilter]

    package init(targets: [Word], raw: Bool = false, filters: [MetadataFilter] = []) {
        self.targets = targets
        self.raw = raw
        self.filters = filters
    }

    package static let declaration = CommandDeclaration(
        "rm", group: .content, usage: "rm [--raw] [--where F]… TARGET…",
        summary: "delete objects; targets may be patterns",
        details: [
            "--raw takes each TARGET as an exact object name: no normalising, no patterns.",
            "--where F keeps the targets whose metadata pass F, as in meta set.",
        ],
        example: "rm --where 'custom.draft exists' files/uid/*",
        options: ["--raw", "--where"], changesBucket: true, patterns: .targets, completion: .objects,
        sdk: ["delete()"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        (targets, filters) = try arguments.targetsAndFilters()
        guard !targets.isEmpty else {
            throw Diagnostic.syntax(
                "`rm` needs at least one TARGET: rm [--raw] [--where F] TARGET…", at: arguments.afterName)
        }
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let results = BulkResults(
            .deletions, output: session.output, options: session.options, progress: session.progress)
        var (held, retained) = (0, 0)
        let matched = try await session.forEachTarget(targets, raw: raw, filters: filters, at: here) { object in
            // A hold or a retention refuses the delete (rule M9): each such object found is named, and the walk goes
            // on, so that one run (a dry run above all) names them all before the command fails. A pattern's match is
            // known kept from its scan; a named one, from the bucket's (or the plan's) refusal.
            var refusal = object.metadata.flatMap { $0.protection(against: .deleted, now: session.clock.now()) }
            if refusal == nil {
                // An object a pattern found is deleted only as it was found (rule G5).
                let precondition = object.metadata.map { Precondition.sameContent(as: $0) } ?? .none
                refusal = try await session.onTarget(object.word, name: object.name, at: here) {
                    () async throws -> StorageError? in
                    do {
                        try await session.target.delete(object.name, precondition: precondition)
                        return nil
                    } catch let error as StorageError where error.keptBy != nil {
                        return error
                    }
                }
            }
            if let refusal {
                if refusal.keptBy == .hold { held += 1 } else { retained += 1 }
                session.output.error(Diagnostic.running(refusal, at: object.word?.location ?? here))
                return
            }
            results.deleted(object.name.rawValue)
        }
        if held + retained > 0 {
            let kept = held + retained
            var message = "\(kept) of the \(matched) objects named \(kept == 1 ? "is" : "are") kept by "
            message += held == 0 ? "a retention" : retained == 0 ? "a hold" : "a hold or a retention"
            message += " (named above), which refuses the delete"
            if held > 0 {
                // S3 has one hold, Object Lock's legal hold, which storesh names temporaryHold (rule S2).
                let holds = session.target.scheme == "s3" ? "temporaryHold" : "temporaryHold eventBasedHold"
                message += "; release a hold with meta unset \(holds) -- NAME"
            }
            if retained > 0 { message += "; a retention lasts until the time it names" }
            throw Diagnostic.running(StorageError(.unauthorized, message + "."), at: here)
        }
        if !session.options.dryRun { session.reportedChanges += results.deletedCount }
        results.finish(single: true)
        // A plan of deletes on a real bucket (journaled, undone with storesh undo) says whether they can be undone.
        if session.options.dryRun, !session.options.json, results.deletedCount > 0, session.bucket.transactions == nil {
            session.deliver(.note(await session.deletionsNote(count: results.deletedCount)))
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let bucket = session.target.name
        return try await session.explainEach(targets, raw: raw, filters: filters, at: here) { object, state in
            Explainer.delete(bucket: bucket, name: object.name.rawValue, state: state)
        }
    }
}
