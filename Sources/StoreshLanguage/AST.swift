import StoreshCore

/// One command and the position of its name.
package struct Statement: Sendable, Equatable {
    package var command: any LanguageCommand
    package var location: SourceLocation
    /// The command as written (for `run --echo`); empty for one made in code.
    package var text: String = ""

    package init(_ command: any LanguageCommand, at location: SourceLocation) {
        self.command = command
        self.location = location
    }

    package static func == (lhs: Statement, rhs: Statement) -> Bool {
        lhs.command.isEqual(to: rhs.command) && lhs.location == rhs.location && lhs.text == rhs.text
    }
}
