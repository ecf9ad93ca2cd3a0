import StoreshCore
import StoreshWire

/// `cd [PATH]`: the current reference, which later paths are relative to.
package struct CdCommand: LanguageCommand, Equatable {
    package var path: Word?

    package init(path: Word?) { self.path = path }

    package static let declaration = CommandDeclaration(
        "cd", group: .navigate, usage: "cd [PATH]", summary: "make PATH the current reference; no PATH: the root",
        details: [
            "PATH is relative to the current reference, or absolute when it starts with / or gs://BUCKET/.",
            "`.` is the current reference and `..` its parent; `..` at the root stays at the root. (The SDK",
            "keeps . and .. as literal segments; storesh navigates with them.)",
        ], example: "cd images/mountains",
        completion: .folders,
        sdk: ["reference()", "child(_:)", "parent()", "root()"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        path = try arguments.optionalLast()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? .root
        session.current = reference
        if path != nil, !reference.isRoot, let note = await session.emptyReferenceNote(reference) {
            session.deliver(.note(note))
        }
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let reference = try path.map { try session.navigationPath($0, command: name) } ?? .root
        return [
            Explainer.local(
                "make \(reference.url(bucket: session.target.name, scheme: session.target.scheme)) the current reference: no request",
                swift: "let ref = \(SwiftSDK.reference(reference.fullPath))",
                note: "A reference is a path; it need not name anything that exists.")
        ]
    }
}
