import StoreshCore

/// Turns a script's words into commands. The whole script is parsed before anything runs, so a syntax
/// error anywhere runs nothing (contract, Scripts).
public enum Parser {
    public static func parse(_ source: SourceText) throws(Diagnostic) -> Script {
        var statements: [Statement] = []
        for words in try Lexer.commands(in: source.text) {
            var statement = try parseCommand(words.words)
            statement.text = words.source
            // `explain COMMAND` heads its explanation with COMMAND as typed, quotes included, so that it can be
            // run as it reads (the words alone have lost their quotes).
            if case .explain(let inner, _) = statement.command, words.words.count > 1,
                words.words[1].location.line == words.words[0].location.line
            {
                let offset = words.words[1].location.column - words.words[0].location.column
                statement.command = .explain(inner, text: String(String.UnicodeScalarView(words.source.unicodeScalars.dropFirst(offset))))
            }
            statements.append(statement)
        }
        return Script(statements: statements)
    }

    /// One command from its words (the first is the command's name).
    public static func parseCommand(_ words: [Word]) throws(Diagnostic) -> Statement {
        var reader = WordReader(words: words)
        let name = reader.next()!
        let command: Command
        switch name.text {
        case "cd":
            command = .cd(try reader.optionalLast(for: "cd"))
        case "pwd":
            try reader.expectEnd(for: "pwd")
            command = .pwd
        case "ls":
            command = .ls(try parseList(&reader))
        case "page":
            guard let sub = reader.next() else {
                throw Diagnostic.syntax("`page` needs a subcommand: page next or page token [TOKEN]", at: afterEnd(of: name))
            }
            switch sub.text {
            case "next":
                try reader.expectEnd(for: "page next")
                command = .pageNext
            case "token":
                command = .pageToken(try reader.optionalLast(for: "page token"))
            default:
                throw Diagnostic.syntax(
                    "unknown subcommand 'page \(sub.text)'; the subcommands are `page next` and `page token [TOKEN]`", at: sub.location)
            }
        case "meta":
            command = try parseMeta(name, &reader)
        case "put":
            command = .put(try parsePut(name, &reader))
        case "get":
            let raw = reader.takeRaw()
            let object = try reader.required("OBJECT", for: "get", after: name)
            command = .get(object: object, file: try reader.optionalLast(for: "get"), raw: raw)
        case "cat":
            let raw = reader.takeRaw()
            let object = try reader.required("OBJECT", for: "cat", after: name)
            try reader.expectEnd(for: "cat")
            command = .cat(object, raw: raw)
        case "rm":
            let raw = reader.takeRaw()
            let (targets, filters) = try reader.targetsAndFilters(for: "rm")
            guard !targets.isEmpty else {
                throw Diagnostic.syntax("`rm` needs at least one TARGET: rm [--raw] [--where F] TARGET…", at: afterEnd(of: name))
            }
            command = .rm(targets, raw: raw, filters: filters)
        case "echo":
            command = .echo(reader.rest(skippingDoubleDash: false))
        case "help":
            let topic = reader.rest(skippingDoubleDash: false)
            if let first = topic.first {
                let text = topic.map(\.text).joined(separator: " ")
                let known = [text, first.text].first { !CommandCatalog.helps(for: $0).isEmpty || CommandCatalog.topics[$0] != nil }
                guard let known else { throw unknownCommand(Word(text, at: first.location)) }
                command = .help(Word(known, at: first.location))
            } else {
                command = .help(nil)
            }
        case "dry-run":
            let inner = reader.rest(skippingDoubleDash: false)
            guard !inner.isEmpty else {
                throw Diagnostic.syntax("`dry-run` needs a command: dry-run meta set cacheControl=no-cache -- images/*", at: afterEnd(of: name))
            }
            command = .dryRun(try parseCommand(inner).command)
        case "explain":
            let inner = reader.rest(skippingDoubleDash: false)
            guard !inner.isEmpty else {
                throw Diagnostic.syntax("`explain` needs a command: explain ls -n 2 photos", at: afterEnd(of: name))
            }
            command = .explain(try parseCommand(inner).command, text: inner.map(\.text).joined(separator: " "))
        case "exit", "quit":
            try reader.expectEnd(for: name.text)
            command = .exit
        case "rules":
            guard let sub = reader.next() else {
                throw Diagnostic.syntax(
                    "`rules` needs a subcommand: rules show, rules load FILE, rules load --sample NAME, rules reset or rules why",
                    at: afterEnd(of: name))
            }
            switch sub.text {
            case "show":
                try reader.expectEnd(for: "rules show")
                command = .rulesShow
            case "why":
                try reader.expectEnd(for: "rules why")
                command = .rulesWhy
            case "load":
                let file = try reader.required("FILE", for: "rules load", after: sub)
                if file.text == "--sample" && file.isBare {
                    let sample = try reader.required("a sample's name (owner-only, version1, open)", for: "rules load --sample", after: file)
                    try reader.expectEnd(for: "rules load --sample")
                    command = .rulesLoadSample(sample)
                } else {
                    try reader.expectEnd(for: "rules load")
                    command = .rulesLoad(file)
                }
            case "reset":
                try reader.expectEnd(for: "rules reset")
                command = .rulesReset
            default:
                var message = "unknown subcommand 'rules \(sub.text)'"
                if let near = Suggestion.nearest(to: sub.text, among: CommandCatalog.subcommands(of: "rules")) { message += "; did you mean 'rules \(near)'?" }
                throw Diagnostic.syntax(message, at: sub.location)
            }
        case "snapshot":
            command = .snapshot(try parseSnapshot(&reader, after: name))
        case "login":
            let uid = try reader.required("a UID", for: "login", after: name)
            if uid.text == "--id-token", uid.isBare {
                let token = try reader.optionValue(for: uid)
                try reader.expectEnd(for: "login")
                command = .loginToken(token)
                break
            }
            var claims: [(key: Word, value: Word)] = []
            while let option = reader.next() {
                guard option.text == "--claim", option.isBare else {
                    throw unknownOption(option, for: "login")
                }
                let claim = try reader.optionValue(for: option)
                guard let equals = claim.firstUnquoted("=") else {
                    throw Diagnostic.syntax("--claim takes KEY=VALUE, e.g. --claim admin=true", at: claim.location)
                }
                let (key, value) = claim.split(at: equals)
                claims.append((key, value))
            }
            command = .login(uid: uid, claims: claims)
        case "logout":
            try reader.expectEnd(for: "logout")
            command = .logout
        case "whoami":
            try reader.expectEnd(for: "whoami")
            command = .whoami
        default:
            throw unknownCommand(name)
        }
        return Statement(command, at: name.location)
    }

