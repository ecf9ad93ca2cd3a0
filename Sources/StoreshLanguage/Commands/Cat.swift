import StoreshCore

/// `cat [--raw] OBJECT`: an object's content on standard output, byte for byte.
public struct CatCommand: LanguageCommand, Equatable {
    public var object: Word
    public var raw: Bool

    public init(object: Word, raw: Bool = false) {
        self.object = object
        self.raw = raw
    }

    public static let declaration = CommandDeclaration(
        "cat", group: .content, usage: "cat [--raw] OBJECT", summary: "print an object's content", example: "cat docs/readme.md",
        options: ["--raw"], completion: .objects,
        sdk: ["data(maxSize:)", "getData"])

    public init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        raw = arguments.takeRaw()
        object = try arguments.required("OBJECT")
        try arguments.expectEnd()
    }

    public func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        let name = try session.objectName(object, raw: raw, at: here)
        try await session.onTarget(object, name: name, at: here) { try await session.deliverContent(of: name) }
        return .next
    }

    public func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        let name = try session.objectName(object, raw: raw, at: here)
        return [Explainer.download(bucket: session.target.name, name: name.rawValue, toFile: nil)]
    }
}
