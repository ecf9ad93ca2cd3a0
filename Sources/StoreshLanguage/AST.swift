import StoreshCore

/// A parsed script: its commands in order, each with where it was written.
public struct Script: Sendable, Equatable {
    public var statements: [Statement]

    public init(statements: [Statement]) {
        self.statements = statements
    }

    /// Whether any command may change the bucket (as its declaration says).
    public var changesBucket: Bool {
        statements.contains { $0.command.changesBucket }
    }

    /// What the bucket must be able to do for the script to run (rule B3).
    public var requiredCapabilities: BucketCapabilities {
        statements.reduce(into: []) { $0.formUnion($1.command.declaration.requires) }
    }
}

extension Script {
    /// Whether a statement asks for a dry run (`dry-run COMMAND`).
    public var asksForDryRun: Bool {
        statements.contains { $0.command is DryRunCommand }
    }

    /// The statements with their `dry-run` prefixes taken off (the run is then a dry run as a whole).
    public var withoutDryRunPrefixes: Script {
        Script(statements: statements.map { statement in
            guard let dryRun = statement.command as? DryRunCommand else { return statement }
            var unwrapped = statement
            unwrapped.command = dryRun.planned
            return unwrapped
        })
    }

    /// Every statement explained instead of run (`run --explain`): nothing changes. A `cd` is explained and also
    /// run, so that the paths of the commands after it are the script's.
    public var explained: Script {
        Script(statements: statements.flatMap { statement -> [Statement] in
            if statement.command is ExplainCommand { return [statement] }
            let explanation = Statement(
                ExplainCommand(statement.command, text: "line \(statement.location.line): \(statement.command.header)"),
                at: statement.location)
            if statement.command is CdCommand { return [explanation, statement] }
            return [explanation]
        })
    }
}

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