    private static func parseSnapshot(_ reader: inout WordReader, after name: Word) throws(Diagnostic) -> SnapshotCommand {
        guard let sub = reader.next() else {
            throw Diagnostic.syntax(
                "`snapshot` needs a subcommand: snapshot save NAME, list, diff NAME [NAME], restore NAME or rm NAME",
                at: afterEnd(of: name))
        }
        func snapshotName(required: Bool) throws(Diagnostic) -> Word? {
            let word: Word
            if required {
                word = try reader.required("a snapshot NAME", for: "snapshot \(sub.text)", after: sub)
            } else {
                guard let next = reader.next() else { return nil }
                word = next
            }
            do {
                try SnapshotInfo.validate(name: word.text)
            } catch {
                throw Diagnostic.beforeRunning(error, at: word.location)
            }
            return word
        }
        let command: SnapshotCommand
        switch sub.text {
        case "save": command = .save(try snapshotName(required: true)!)
        case "list": command = .list
        case "diff": command = .diff(try snapshotName(required: true)!, try snapshotName(required: false))
        case "restore": command = .restore(try snapshotName(required: true)!)
        case "rm": command = .remove(try snapshotName(required: true)!)
        default:
            var message = "unknown subcommand 'snapshot \(sub.text)'"
            if let near = Suggestion.nearest(to: sub.text, among: CommandCatalog.subcommands(of: "snapshot")) { message += "; did you mean 'snapshot \(near)'?" }
            throw Diagnostic.syntax(message, at: sub.location)
        }
        try reader.expectEnd(for: "snapshot \(sub.text)")
        return command
    }

