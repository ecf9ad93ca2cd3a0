import StoreshCore

/// `help [COMMAND | RULE]`: the overview, or a command's usage, details, SDK calls and example; a topic (`scripts`) or
/// an SDK call's name (`listAll`) leads to its commands; a storage rule (`L3`) or family (`L`) is printed.
package struct HelpCommand: LocalCommand, Equatable {
    package var topic: Word?

    package init(topic: Word?) { self.topic = topic }

    package static let declaration = CommandDeclaration(
        "help", group: .teaching, usage: "help [COMMAND | RULE]",
        summary: "usage and an example for each command; a storage rule (help L3)",
        example: "help meta set",
        completion: .commandNames)

    package static let explanation = Explainer.local("storesh itself: no request")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        let words = arguments.rest(skippingDoubleDash: false)
        guard let first = words.first else {
            topic = nil
            return
        }
        let text = words.map(\.text).joined(separator: " ")
        let known = [text, first.text].first { CommandCatalog.helpText(for: $0) != nil }
        guard let known else { throw Parser.unknownCommand(Word(text, at: first.location)) }
        topic = Word(known, at: first.location)
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        session.deliver(.help(topic.map { CommandCatalog.helpText(for: $0.text) ?? "" } ?? CommandCatalog.overview))
        return .next
    }
}
