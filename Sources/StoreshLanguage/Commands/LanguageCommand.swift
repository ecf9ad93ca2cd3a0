import StoreshCore

/// One command of the language, whole in one type: its declaration (words, usage, help, options, completion, what
/// it may change and needs), how it is read from the words after its name, how it runs in a session, and the
/// requests it stands for (`explain`). `CommandCatalog.types` lists the types; the parser looks a command up there
/// by its words, and help, completion, the fuzzer's vocabulary and the capability check read their declarations.
///
/// Adding a command is a file in `Commands/` with one such type and its line in `CommandCatalog.types`.
package protocol LanguageCommand: Sendable {
    static var declaration: CommandDeclaration { get }

    /// Reads the command from the words after its name; errors are placed at the word they concern.
    init(parsing arguments: inout CommandArguments) throws(Diagnostic)

    /// Runs it against the session's bucket; `.exit` ends the script (or the shell).
    func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow

    /// The requests it would make, as the SDK, the two REST APIs and the rules see them; nothing changes.
    func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest]

    /// What heads its dry-run plan and its explanation: its words, and what it acts on when that says more.
    var header: String { get }

    /// Whether `other` is the same command with the same arguments (statements compare by it).
    func isEqual(to other: any LanguageCommand) -> Bool
}

extension LanguageCommand {
    package var declaration: CommandDeclaration { Self.declaration }
    /// The command's words in the table: `ls`, `meta set`.
    package var name: String { Self.declaration.name }
    /// Whether it may change the bucket.
    package var changesBucket: Bool { Self.declaration.changesBucket }
    package var header: String { name }
}

extension LanguageCommand where Self: Equatable {
    package func isEqual(to other: any LanguageCommand) -> Bool { (other as? Self) == self }
}

/// A command that makes no storage request: `explain` says what it stands for in one line.
package protocol LocalCommand: LanguageCommand {
    static var explanation: ExplainedRequest { get }
}

extension LocalCommand {
    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        [Self.explanation]
    }
}

/// The words of one command after its name, read one at a time by the command's parse.
package struct CommandArguments {
    let words: [Word]
    var index: Int
    /// The last of the command's own words (`set` in `meta set`): "something is missing" points just after it.
    package let nameWord: Word
    /// The command's words, for messages (`meta set`).
    package let commandName: String

    init(words: [Word], nameWordCount: Int, commandName: String) {
        self.words = words
        self.index = nameWordCount
        self.nameWord = words[nameWordCount - 1]
        self.commandName = commandName
    }

    /// Whether every word has been read.
    package var isAtEnd: Bool { index >= words.count }

    mutating func next() -> Word? {
        guard index < words.count else { return nil }
        defer { index += 1 }
        return words[index]
    }

    /// The next word, left unread.
    func peek() -> Word? { index < words.count ? words[index] : nil }

    /// The remaining words; a bare `--` first is dropped when asked.
    mutating func rest(skippingDoubleDash: Bool) -> [Word] {
        var remaining = Array(words[min(index, words.count)...])
        index = words.count
        if skippingDoubleDash, let first = remaining.first, first.text == "--", first.isBare { remaining.removeFirst() }
        return remaining
    }

    mutating func expectEnd(for command: String? = nil) throws(Diagnostic) {
        if let extra = next() {
            throw Diagnostic.syntax(
                "`\(command ?? commandName)` takes no more arguments; '\(extra.text)' is extra", at: extra.location)
        }
    }

    /// One optional word that must be the last.
    mutating func optionalLast() throws(Diagnostic) -> Word? {
        var word = next()
        if let dash = word, dash.text == "--", dash.isBare { word = next() }
        try expectEnd()
        return word
    }

    /// The next word, which must be there: `what` names it in the error.
    mutating func required(
        _ what: String, for command: String? = nil, after word: Word? = nil
    ) throws(Diagnostic) -> Word {
        guard let next = next() else {
            throw Diagnostic.syntax(
                "`\(command ?? commandName)` needs \(what)", at: Parser.afterEnd(of: word ?? nameWord))
        }
        return next
    }

    /// Where an error about something missing after the command's name points.
    var afterName: SourceLocation { Parser.afterEnd(of: nameWord) }

    /// The rest of the words as targets, with the `--where F` options among them taken out. A bare `--` before
    /// the first target ends the options (what follows is targets only, `--where` included); after one, it is a
    /// target like any other word, as it always was.
    mutating func targetsAndFilters() throws(Diagnostic) -> (targets: [Word], filters: [MetadataFilter]) {
        var targets: [Word] = []
        var filters: [MetadataFilter] = []
        var afterDoubleDash = false
        while let word = next() {
            if word.text == "--" && word.isBare && targets.isEmpty {
                targets += rest(skippingDoubleDash: false)
                break
            }
            if word.text == "--" && word.isBare { afterDoubleDash = true }
            if word.text == "--where" && word.isBare {
                filters.append(try MetadataFilter.parse(try optionValue(for: word)))
            } else {
                if !afterDoubleDash { try Parser.refuseStrayOption(word, for: commandName) }
                targets.append(word)
            }
        }
        return (targets, filters)
    }

    /// The rest of the words as a command of its own (`explain COMMAND…`, `dry-run COMMAND…`), parsed as it would
    /// be alone; `usage` is the example the error for a missing command gives. Answers the command and its words.
    mutating func innerCommand(usage: String) throws(Diagnostic) -> (command: any LanguageCommand, words: [Word]) {
        let words = rest(skippingDoubleDash: false)
        guard !words.isEmpty else {
            throw Diagnostic.syntax("`\(commandName)` needs a command: \(usage)", at: afterName)
        }
        return (try Parser.parseCommand(words).command, words)
    }

    /// Takes a leading `--raw` option.
    mutating func takeRaw() -> Bool {
        guard index < words.count, words[index].text == "--raw", words[index].isBare else { return false }
        index += 1
        return true
    }

    mutating func optionValue(for option: Word) throws(Diagnostic) -> Word {
        guard let value = next() else {
            throw Diagnostic.syntax("\(option.text) needs a value", at: Parser.afterEnd(of: option))
        }
        return value
    }

    /// An option the command does not declare, with the nearest it does.
    func unknownOption(_ word: Word) -> Diagnostic { Parser.unknownOption(word, for: commandName) }
}

/// `KEY=VALUE` as written: the key and the value, each with its place.
package struct Assignment: Sendable, Equatable {
    package var key: Word
    package var value: Word

    package init(key: Word, value: Word) {
        self.key = key
        self.value = value
    }
}
