import StoreshCore

/// What Tab offers for a command's words after its name.
public enum CompletionKind: Sendable, Equatable {
    case nothing
    /// Folders only (`cd`, `ls`).
    case folders
    /// Objects and folders.
    case objects
    /// `KEY=` assignments, then targets once one is there (`meta set`).
    case assignmentsThenObjects
    /// Keys, then targets (`meta unset`).
    case keysThenObjects
    /// The bucket's snapshot names.
    case snapshotNames
    /// Command names (`help`).
    case commandNames
}

/// Where `help` lists a command.
public enum CommandGroup: String, CaseIterable, Sendable {
    case navigate, metadata, content, rules, snapshots, teaching
}

/// One command of the language, declared once: its words, options, what it may change and need, its help and
/// example. The parser's errors, `help`, Tab completion, dry-run headers and the checks made before a script runs
/// all read it.
public struct CommandDeclaration: Sendable {
    /// The command's words: `ls`, `meta set`, `snapshot restore`.
    public var name: String
    public var usage: String
    public var summary: String
    public var details: [String]
    public var example: String
    /// The options it takes, as typed (`-n`, `--all`).
    public var options: [String]
    /// Whether it may change the bucket (a script that holds one takes the write lock; a dry run shows a header).
    public var changesBucket: Bool
    /// What the bucket must be able to do for it (rule B3: refused before anything runs otherwise).
    public var requires: BucketCapabilities
    public var completion: CompletionKind
    /// The Firebase SDK calls it stands for (`listAll()`, `updateMetadata(_:)`): shown by `help`, and `help
    /// listAll` leads here. `explain` shows the calls with their arguments.
    public var sdk: [String]
    /// Where `help` lists it.
    public var group: CommandGroup

