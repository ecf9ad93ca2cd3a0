import StoreshCore

/// `exit` (or `quit`): leaves the shell; in a script, stops it there, keeping its changes.
package struct ExitCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "exit", group: .teaching, aliases: ["quit"], usage: "exit | quit",
        summary: "leave the shell (in a script: stop here, keeping the changes)",
        example: "exit")

    package static let explanation = Explainer.local("storesh itself: no request")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow { .exit }
}
