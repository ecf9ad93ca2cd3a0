import StoreshCore

/// What Tab offers for a command's words after its name.
package enum CompletionKind: Sendable, Equatable {
    case nothing
    /// Folders only (`cd`, `ls`).
    case folders
    /// Objects and folders.
    case objects
    /// `KEY=` assignments, then targets once one is there (`meta set`).
    case assignmentsThenObjects
    /// Keys, then targets (`meta unset`).
    case keysThenObjects
    /// The bucket's snapshot names, as many as the command takes.
    case snapshotNames(count: Int)
    /// Command names (`help`).
    case commandNames
    /// A whole command, completed as if it stood alone (`explain`, `dry-run`).
    case commandLine
    /// The names of the sample rules compiled in (`rules load --sample`).
    case ruleSamples
}

/// Where `help` lists a command: each declaration names its own.
package enum CommandGroup: String, CaseIterable, Sendable {
    case navigate, metadata, content, rules, snapshots, teaching
}

/// Where a command's words may be patterns (`*`, `**`, `?`, `[…]`).
package enum PatternUse: Sendable, Equatable {
    /// Nowhere: one name (or none).
    case none
    /// In its targets (`rm`, `meta set`).
    case targets
    /// In its destinations only (`meta copy`'s DEST).
    case destinations
}

/// One command of the language, declared once: its words, options, what it may change and need, its help and
/// example. The parser's errors, `help`, Tab completion, dry-run headers and the checks made before a script runs
/// all read it.
package struct CommandDeclaration: Sendable {
    /// The command's words: `ls`, `meta set`, `snapshot restore`.
    package var name: String
    package var usage: String
    package var summary: String
    package var details: [String]
    package var example: String
    /// The options it takes, as typed (`-n`, `--all`).
    package var options: [String]
    /// Whether it may change the bucket (a script that holds one takes the write lock; a dry run shows a header).
    package var changesBucket: Bool
    /// What the bucket must be able to do for it (rule B3: refused before anything runs otherwise).
    package var requires: BucketCapabilities
    package var completion: CompletionKind
    /// The Firebase SDK calls it stands for (`listAll()`, `updateMetadata(_:)`): shown by `help`, and `help
    /// listAll` leads here. `explain` shows the calls with their arguments.
    package var sdk: [String]
    /// Where `help` lists it.
    package var group: CommandGroup
    /// Where its words may be patterns (what the error for a pattern elsewhere lists).
    package var patterns: PatternUse
    /// Other names it answers to (`quit` for `exit`).
    package var aliases: [String]
    /// What Tab offers for an option's value (`rules load --sample NAME`).
    package var optionCompletions: [String: CompletionKind]

    init(
        _ name: String, group: CommandGroup, aliases: [String] = [], usage: String, summary: String,
        details: [String] = [],
        example: String, options: [String] = [], changesBucket: Bool = false, requires: BucketCapabilities = [],
        patterns: PatternUse = .none, completion: CompletionKind = .nothing,
        optionCompletions: [String: CompletionKind] = [:],
        sdk: [String] = []
    ) {
        self.aliases = aliases
        self.optionCompletions = optionCompletions
        self.sdk = sdk
        self.group = group
        self.patterns = patterns
        self.name = name
        self.usage = usage
        self.summary = summary
        self.details = details
        self.example = example
        self.options = options
        self.changesBucket = changesBucket
        self.requires = requires
        self.completion = completion
    }

    /// The first word (`meta` for `meta set`).
    package var firstWord: String { String(name.split(separator: " ")[0]) }
    /// The subcommand word, if any (`set` for `meta set`).
    package var subcommand: String? { name.split(separator: " ").dropFirst().first.map(String.init) }
}

/// The help of a command (the name `help` and the executable know).
package typealias CommandHelp = CommandDeclaration