    init(
        _ name: String, usage: String, summary: String, details: [String] = [], example: String, options: [String] = [],
        changesBucket: Bool = false, requires: BucketCapabilities = [], completion: CompletionKind = .nothing,
        sdk: [String] = []
    ) {
        self.sdk = sdk
        self.group = Self.group(of: name)
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

    /// The group of a command by its words: the first word decides, but for the session's own commands.
    static func group(of name: String) -> CommandGroup {
        switch name.split(separator: " ")[0] {
        case "cd", "pwd", "ls", "page": .navigate
        case "meta": .metadata
        case "put", "get", "cat", "rm": .content
        case "rules", "login", "logout", "whoami": .rules
        case "snapshot": .snapshots
        default: .teaching
        }
    }

    /// The first word (`meta` for `meta set`).
    public var firstWord: String { String(name.split(separator: " ")[0]) }
    /// The subcommand word, if any (`set` for `meta set`).
    public var subcommand: String? { name.split(separator: " ").dropFirst().first.map(String.init) }
}

/// The help of a command (the name `help` and the executable know).
public typealias CommandHelp = CommandDeclaration

public enum CommandCatalog {
    public static let commands: [CommandDeclaration] = [
        CommandDeclaration(
            "cd", usage: "cd [PATH]", summary: "make PATH the current reference; no PATH: the root",
            details: [
                "PATH is relative to the current reference, or absolute when it starts with / or gs://BUCKET/.",
                "`.` is the current reference and `..` its parent; `..` at the root stays at the root. (The SDK",
                "keeps . and .. as literal segments; storesh navigates with them.)",
            ], example: "cd images/mountains",
            completion: .folders,
            sdk: ["reference()", "child(_:)", "parent()", "root()"]),
        CommandDeclaration(
            "pwd", usage: "pwd", summary: "print the current reference as gs://BUCKET/FULLPATH", details: [],
            example: "pwd",
            sdk: ["fullPath", "bucket", "name"]),
        CommandDeclaration(
            "ls", usage: "ls [-n N] [--all] [--token T] [-l] [PATH]",
            summary: "list one page of prefixes and items under PATH (default: here)",
            details: [
                "-n N       at most N entries, 1 to 1000 (default 1000); prefixes and items count together",
                "--all      every page (listAll)",
                "--token T  continue from a page token",
                "-l         size, updated and contentType of each item",
                "Prefixes end in /. When more pages follow, `page next` shows the next one.",
            ], example: "ls -n 2 lessons/paging",
            options: ["-n", "--all", "--token", "-l"], completion: .folders,
            sdk: ["list(maxResults:)", "list(maxResults:pageToken:)", "listAll()", "StorageListResult", "pageToken", "prefixes", "items"]),
        CommandDeclaration(
            "page next", usage: "page next", summary: "the next page of the last paginated ls", details: [],
            example: "page next",
            sdk: ["list(maxResults:pageToken:)", "pageToken"]),
        CommandDeclaration(
            "page token", usage: "page token [TOKEN]",
            summary: "what a page token holds (default: the last page's)",
            details: [
                "A token holds where the next page starts: the last entry returned (its full name) in its",
                "listing. It carries no generation: the next page starts after the name, whatever became of it.",
            ], example: "page token",
            sdk: ["pageToken"]),
        CommandDeclaration(
            "meta get", usage: "meta get [--raw] [--where F]… [TARGET…]", summary: "all metadata of each target (default: the current one)",
            details: [
                "--raw takes each TARGET as the exact object name, e.g. meta get --raw wrongPrefix//sadItem.",
                "A TARGET may be a pattern (images/**.jpg); --where keeps the objects whose metadata pass it.",
            ],
            example: "meta get --where 'custom.camera exists' images/**",
            options: ["--raw", "--where"], completion: .objects,
            sdk: ["getMetadata()", "StorageMetadata"]),
        CommandDeclaration(
            "meta set", usage: "meta set KEY=VALUE… [--where F]… [--] [TARGET…]",
            summary: "update writable properties of each target (default: the current one)",
            details: [
                "KEY is contentType, cacheControl, contentDisposition, contentEncoding, contentLanguage,",
                "or custom.NAME for a key of customMetadata. Words with = before -- are assignments;",
                "the rest are targets. A target may be a pattern: * within a segment, ** across segments,",
                "? one character, […] a set. A pattern that matches nothing is an error. Quoted, these",
                "characters are literal: 'a*b' names the object a*b.",
                "An update that would change nothing changes nothing and is counted as unchanged.",
                "--where F keeps the targets whose metadata pass F: KEY=GLOB, KEY!=GLOB, 'KEY exists',",
                "'KEY missing' (KEY a property or custom.NAME; GLOB a shell pattern: image/*). Several: all.",
            ], example: "meta set cacheControl=\"public, max-age=3600\" --where contentType=image/* -- images/**",
            options: ["--where"], changesBucket: true, completion: .assignmentsThenObjects,
            sdk: ["updateMetadata(_:)", "StorageMetadata", "customMetadata"]),
        CommandDeclaration(
            "meta unset", usage: "meta unset KEY… [--where F]… [--] [TARGET…]",
            summary: "delete properties of each target; `custom` clears customMetadata",
            details: ["Keys come first; the first word that is not a key, or --, starts the targets. --where as in meta set."],
            example: "meta unset custom.stale contentLanguage -- docs/*",
            options: ["--where"],
            changesBucket: true, completion: .keysThenObjects,
            sdk: ["updateMetadata(_:)"]),
        CommandDeclaration(
            "meta rename", usage: "meta rename custom.OLD custom.NEW [--where F]… [--] [TARGET…]",
            summary: "move a custom key to a new name, keeping each object's value",
            details: [
                "Objects without custom.OLD are unchanged; one whose custom.NEW holds another value is an error",
                "(nothing is overwritten). One update per object, with a precondition.",
            ], example: "meta rename custom.reviewr custom.reviewer -- files/**",
            options: ["--where"], changesBucket: true, completion: .keysThenObjects,
            sdk: ["updateMetadata(_:)"]),
        CommandDeclaration(
            "put", usage: "put [--raw] [--content-type T] [--md5 B64] (LOCAL_FILE | --data TEXT) [DEST]",
            summary: "write an object from a local file or from TEXT",
            details: [
                "DEST defaults to the local file's name under the current reference (with --data: the",
                "current reference); a DEST ending in / is a folder. --raw takes DEST exactly as written,",
                "without normalising it, so that names like wrongPrefix//sadItem can be made.",
                "--md5 checks the content's MD5 (base64).",
            ], example: "put --data 'hello' --content-type text/plain notes/hello.txt",
            options: ["--raw", "--content-type", "--md5", "--data"], changesBucket: true, completion: .objects,
            sdk: ["putDataAsync(_:metadata:)", "putFileAsync(from:metadata:)", "putData", "putFile"]),
        CommandDeclaration(
            "get", usage: "get [--raw] OBJECT [LOCAL_FILE]",
            summary: "download an object's content (default: its name, in the working directory)",
            details: ["A LOCAL_FILE that is a directory, or ends in /, gets the object's name in it."],
            example: "get images/forest.jpg /tmp/forest.jpg",
            options: ["--raw"], completion: .objects,
            sdk: ["writeAsync(toFile:)", "write(toFile:)"]),
        CommandDeclaration(
            "cat", usage: "cat [--raw] OBJECT", summary: "print an object's content", details: [],
            example: "cat docs/readme.md",
            options: ["--raw"], completion: .objects,
            sdk: ["data(maxSize:)", "getData"]),
        CommandDeclaration(
            "rm", usage: "rm [--raw] [--where F]… TARGET…", summary: "delete objects; targets may be patterns",
            details: [
                "--raw takes each TARGET as an exact object name: no normalising, no patterns.",
                "--where F keeps the targets whose metadata pass F, as in meta set.",
            ],
            example: "rm --where 'custom.draft exists' files/uid/*",
            options: ["--raw", "--where"], changesBucket: true, completion: .objects,
            sdk: ["delete()"]),
        CommandDeclaration(
            "echo", usage: "echo WORD…", summary: "print words (for scripts and lessons)", details: [],
            example: "echo 'Listing the root:'"),
        CommandDeclaration(
            "help", usage: "help [COMMAND]", summary: "usage and an example for each command", details: [],
            example: "help meta set",
            completion: .commandNames),
        CommandDeclaration(
            "rules show", usage: "rules show", summary: "the security rules in force and where they came from",
            details: [], example: "rules show"),
        CommandDeclaration(
            "rules load", usage: "rules load FILE | rules load --sample NAME", summary: "check and put in force the rules of a file",
            details: [
                "The rules are kept in the bucket. Errors name FILE:LINE:COLUMN. New buckets have open",
                "rules_version 2 rules; under rules_version 1 every listing fails (rule L12).",
                "--sample NAME loads a sample compiled into storesh: owner-only (the teaching bucket's users",
                "and images), version1 (rules_version 1: no listing), open.",
            ], example: "rules load --sample owner-only",
            options: ["--sample"], changesBucket: true, requires: .rulesAdministration),
        CommandDeclaration(
            "rules reset", usage: "rules reset", summary: "put back the open rules of a new bucket",
            details: ["The same as rules load --sample open: anyone may read and write."], example: "rules reset",
            changesBucket: true, requires: .rulesAdministration),
        CommandDeclaration(
            "rules why", usage: "rules why",
            summary: "which allow (file:line) granted the last request, or why none did", details: [],
            example: "rules why"),
        CommandDeclaration(
            "login", usage: "login UID [--claim KEY=VALUE…] | login --id-token TOKEN",
            summary: "make requests as this user (request.auth.uid, request.auth.token.KEY)",
            details: [
                "Claim values true, false and numbers are typed; others are strings.",
                "On gs:// requests then go through the Firebase Storage API, where the project's rules decide:",
                "login UID makes an unsigned emulator token (emulators only); --id-token takes a user's Firebase",
                "ID token (or set $STORESH_ID_TOKEN, which keeps it out of the history). logout goes back.",
            ],
            example: "login uid --claim admin=false",
            options: ["--claim", "--id-token"],
            sdk: ["Auth.auth().signIn", "getIDToken()", "request.auth"]),
        CommandDeclaration(
            "logout", usage: "logout", summary: "make requests signed out (request.auth is null)", details: [],
            example: "logout",
            sdk: ["Auth.auth().signOut()"]),
        CommandDeclaration(
            "whoami", usage: "whoami", summary: "who requests are made as", details: [], example: "whoami",
            sdk: ["Auth.auth().currentUser"]),
        CommandDeclaration(
            "snapshot save", usage: "snapshot save NAME",
            summary: "keep the bucket's current state under NAME (cheap at any size)",
            details: [
                "NAME: 1 to 100 letters, digits, '.', '_' or '-'. Later changes never alter a snapshot.",
                "In a script, the snapshot is part of the script's transaction. `storesh run --snapshot",
                "NAME FILE` takes one before the script's first command. Rules do not apply to snapshots.",
            ], example: "snapshot save before-fix",
            changesBucket: true, requires: .snapshots, completion: .snapshotNames),
        CommandDeclaration(
            "snapshot list", usage: "snapshot list", summary: "the snapshots, oldest first, with their object counts",
            details: [], example: "snapshot list",
            requires: .snapshots),
        CommandDeclaration(
            "snapshot diff", usage: "snapshot diff NAME [NAME2]",
            summary: "what changed from snapshot NAME to NAME2 (default: to now)",
            details: [
                "Objects added (+), removed (-), and for each changed one, each property old → new,",
                "as in a dry-run plan; new content shows as generation, size and md5Hash.",
            ], example: "snapshot diff before-fix",
            requires: .snapshots, completion: .snapshotNames),
        CommandDeclaration(
            "snapshot restore", usage: "snapshot restore NAME",
            summary: "make the bucket exactly as it was in snapshot NAME",
            details: [
                "Objects made since are deleted; changed and deleted ones come back with their content,",
                "metadata and generations. The snapshot is kept. With --dry-run, prints what it would change.",
            ], example: "snapshot restore before-fix",
            changesBucket: true, requires: .snapshots, completion: .snapshotNames),
        CommandDeclaration(
            "snapshot rm", usage: "snapshot rm NAME", summary: "forget snapshot NAME and what only it kept",
            details: [], example: "snapshot rm before-fix",
            changesBucket: true, requires: .snapshots, completion: .snapshotNames),
        CommandDeclaration(
            "explain", usage: "explain COMMAND…",
            summary: "the SDK call, REST requests and rules method of COMMAND; runs nothing",
            details: [
                "For each request: the Swift code of the Firebase SDK for Apple platforms, the Firebase Storage",
                "REST API (v0, what the SDKs send), the Cloud Storage JSON API, and the security-rules method",
                "(list, get, create, update, delete) that decides it. Patterns are expanded (a read), nothing",
                "changes. `storesh run --explain FILE` explains every command of a script.",
            ], example: "explain meta set cacheControl=\"public, max-age=300\" images/forest.jpg",
            completion: .commandNames),
        CommandDeclaration(
            "dry-run", usage: "dry-run COMMAND…",
            summary: "run the line without saving anything, and print what it would change",
            details: [
                "At the prompt, `dry-run` before a line shows its plan (each object, each property old → new)",
                "and saves nothing; in a script it makes the whole script a dry run, as storesh run --dry-run.",
            ], example: "dry-run meta set cacheControl=no-cache -- images/**",
            completion: .commandNames),
        CommandDeclaration(
            "exit", usage: "exit | quit", summary: "leave the shell (in a script: stop here, keeping the changes)",
            details: [], example: "exit"),
    ]

