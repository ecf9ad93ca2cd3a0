import StoreshCore

/// `pwd`: the current reference as a URL.
package struct PwdCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "pwd", group: .navigate, usage: "pwd", summary: "print the current reference as gs://BUCKET/FULLPATH",
        example: "pwd",
        sdk: ["fullPath", "bucket", "name"])

    package static let explanation = Explainer.local(
        "print the current reference: no request", swift: "print(ref.fullPath)  // or ref.bucket, ref.name")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.path(session.current.url(bucket: session.target.name, scheme: session.target.scheme)))
        return .next
    }
}
