import StoreshCore

/// `exit` (or `quit`): leaves the shell; in a script, stops it there, keeping its changes.
public struct ExitCommand: LocalCommand, Equatable {
    public init() {}

    public static let declaration = CommandDeclaration(
        "exit", group: .teaching, aliases: ["quit"], usage: "exit | quit", summary: "leave the shell (in a script: stop here, keeping the changes)",
        example: "exit")

    public static let explanation = Explainer.local("storesh itself: no request")

    public init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    public func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow { .exit }
}