    /// The help of a command by name (`meta set`, `ls`, `quit`, …).
    public static func help(for name: String) -> CommandHelp? { declaration(named: name) }

    /// The helps a topic names: one command, or every subcommand of `meta` or `page`, or the commands that stand
    /// for a Firebase SDK call (`listAll`, `updateMetadata`, `getMetadata()`), however it is written.
    public static func helps(for topic: String) -> [CommandHelp] {
        if let one = help(for: topic) { return [one] }
        let subcommands = commands.filter { $0.name.hasPrefix(topic + " ") }
        if !subcommands.isEmpty { return subcommands }
        // An SDK call (`help list` is `ls`, for list(maxResults:)), then a subcommand alone (`help token`: the
        // overview lists subcommands after their first word, `page next, token`).
        let wanted = sdkKey(topic)
        var found = wanted.isEmpty ? [] : commands.filter { command in command.sdk.contains { sdkKey($0) == wanted } }
        let bySubcommand = commands.filter { $0.subcommand == topic }
        if bySubcommand.count == 1, !found.contains(where: { $0.name == bySubcommand[0].name }) { found += bySubcommand }
        return found
    }

    /// What `help TOPIC` prints: a topic (`scripts`), or the help of each command it names; nil for neither.
    public static func helpText(for topic: String) -> String? {
        if let about = topics[topic] { return about }
        let helps = helps(for: topic)
        return helps.isEmpty ? nil : helps.map(text(for:)).joined(separator: "\n\n")
    }

