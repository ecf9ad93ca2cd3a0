import StoreshCore

/// A parsed script: its commands in order, each with where it was written.
public struct Script: Sendable, Equatable {
    public var statements: [Statement]

    public init(statements: [Statement]) {
        self.statements = statements
    }

    /// Whether any command may change the bucket (as the command table declares).
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
        statements.contains { if case .dryRun = $0.command { return true } else { return false } }
    }

    /// The statements with their `dry-run` prefixes taken off (the run is then a dry run as a whole).
    public var withoutDryRunPrefixes: Script {
        Script(statements: statements.map { statement in
            guard case .dryRun(let inner) = statement.command else { return statement }
            var unwrapped = statement
            unwrapped.command = inner
            return unwrapped
        })
    }

    /// Every statement explained instead of run (`run --explain`): nothing changes. A `cd` is explained and also
    /// run, so that the paths of the commands after it are the script's.
    public var explained: Script {
        Script(statements: statements.flatMap { statement -> [Statement] in
            if case .explain = statement.command { return [statement] }
            let explanation = Statement(
                .explain(statement.command, text: "line \(statement.location.line): \(Interpreter.header(statement.command))"),
                at: statement.location)
            if case .cd = statement.command { return [explanation, statement] }
            return [explanation]
        })
    }
}

/// One command and the position of its name.
public struct Statement: Sendable, Equatable {
    public var command: Command
    public var location: SourceLocation
    /// The command as written (for `run --echo`); empty for one made in code.
    public var text: String = ""

    public init(_ command: Command, at location: SourceLocation) {
        self.command = command
        self.location = location
    }
}

/// The commands of the language (contract, Commands).
public enum Command: Sendable, Equatable {
    case cd(Word?)
    case pwd
    case ls(ListCommand)
    case pageNext
    /// `page token [TOKEN]`: what a page token holds (default: the last listing's).
    case pageToken(Word?)
    /// `raw`: the path is the exact object name, not normalised (for names like `wrongPrefix//sadItem`).
    /// Targets: none (the current reference), names or patterns; each object's metadata is printed.
    case metaGet([Word], raw: Bool, filters: [MetadataFilter])
    case metaSet(MetaSetCommand)
    case metaUnset(MetaUnsetCommand)
    case put(PutCommand)
    case get(object: Word, file: Word?, raw: Bool)
    case cat(Word, raw: Bool)
    case rm([Word], raw: Bool, filters: [MetadataFilter])
    /// `meta rename custom.OLD custom.NEW [--] TARGET…`: moves a custom key, keeping each object's value.
    case metaRename(MetaRenameCommand)
    case echo([Word])
    case help(Word?)
    case exit
    case rulesShow
    case rulesLoad(Word)
    /// `rules load --sample NAME`: one of the sample rules compiled in.
    case rulesLoadSample(Word)
    /// `rules reset`: the open rules of a new bucket again.
    case rulesReset
    case rulesWhy
    case login(uid: Word, claims: [(key: Word, value: Word)])
    /// `login --id-token TOKEN`: a real bucket, used as the user of a Firebase ID token (rule F1).
    case loginToken(Word)
    case logout
    case whoami
    case snapshot(SnapshotCommand)
    /// `explain COMMAND`: the requests COMMAND stands for, in the SDK and the REST APIs; nothing runs. `text` is
    /// COMMAND as written, for the heading.
    indirect case explain(Command, text: String)
    /// `dry-run COMMAND`: the line (or script) it is in runs as a dry run: nothing is saved, the plan is printed.
    indirect case dryRun(Command)

    /// The command's words in the command table.
    public var name: String {
        switch self {
        case .cd: "cd"
        case .pwd: "pwd"
        case .ls: "ls"
        case .pageNext: "page next"
        case .pageToken: "page token"
        case .metaGet: "meta get"
        case .metaRename: "meta rename"
        case .metaSet: "meta set"
        case .metaUnset: "meta unset"
        case .put: "put"
        case .get: "get"
        case .cat: "cat"
        case .rm: "rm"
        case .echo: "echo"
        case .help: "help"
        case .exit: "exit"
        case .rulesShow: "rules show"
        case .rulesLoad, .rulesLoadSample: "rules load"
        case .rulesReset: "rules reset"
        case .rulesWhy: "rules why"
        case .login, .loginToken: "login"
        case .logout: "logout"
        case .whoami: "whoami"
        case .explain: "explain"
        case .dryRun: "dry-run"
        case .snapshot(.save): "snapshot save"
        case .snapshot(.list): "snapshot list"
        case .snapshot(.diff): "snapshot diff"
        case .snapshot(.restore): "snapshot restore"
        case .snapshot(.remove): "snapshot rm"
        }
    }

    /// The command's one declaration.
    public var declaration: CommandDeclaration { CommandCatalog.declaration(named: name)! }