package enum CommandCatalog {
    /// Every command of the language, in the order `help` lists them. A command's type holds all of it
    /// (`Commands/`); this list is the only other place that names it.
    package static let types: [any LanguageCommand.Type] = [
        CdCommand.self, PwdCommand.self, ListCommand.self, PageNextCommand.self, PageTokenCommand.self,
        MetaGetCommand.self, MetaSetCommand.self, MetaUnsetCommand.self, MetaRenameCommand.self, MetaCopyCommand.self,
        PutCommand.self, GetCommand.self, CatCommand.self, RmCommand.self, MvCommand.self, RestoreCommand.self,
        EchoCommand.self, HelpCommand.self,
        RulesShowCommand.self, RulesLoadCommand.self, RulesResetCommand.self, RulesWhyCommand.self,
        LoginCommand.self, LogoutCommand.self, WhoamiCommand.self,
        SnapshotSaveCommand.self, SnapshotListCommand.self, SnapshotDiffCommand.self, SnapshotRestoreCommand.self,
        SnapshotRemoveCommand.self, BucketShowCommand.self, BucketSetCommand.self, BucketUnsetCommand.self,
        ExplainCommand.self, DryRunCommand.self, ExitCommand.self,
    ]

    /// The declarations of `types`, in their order.
    package static let commands: [CommandDeclaration] = types.map { $0.declaration }

    /// The command line's subcommands (`storesh check`, `storesh serve`, …), which are not commands of the language:
    /// a script or the prompt that names one is told where it is. The command line declares the same, in this order
    /// (a test holds the two together).
    package static let commandLineSubcommands = [
        "run", "apply", "undo", "copy", "reset", "serve", "check", "backup", "export", "import",
    ]

    /// The commands (their indices) by the first word of their name and by their aliases: every command of a
    /// script is looked up here, so it is made once.
    private static let byFirstWord: [String: [Int]] = {
        var table: [String: [Int]] = [:]
        for (index, command) in commands.enumerated() {
            for word in [command.firstWord] + command.aliases where table[word]?.last != index {
                table[word, default: []].append(index)
            }
        }
        return table
    }()

    /// The type of the command `words` start with, and how many of them are its name (`meta set`: 2); an error
    /// naming the nearest command or subcommand when there is none.
    static func type(for words: [Word]) throws(Diagnostic) -> (type: any LanguageCommand.Type, nameWordCount: Int) {
        let first = words[0]
        let candidates = byFirstWord[first.text] ?? []
        guard let only = candidates.first else { throw Parser.unknownCommand(first) }
        if candidates.count == 1, commands[only].subcommand == nil { return (types[only], 1) }
        let names = candidates.map { commands[$0].name }
        let choices = names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
        guard words.count > 1 else {
            throw Diagnostic.syntax("`\(first.text)` needs a subcommand: \(choices)", at: Parser.afterEnd(of: first))
        }
        let sub = words[1]
        if let found = candidates.first(where: { commands[$0].subcommand == sub.text }) { return (types[found], 2) }
        var message = "unknown subcommand '\(first.text) \(sub.text)'"
        if let near = Suggestion.nearest(to: sub.text, among: candidates.compactMap { commands[$0].subcommand }) {
            message += "; did you mean '\(first.text) \(near)'?"
        } else {
            message += "; use \(choices)"
        }
        throw Diagnostic.syntax(message, at: sub.location)
    }

    /// The help of a command by name (`meta set`, `ls`, `quit`, …).
    package static func help(for name: String) -> CommandHelp? { declaration(named: name) }

    /// The helps a topic names: one command, or every subcommand of `meta` or `page`, or the commands that stand
    /// for a Firebase SDK call (`listAll`, `updateMetadata`, `getMetadata()`), however it is written.
    package static func helps(for topic: String) -> [CommandHelp] {
        if let one = help(for: topic) { return [one] }
        let subcommands = commands.filter { $0.name.hasPrefix(topic + " ") }
        if !subcommands.isEmpty { return subcommands }
        // An SDK call (`help list` is `ls`, for list(maxResults:)), then a subcommand alone (`help token`: the
        // overview lists subcommands after their first word, `page next/token`).
        let wanted = sdkKey(topic)
        var found = wanted.isEmpty ? [] : commands.filter { command in command.sdk.contains { sdkKey($0) == wanted } }
        let bySubcommand = commands.filter { $0.subcommand == topic }
        if bySubcommand.count == 1, !found.contains(where: { $0.name == bySubcommand[0].name }) {
            found += bySubcommand
        }
        return found
    }

    /// What `help TOPIC` prints: a topic (`scripts`), or the help of each command it names; nil for neither.
    package static func helpText(for topic: String) -> String? {
        if let about = topics[topic] { return about }
        if let rules = StorageRuleBook.helpText(for: topic) { return rules }
        let helps = helps(for: topic)
        return helps.isEmpty ? nil : helps.map(text(for:)).joined(separator: "\n\n")
    }

    /// An SDK name without its arguments, receiver or case: `list(maxResults:)` and `List` are `list`;
    /// `Auth.auth().signOut()` is `signout`.
    static func sdkKey(_ name: String) -> String {
        var text = Substring(name)
        if let parenthesis = text.firstIndex(of: "("), !text.hasPrefix("Auth.auth()") { text = text[..<parenthesis] }
        if text.hasPrefix("Auth.auth().") { text = text.dropFirst("Auth.auth().".count) }
        if let parenthesis = text.firstIndex(of: "(") { text = text[..<parenthesis] }
        if text.hasSuffix("Async") && text.count > 5 { text = text.dropLast(5) }
        return text.lowercased()
    }

    /// The declaration of a command by its words (`meta set`; `quit` is `exit`).
    package static func declaration(named name: String) -> CommandDeclaration? {
        commands.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// Command names a user might type as the first word, in the order of the table.
    package static let firstWords: [String] = {
        var words: [String] = []
        for command in commands where !words.contains(command.firstWord) { words.append(command.firstWord) }
        return words + commands.flatMap(\.aliases)
    }()

    /// The subcommands of a first word (`get`, `set`, `unset` for `meta`), in the order of the table.
    package static func subcommands(of word: String) -> [String] {
        commands.filter { $0.firstWord == word }.compactMap(\.subcommand)
    }

    /// The commands whose words may be patterns, for messages: `meta get, …, rm and the DEST of meta copy`.
    package static let patternCommands: String = {
        let names =
            commands.filter { $0.patterns == .targets }.map(\.name)
            + commands.filter { $0.patterns == .destinations }.map { "the DEST of \($0.name)" }
        return MessageText.listed(names)
    }()

    /// The command table of the documentation (`CommandLanguage.md`), made from the declarations: a test checks
    /// that the article holds exactly this, so a new command cannot be left out.
    package static var markdownTable: String {
        (["| command | what it does |", "|---|---|"]
            + commands.map { "| `\($0.usage.replacingOccurrences(of: "|", with: "\\|"))` | \($0.summary) |" })
            .joined(separator: "\n")
    }

    /// The options of a command (by its words).
    package static func options(of name: String) -> [String] { declaration(named: name)?.options ?? [] }

    /// The overview `help` prints: a screenful of at most 80 columns, the commands by group (subcommands joined to
    /// their first word by `/`: `meta get/set/unset`, so that `page next/token` does not read as a command `token`);
    /// `help COMMAND` has the rest.
    package static var overview: String {
        var lines = ["storesh commands (help COMMAND for one, help scripts for running scripts):"]
        for group in CommandGroup.allCases {
            var words: [String] = []
            var lastFirstWord: String?
            for command in commands where command.group == group {
                if command.firstWord == lastFirstWord, let subcommand = command.subcommand, !words.isEmpty {
                    words[words.count - 1] += "/" + subcommand
                } else {
                    words.append(command.name)
                }
                lastFirstWord = command.firstWord
            }
            lines.append(
                "  " + group.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0) + words.joined(separator: ", ")
            )
        }
        lines.append("A Firebase SDK call leads to its command: help listAll, help updateMetadata.")
        lines.append("A storage rule that a message names: help L3; a family of rules: help L.")
        lines.append("One command per line, or several separated by ;. Quote with '…' or \"…\".")
        lines.append("# starts a comment; a line ending in \\ continues. Tab completes as you type.")
        return lines.joined(separator: "\n")
    }

    /// Topics of `help` that are not commands: a line a paragraph, wrapped where they are shown.
    package static let topics: [String: String] = [
        "scripts": """
        Scripts: storesh run FILE, storesh -c 'TEXT', or commands on standard input.
          --dry-run      plan the script and print the plan (each object, each property old → new); nothing is saved. At the prompt: dry-run COMMAND.
          --keep-going   report each failing command and keep the changes of those that succeeded
          --json         one JSON document per result; errors as JSON on stderr
          --clock T      reproducible times: the first change at T, then 1 ms per change
          --summary      a bulk change prints its summary by change, not each object
          run --echo     print each command after its prompt before its output (a transcript)
          run --explain  explain each command (SDK call, REST requests, rules method); run nothing
        On a local bucket a script is one transaction: all of it lands, or (a command fails) none. On gs:// and s3:// it is planned, then applied with preconditions and a journal (run --resume JOURNAL, undo JOURNAL); what a command prints is printed once its changes have landed.
        Exit: 0 ran, 1 a command failed, 2 usage or syntax error (nothing ran), 130 interrupted.
        """
    ]

    /// A command's detail lines as paragraphs: a line that does not end a sentence (with `.`, `:` or `)`) goes on
    /// into the next, so that the terminal wraps each paragraph between words at its own width, not the source's
    /// (a line broken for the source once left `contentLanguage,` alone on an 80-column line).
    ///
    /// A line that starts with `-` and sets its text apart by two spaces is a row of an option table (`-n N  at most N
    /// entries…`): it starts a paragraph of its own and takes in no next line, whatever it ends with. A sentence that
    /// starts with an option (`--where F keeps…`) is prose. A paragraph ends with a sentence (`.`, `:`, `.)`), not
    /// with an aside in parentheses (`(rule M9)`).
    static func paragraphs(_ details: [String]) -> [String] {
        var paragraphs: [String] = []
        var open = false
        for line in details {
            let row = line.hasPrefix("-") && line.contains("  ")
            if open, !row, let last = paragraphs.popLast() {
                paragraphs.append(last + " " + line)
            } else {
                paragraphs.append(line)
            }
            open = !row && !(line.hasSuffix(".") || line.hasSuffix(":") || line.hasSuffix(".)"))
        }
        return paragraphs
    }

    /// What `help COMMAND` prints.
    package static func text(for command: CommandHelp) -> String {
        var lines = ["usage: \(command.usage)", "  \(command.summary)"]
        lines += paragraphs(command.details).map { "  " + $0 }
        if !command.sdk.isEmpty {
            lines.append(
                "Firebase SDK: \(command.sdk.joined(separator: ", ")) (explain \(command.name) … shows the call)")
        }
        lines.append("example: \(command.example)")
        return lines.joined(separator: "\n")
    }
}
