import StoreshCore

/// `cat [--raw] OBJECT`: an object's content on standard output, byte for byte.
package struct CatCommand: LanguageCommand, Equatable {
    package var object: Word
    package var raw: Bool

    package init(object: Word, raw: Bool = false) {
        self.object = object
        self.raw = raw
    }

    package static let declaration = CommandDeclaration(
        "cat", group: .content, usage: "cat [--raw] OBJECT", summary: "print an object's content",
        details: [
            "OBJECT#GENERATION prints that generation, live or noncurrent, where the bucket gives generations (ls -a",
            "lists them); an object whose own name is that is still printed, and quoted ('a#1') the word is a name.",
        ],
        example: "cat docs/readme.md",
        options: ["--raw"], completion: .objects,
        sdk: ["data(maxSize:)", "getData"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        object = try arguments.required("OBJECT")
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        try await session.deliverContent(of: object, raw: raw, at: here)
        return .next
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        [try await session.explainDownload(of: object, raw: raw, toFile: { _ in nil }, at: here)]
    }
}
