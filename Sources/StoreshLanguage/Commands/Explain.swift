import StoreshCore

/// `explain COMMAND…`: the requests COMMAND stands for, in the SDK and the REST APIs, and the rules method that
/// decides each; nothing runs.
package struct ExplainCommand: LanguageCommand, Equatable {
    package var explained: any LanguageCommand
    /// COMMAND as written, for the heading.
    package var text: String

    package init(_ explained: any LanguageCommand, text: String) {
        self.explained = explained
        self.text = text
    }

    package static let declaration = CommandDeclaration(
        "explain", group: .teaching, usage: "explain COMMAND…",
        summary: "the SDK call, REST requests and rules method of COMMAND; runs nothing",
        details: [
            "For each request: the Swift code of the Firebase SDK for Apple platforms, the Firebase Storage",
            "REST API (v0, the SDKs' API), the Cloud Storage JSON API, and the security-rules method",
            "(list, get, create, update, delete) that decides it. Patterns are expanded (a read), nothing",
            "changes. `storesh run --explain FILE` explains every command of a script.",
        ], example: "explain meta set cacheControl=\"max-age=300\" images/forest.jpg",
        completion: .commandLine)

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        let (explained, words) = try arguments.innerCommand(usage: "explain ls -n 2 photos")
        self.explained = explained
        text = words.map(\.text).joined(separator: " ")
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        var explanation = try await session.explanation(of: explained, at: here)
        explanation.command = text
        session.deliver(.explanation(explanation))
        return .next
    }

    package var header: String { explained.header }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        try await explained.explain(in: session, at: here)
    }

    package static func == (lhs: ExplainCommand, rhs: ExplainCommand) -> Bool {
        lhs.explained.isEqual(to: rhs.explained) && lhs.text == rhs.text
    }
}