    /// Whether the command may change the bucket.
    public var changesBucket: Bool { declaration.changesBucket }

    public static func == (lhs: Command, rhs: Command) -> Bool {
        switch (lhs, rhs) {
        case (.cd(let a), .cd(let b)): a == b
        case (.pwd, .pwd), (.pageNext, .pageNext), (.exit, .exit), (.rulesShow, .rulesShow), (.rulesWhy, .rulesWhy),
            (.logout, .logout), (.whoami, .whoami):
            true
        case (.ls(let a), .ls(let b)): a == b
        case (.metaGet(let a, let x, let f), .metaGet(let b, let y, let g)): a == b && x == y && f == g
        case (.metaRename(let a), .metaRename(let b)): a == b
        case (.metaSet(let a), .metaSet(let b)): a == b
        case (.metaUnset(let a), .metaUnset(let b)): a == b
        case (.put(let a), .put(let b)): a == b
        case (.get(let a, let f, let x), .get(let b, let g, let y)): a == b && f == g && x == y
        case (.cat(let a, let x), .cat(let b, let y)): a == b && x == y
        case (.rm(let a, let x, let f), .rm(let b, let y, let g)): a == b && x == y && f == g
        case (.echo(let a), .echo(let b)): a == b
        case (.pageToken(let a), .pageToken(let b)): a == b
        case (.help(let a), .help(let b)): a == b
        case (.rulesLoad(let a), .rulesLoad(let b)), (.rulesLoadSample(let a), .rulesLoadSample(let b)): a == b
        case (.rulesReset, .rulesReset): true
        case (.snapshot(let a), .snapshot(let b)): a == b
        case (.login(let a, let x), .login(let b, let y)): a == b && x.map(\.key) == y.map(\.key) && x.map(\.value) == y.map(\.value)
        case (.loginToken(let a), .loginToken(let b)): a == b
        case (.explain(let a, let x), .explain(let b, let y)): a == b && x == y
        case (.dryRun(let a), .dryRun(let b)): a == b
        default: false
        }
    }
}

/// `snapshot save|list|diff|restore|rm`: named states of the whole bucket.
public enum SnapshotCommand: Sendable, Equatable {
    case save(Word)
    case list
    /// From the first snapshot to the second, or to the bucket as it is now.
    case diff(Word, Word?)
    case restore(Word)
    case remove(Word)
}

public struct ListCommand: Sendable, Equatable {
    /// `-n N`: checked against 1…1000 when it runs (rule L6).
    public var maxResults: (value: Int, location: SourceLocation)?
    public var all = false
    public var pageToken: Word?
    public var long = false
    public var path: Word?

    public init() {}

    public static func == (lhs: ListCommand, rhs: ListCommand) -> Bool {
        lhs.maxResults?.value == rhs.maxResults?.value && lhs.all == rhs.all && lhs.pageToken == rhs.pageToken
            && lhs.long == rhs.long && lhs.path == rhs.path
    }
}

/// `meta set KEY=VALUE… [--] [TARGET…]`.
public struct MetaSetCommand: Sendable, Equatable {
    /// The update the assignments describe, checked when parsed (rule M7).
    public var update: MetadataUpdate
    public var assignments: [(key: Word, value: Word)]
    /// Paths or patterns; none means the current reference.
    public var targets: [Word]
    /// `--where`: only the targets whose metadata pass every filter.
    public var filters: [MetadataFilter] = []

    public static func == (lhs: MetaSetCommand, rhs: MetaSetCommand) -> Bool {
        lhs.update == rhs.update && lhs.targets == rhs.targets && lhs.filters == rhs.filters
            && lhs.assignments.map(\.key) == rhs.assignments.map(\.key)
            && lhs.assignments.map(\.value) == rhs.assignments.map(\.value)
    }
}

/// `meta unset KEY… [--] [TARGET…]`.
public struct MetaUnsetCommand: Sendable, Equatable {
    public var update: MetadataUpdate
    public var keys: [Word]
    public var targets: [Word]
    public var filters: [MetadataFilter] = []
}

/// `meta rename custom.OLD custom.NEW [--where F]… [--] [TARGET…]`.
public struct MetaRenameCommand: Sendable, Equatable {
    /// The custom keys, without `custom.`.
    public var old: Word
    public var new: Word
    public var targets: [Word]
    public var filters: [MetadataFilter] = []
}

/// `put [--raw] [--content-type T] [--md5 B64] (LOCAL_FILE | --data TEXT) [DEST]`.
public struct PutCommand: Sendable, Equatable {
    public enum Source: Sendable, Equatable {
        case file(Word)
        case data(Word)
    }

    public var raw = false
    public var contentType: Word?
    public var md5: Word?
    public var source: Source
    public var destination: Word?
}
