import StoreshCore

/// `dry-run COMMAND…`: the line (at the prompt) or the whole script runs as a dry run: nothing is saved, and the
/// plan (each object, each property old → new) is printed.
package struct DryRunCommand: LanguageCommand, Equatable {
    package var planned: any LanguageCommand

    package init(_ planned: any LanguageCommand) { self.planned = planned }

    package static let declaration = CommandDeclaration(
        "dry-run", group: .teaching, usage: "dry-run COMMAND…",
        summary: "run the line without saving anything, and print what it would change",
        details: [
            "At the prompt, `dry-run` before a line shows its plan (each object, each property old → new)",
            "and saves nothing; in a script it makes the whole script a dry run, as storesh run --dry-run.",
        ], example: "dry-run meta set cacheControl=no-cache -- images/**",
        completion: .commandLine)

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        planned = try arguments.innerCommand(usage: "dry-run meta set cacheControl=no-cache -- images/*").command
    }

    /// The prefix is taken off before a script runs (`Script.withoutDryRunPrefixes`, which makes the run a dry run);
    /// a statement run on its own runs its command.
    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        try await session.execute(Statement(planned, at: here))
    }

    package var header: String { planned.header }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        try await planned.explain(in: session, at: here)
    }

    package static func == (lhs: DryRunCommand, rhs: DryRunCommand) -> Bool { lhs.planned.isEqual(to: rhs.planned) }
}
