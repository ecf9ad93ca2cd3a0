import StoreshCore

/// `pwd`: the current reference as a URL.
public struct PwdCommand: LocalCommand, Equatable {
    public init() {}

    public static let declaration = CommandDeclaration(
        "pwd", group: .navigate, usage: "pwd", summary: "print the current reference as gs://BUCKET/FULLPATH", example: "pwd",
        sdk: ["fullPath", "bucket", "name"])

    public static let explanation = Explainer.local(
        "print the current reference: no request", swift: "print(ref.fullPath)  // or ref.bucket, ref.name")

    public init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    public func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.path(session.current.url(bucket: session.target.name, scheme: session.target.scheme)))
        return .next
    }
}
