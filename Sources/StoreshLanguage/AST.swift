import StoreshCore

/// One command and the position of its name.
public struct Statement: Sendable, Equatable {
    public var command: any LanguageCommand
    public var location: SourceLocation
    /// The command as written (for `run --echo`); empty for one made in code.
    public var text: String = ""

    public init(_ command: any LanguageCommand, at location: SourceLocation) {
        self.command = command
        self.location = location
    }

    public static func == (lhs: Statement, rhs: Statement) -> Bool {
        lhs.command.isEqual(to: rhs.command) && lhs.location == rhs.location && lhs.text == rhs.text
    }
}
