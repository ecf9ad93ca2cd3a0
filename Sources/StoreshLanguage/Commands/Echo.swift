import StoreshCore

/// `echo WORD…`: prints its words (scripts and lessons).
public struct EchoCommand: LocalCommand, Equatable {
    public var words: [Word]

    public init(words: [Word]) { self.words = words }

    public static let declaration = CommandDeclaration(
        "echo", group: .teaching, usage: "echo WORD…", summary: "print words (for scripts and lessons)", example: "echo 'Listing the root:'")

    public static let explanation = Explainer.local("storesh itself: no request")

    public init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        words = arguments.rest(skippingDoubleDash: false)
    }

    public func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.echo(words.map(\.text).joined(separator: " ")))
        return .next
    }
}
