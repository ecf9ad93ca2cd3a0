import StoreshCore

/// `echo WORD…`: prints its words (scripts and lessons).
package struct EchoCommand: LocalCommand, Equatable {
    package var words: [Word]

    package init(words: [Word]) { self.words = words }

    package static let declaration = CommandDeclaration(
        "echo", group: .teaching, usage: "echo WORD…", summary: "print words (for scripts and lessons)",
        example: "echo 'Listing the root:'")

    package static let explanation = Explainer.local("storesh itself: no request")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        words = arguments.rest(skippingDoubleDash: false)
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.echo(words.map(\.text).joined(separator: " ")))
        return .next
    }
}