    /// An SDK name without its arguments, receiver or case: `list(maxResults:)` and `List` are `list`;
    /// `Auth.auth().signOut()` is `signout`.
    static func sdkKey(_ name: String) -> String {
        var text = Substring(name)
        if let parenthesis = text.firstIndex(of: "(") , !text.hasPrefix("Auth.auth()") { text = text[..<parenthesis] }
        if text.hasPrefix("Auth.auth().") { text = text.dropFirst("Auth.auth().".count) }
        if let parenthesis = text.firstIndex(of: "(") { text = text[..<parenthesis] }
        if text.hasSuffix("Async") && text.count > 5 { text = text.dropLast(5) }
        return text.lowercased()
    }

    /// The declaration of a command by its words (`meta set`; `quit` is `exit`).
    public static func declaration(named name: String) -> CommandDeclaration? {
        let wanted = name == "quit" ? "exit" : name
        return commands.first { $0.name == wanted }
    }

    /// Command names a user might type as the first word, in the order of the table.
    public static let firstWords: [String] = {
        var words: [String] = []
        for command in commands where !words.contains(command.firstWord) { words.append(command.firstWord) }
        return words + ["quit"]
    }()

    /// The subcommands of a first word (`get`, `set`, `unset` for `meta`), in the order of the table.
    public static func subcommands(of word: String) -> [String] {
        commands.filter { $0.firstWord == word }.compactMap(\.subcommand)
    }