    static func unknownCommand(_ word: Word) -> Diagnostic {
        var message = "unknown command '\(word.text)'"
        let candidates = CommandCatalog.firstWords + CommandCatalog.commands.map(\.name)
        if let near = Suggestion.nearest(to: word.text, among: candidates) {
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

    static func parseList(_ reader: inout WordReader) throws(Diagnostic) -> ListCommand {
        var list = ListCommand()
        while let word = reader.next() {
            if word.isOption {
                switch word.text {
                case "-n":
                    let value = try reader.optionValue(for: word)
                    guard let number = Int(value.text) else {
                        throw Diagnostic.syntax("-n takes a whole number of entries (1 to 1000), not '\(value.text)'", at: value.location)
                    }
                    list.maxResults = (number, value.location)
                case "--all": list.all = true
                case "--token": list.pageToken = try reader.optionValue(for: word)
                case "-l": list.long = true
                case "--": if let path = reader.next() { try setPath(path, &list) }
                default: throw unknownOption(word, for: "ls")
                }
            } else {
                try setPath(word, &list)
            }
        }
        if list.all && list.pageToken != nil {
            throw Diagnostic.syntax("--all lists every page from the start; it cannot take --token", at: list.pageToken!.location)
        }
        return list

        func setPath(_ word: Word, _ list: inout ListCommand) throws(Diagnostic) {
            guard list.path == nil else {
                throw Diagnostic.syntax("`ls` lists one PATH; '\(word.text)' is a second one", at: word.location)
            }
            list.path = word
        }
    }

    static func parseMeta(_ name: Word, _ reader: inout WordReader) throws(Diagnostic) -> Command {
        guard let sub = reader.next() else {
            throw Diagnostic.syntax("`meta` needs a subcommand: meta get, meta set, meta unset or meta rename", at: afterEnd(of: name))
        }
        switch sub.text {
        case "get":
            let raw = reader.takeRaw()
            let (targets, filters) = try reader.targetsAndFilters(for: "meta get")
            return .metaGet(targets, raw: raw, filters: filters)
        case "rename":
            guard let old = reader.next(), let new = reader.next() else {
                throw Diagnostic.syntax("`meta rename` needs two keys: meta rename custom.OLD custom.NEW [--] TARGET…", at: afterEnd(of: sub))
            }
            for key in [old, new] where !key.text.hasPrefix("custom.") || key.text.count == "custom.".count {
                throw Diagnostic.syntax("`meta rename` moves a custom key: write it custom.NAME, not '\(key.text)'", at: key.location)
            }
            if old.text == new.text {
                // Moving a key onto itself would read its value, set it, then delete the same key: data lost.
                throw Diagnostic.syntax(
                    "`meta rename` needs two different keys; \(old.text) and \(new.text) are the same", at: new.location)
            }
            let (targets, filters) = try reader.targetsAndFilters(for: "meta rename")
            return .metaRename(MetaRenameCommand(
                old: Word(String(old.text.dropFirst("custom.".count)), at: old.location),
                new: Word(String(new.text.dropFirst("custom.".count)), at: new.location), targets: targets, filters: filters))
        case "set":
            var update = MetadataUpdate()
            var assignments: [(key: Word, value: Word)] = []
            var targets: [Word] = []
            var afterDoubleDash = false
            var filters: [MetadataFilter] = []
            while let word = reader.next() {
                if !afterDoubleDash && word.text == "--" && word.isBare {
                    afterDoubleDash = true
                } else if !afterDoubleDash && word.text == "--where" && word.isBare {
                    filters.append(try MetadataFilter.parse(try reader.optionValue(for: word)))
                } else if !afterDoubleDash && word.isLongOption {
                    try refuseStrayOption(word, for: "meta set")
                } else if !afterDoubleDash, let equals = word.firstUnquoted("=") {
                    let (key, value) = word.split(at: equals)
                    do {
                        try update.set(key.text, to: value.text)
                    } catch var error {
                        // `cacheControl=public, max-age=60`: the blank split one value into two words.
                        if let previous = assignments.last, error.code == .invalidArgument, error.message.hasPrefix("Unknown metadata property") {
                            error.message += " (a value with a blank in it is quoted: \(previous.key.text)=\"\(previous.value.text) \(word.text)\")"
                        }
                        throw Diagnostic.beforeRunning(error, at: key.location)
                    }
                    assignments.append((key, value))
                } else {
                    targets.append(word)
                }
            }
            guard !assignments.isEmpty else {
                throw Diagnostic.syntax(
                    "`meta set` needs at least one KEY=VALUE, e.g. meta set contentType=image/jpeg", at: afterEnd(of: sub))
            }
            return .metaSet(MetaSetCommand(update: update, assignments: assignments, targets: targets, filters: filters))
        case "unset":
            var update = MetadataUpdate()
            var keys: [Word] = []
            var targets: [Word] = []
            var filters: [MetadataFilter] = []
            while let word = reader.next() {
                if word.text == "--" && word.isBare {
                    targets += reader.rest(skippingDoubleDash: false)
                    break
                }
                if word.text == "--where" && word.isBare {
                    filters.append(try MetadataFilter.parse(try reader.optionValue(for: word)))
                    continue
                }
                try refuseStrayOption(word, for: "meta unset")
                if targets.isEmpty && looksLikeKey(word, isFirst: keys.isEmpty) {
                    do {
                        try update.unset(word.text)
                    } catch {
                        throw Diagnostic.beforeRunning(error, at: word.location)
                    }
                    keys.append(word)
                } else {
                    targets.append(word)
                }
            }
            guard !keys.isEmpty else {
                throw Diagnostic.syntax(
                    "`meta unset` needs at least one KEY, e.g. meta unset cacheControl", at: afterEnd(of: sub))
            }
            return .metaUnset(MetaUnsetCommand(update: update, keys: keys, targets: targets, filters: filters))
        default:
            var message = "unknown subcommand 'meta \(sub.text)'"
            if let near = Suggestion.nearest(to: sub.text, among: CommandCatalog.subcommands(of: "meta")) {
                message += "; did you mean 'meta \(near)'?"
            } else {
                message += "; use meta get, meta set, meta unset or meta rename"
            }
            throw Diagnostic.syntax(message, at: sub.location)
        }
    }

    /// In `meta unset`, a word is a key when it names a property (writable or not, so that read-only ones get
    /// their error), `custom`, or `custom.NAME`; the first word is also taken as a key when it is a near miss
    /// of one, so that a typo is reported rather than taken for a target.
    public static func looksLikeKey(_ word: Word, isFirst: Bool) -> Bool {
        let text = word.text
        if MetadataProperty(rawValue: text) != nil || text == "custom"
            || MetadataKey.customPrefixes.contains(where: { text.hasPrefix($0) })
        {
            return true
        }
        let keyNames = MetadataProperty.allCases.map(\.rawValue) + ["custom"]
        return isFirst && !text.contains("/") && Suggestion.nearest(to: text, among: keyNames) != nil
    }

    static func parsePut(_ name: Word, _ reader: inout WordReader) throws(Diagnostic) -> PutCommand {
        var raw = false
        var contentType: Word?
        var md5: Word?
        var data: Word?
        var positionals: [Word] = []
        var optionsEnded = false
        while let word = reader.next() {
            if !optionsEnded && word.isOption {
                switch word.text {
                case "--raw": raw = true
                case "--content-type": contentType = try reader.optionValue(for: word)
                case "--md5": md5 = try reader.optionValue(for: word)
                case "--data": data = try reader.optionValue(for: word)
                case "--": optionsEnded = true
                default:
                    throw unknownOption(word, for: "put")
                }
            } else {
                positionals.append(word)
            }
        }
        let source: PutCommand.Source
        var destination: Word?
        if let data {
            if positionals.count > 1 {
                throw Diagnostic.syntax(
                    "with --data, `put` takes at most one DEST; '\(positionals[1].text)' is one too many",
                    at: positionals[1].location)
            }
            source = .data(data)
            destination = positionals.first
        } else {
            guard let file = positionals.first else {
                throw Diagnostic.syntax(
                    "`put` needs a LOCAL_FILE or --data TEXT: put [--raw] [--content-type T] [--md5 B64] (LOCAL_FILE | --data TEXT) [DEST]",
                    at: afterEnd(of: name))
            }
            if positionals.count > 2 {
                throw Diagnostic.syntax(
                    "`put` takes a LOCAL_FILE and at most one DEST; '\(positionals[2].text)' is one too many",
                    at: positionals[2].location)
            }
            source = .file(file)
            destination = positionals.count > 1 ? positionals[1] : nil
        }
        if raw && destination == nil {
            throw Diagnostic.syntax("--raw needs a DEST: the exact object name to write", at: afterEnd(of: name))
        }
        return PutCommand(raw: raw, contentType: contentType, md5: md5, source: source, destination: destination)
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

/// Reads a command's words one at a time.
struct WordReader {
    let words: [Word]
    var index = 0

    mutating func next() -> Word? {
        guard index < words.count else { return nil }
        defer { index += 1 }
        return words[index]
    }

    /// The remaining words; a bare `--` first is dropped when asked.
    mutating func rest(skippingDoubleDash: Bool) -> [Word] {
        var remaining = Array(words[min(index, words.count)...])
        index = words.count
        if skippingDoubleDash, let first = remaining.first, first.text == "--", first.isBare { remaining.removeFirst() }
        return remaining
    }

    mutating func expectEnd(for command: String) throws(Diagnostic) {
        if let extra = next() {
            throw Diagnostic.syntax("`\(command)` takes no more arguments; '\(extra.text)' is extra", at: extra.location)
        }
    }

    /// One optional word that must be the last.
    mutating func optionalLast(for command: String) throws(Diagnostic) -> Word? {
        var word = next()
        if let dash = word, dash.text == "--", dash.isBare { word = next() }
        try expectEnd(for: command)
        return word
    }

    mutating func required(_ what: String, for command: String, after name: Word) throws(Diagnostic) -> Word {
        guard let word = next() else {
            throw Diagnostic.syntax("`\(command)` needs \(what)", at: Parser.afterEnd(of: name))
        }
        return word
    }

    /// The rest of the words as targets, with the `--where F` options among them taken out. A bare `--` before
    /// the first target ends the options (what follows is targets only, `--where` included); after one, it is a
    /// target like any other word, as it always was.
    mutating func targetsAndFilters(for command: String) throws(Diagnostic) -> (targets: [Word], filters: [MetadataFilter]) {
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
                if !afterDoubleDash { try Parser.refuseStrayOption(word, for: command) }
                targets.append(word)
            }
        }
        return (targets, filters)
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
