import StoreshCore

/// Turns a script's words into commands. The whole script is checked before anything runs, so a syntax
/// error anywhere runs nothing (contract, Scripts); it is then read again, a command at a time, as it runs.
package enum Parser {
    /// Checks a script whole, in one pass over its bytes that holds one command at a time.
    package static func check(_ bytes: any ScriptBytes) throws(Diagnostic) -> Script {
        try Script(checking: bytes)
    }

    /// Checks a script held in memory (a typed line, a test's script).
    package static func parse(_ source: SourceText) throws(Diagnostic) -> Script {
        try Script(checking: ScriptText(source.text))
    }

    /// The statements of a command group (a line and the lines it continues on) that starts at line `firstLine`.
    static func statements(in text: String, firstLine: Int) throws(Diagnostic) -> [Statement] {
        var statements: [Statement] = []
        for words in try Lexer.commands(in: text, firstLine: firstLine) {
            var statement = try parseCommand(words.words)
            statement.text = words.source
            // `explain COMMAND` heads its explanation with COMMAND as typed, quotes included, so that it can be
            // run as it reads (the words alone have lost their quotes).
            if var explain = statement.command as? ExplainCommand, words.words.count > 1,
                words.words[1].location.line == words.words[0].location.line
            {
                let offset = words.words[1].location.column - words.words[0].location.column
                explain.text = String(String.UnicodeScalarView(words.source.unicodeScalars.dropFirst(offset)))
                statement.command = explain
            }
            statements.append(statement)
        }
        return statements
    }

    /// One command from its words: its type is looked up by its first words, and reads the rest.
    package static func parseCommand(_ words: [Word]) throws(Diagnostic) -> Statement {
        let (type, nameWordCount) = try CommandCatalog.type(for: words)
        // Joined by hand: the generic `joined` of a slice's texts looked up its witnesses at run time, in every
        // cold run (issue 23).
        var commandName = words[0].text
        for word in words[1..<nameWordCount] { commandName += " " + word.text }
        var arguments = CommandArguments(words: words, nameWordCount: nameWordCount, commandName: commandName)
        return Statement(try type.init(parsing: &arguments), at: words[0].location)
    }

    static func unknownCommand(_ word: Word) -> Diagnostic {
        var message = "unknown command '\(word.text)'"
        let candidates = CommandCatalog.firstWords + CommandCatalog.commands.map(\.name)
        if CommandCatalog.commandLineSubcommands.contains(word.text) {
            message += "; it is a subcommand of storesh itself: run `storesh \(word.text)` from the system's shell"
        } else if let owner = CommandCatalog.commands.first(where: { $0.subcommand == word.text }) {
            // `token`, `next`, `set`: the second word of a command (`help` lists `page next/token`).
            message += "; did you mean '\(owner.name)'?"
        } else if let near = Suggestion.nearest(to: word.text, among: candidates) {
            message += "; did you mean '\(near)'?"
        } else if word.text.contains("=") {
            // `contentDisposition=attachment;filename=x`: the ; ended the command.
            message += "; a ; outside quotes ends a command, so quote a value that holds one"
        } else {
            message += "; `help` lists the commands"
        }
        return .syntax(message, at: word.location)
    }

    /// The column just after a word, for "something is missing here".
    static func afterEnd(of word: Word) -> SourceLocation {
        SourceLocation(line: word.location.line, column: word.location.column + word.text.unicodeScalars.count + 1)
    }

    /// Among targets, a bare word like `--summary` is a mistyped or misplaced option, not an object: taking it for
    /// a name would only fail later as "object --summary does not exist". After a bare `--` it is a name.
    static func refuseStrayOption(_ word: Word, for command: String) throws(Diagnostic) {
        guard word.isLongOption else { return }
        if CommandCatalog.options(of: command).contains(word.text) {
            throw Diagnostic.syntax(
                "'\(word.text)' goes before the targets: \(CommandCatalog.declaration(named: command)?.usage ?? command)",
                at: word.location)
        }
        var error = unknownOption(word, for: command)
        error.message += " (an object whose name starts with -- goes after a bare --)"
        throw error
    }

    /// An option the command does not declare, with the nearest it does.
    static func unknownOption(_ word: Word, for command: String) -> Diagnostic {
        let known = CommandCatalog.options(of: command)
        var message = "`\(command)` has no option '\(word.text)'"
        if let near = Suggestion.nearest(to: word.text, among: known) {
            message += "; did you mean '\(near)'?"
        } else {
            message += "; its options are \(known.joined(separator: ", "))"
        }
        return .syntax(message, at: word.location)
    }
}

extension Word {
    /// A bare word starting with `-` (and more than just `-`) is an option.
    var isOption: Bool {
        text.hasPrefix("-") && text.count > 1 && !literal.first!
    }

    /// A bare `--NAME` (not the `--` that ends options): among targets, a mistyped or misplaced option.
    var isLongOption: Bool {
        isBare && text.hasPrefix("--") && text.count > 2
    }
}