    /// The options of a command (by its words).
    public static func options(of name: String) -> [String] { declaration(named: name)?.options ?? [] }

    /// The overview `help` prints: a screenful of at most 80 columns, the commands by group (subcommands after
    /// their first word: `meta get, set, unset`); `help COMMAND` has the rest.
    public static var overview: String {
        var lines = ["storesh commands (help COMMAND for one, help scripts for running scripts):"]
        for group in CommandGroup.allCases {
            var words: [String] = []
            var lastFirstWord: String?
            for command in commands where command.group == group {
                words.append(command.firstWord == lastFirstWord ? command.subcommand ?? command.name : command.name)
                lastFirstWord = command.firstWord
            }
            lines.append("  " + group.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0) + words.joined(separator: ", "))
        }
        lines.append("A Firebase SDK call leads to its command: help listAll, help updateMetadata.")
        lines.append("One command per line, or several separated by ;. Quote with '…' or \"…\".")
        lines.append("# starts a comment; a line ending in \\ continues. Tab completes as you type.")
        return lines.joined(separator: "\n")
    }

    /// Topics of `help` that are not commands.
    public static let topics: [String: String] = [
        "scripts": """
            Scripts: storesh run FILE, storesh -c 'TEXT', or commands on standard input.
              --dry-run      plan the script and print the plan (each object, each property old → new);
                             nothing is saved. At the prompt: dry-run COMMAND.
              --keep-going   report each failing command and keep the changes of those that succeeded
              --json         one JSON document per result; errors as JSON on stderr
              --clock T      reproducible times: the first change at T, then 1 ms per change
              --summary      a bulk change prints its summary by change, not each object
              run --echo     print each command after its prompt before its output (a transcript)
              run --explain  explain each command (SDK call, REST requests, rules method); run nothing
            On a local bucket a script is one transaction: all of it lands, or (a command fails) none.
            On gs:// and s3:// it is planned, then applied with preconditions and a journal
            (run --resume JOURNAL, undo JOURNAL). Exit: 0 ran, 1 a command failed, 2 usage or syntax
            error (nothing ran), 130 interrupted.
            """
    ]

    /// What `help COMMAND` prints.
    public static func text(for command: CommandHelp) -> String {
        var lines = ["usage: \(command.usage)", "  \(command.summary)"]
        lines += command.details.map { "  " + $0 }
        if !command.sdk.isEmpty { lines.append("Firebase SDK: \(command.sdk.joined(separator: ", ")) (explain \(command.name) … shows the call)") }
        lines.append("example: \(command.example)")
        return lines.joined(separator: "\n")
    }
}
