import StoreshCore

/// One way to finish the word under the cursor.
package struct CompletionCandidate: Sendable, Equatable {
    /// The whole word (unescaped) that replaces what was typed.
    package var word: String
    /// What a list of candidates shows (a path's last part, a folder with its `/`).
    package var display: String
    /// True when more can follow without a blank (a folder's `/`, a key's `=`).
    package var continues: Bool
}

/// Tab completion for the shell: commands, subcommands and options; metadata keys, with the `custom.NAME` keys
/// present on the current object; and paths (folders with a trailing `/`) at any depth, `..` included.
/// A path completion reads one page at most, starting at the typed name.
package struct Completer {
    package static let pageSize = 200

    let source: ImmediateReads
    let current: StoragePath
    /// The names `rules load --sample` takes (the session's rules know them; none without rules).
    let ruleSamples: [String]

    package init(source: ImmediateReads, current: StoragePath, ruleSamples: [String] = []) {
        self.source = source
        self.current = current
        self.ruleSamples = ruleSamples
    }

    /// What completing the word under the cursor found.
    package struct Result: Sendable {
        /// The word as typed so far, unescaped.
        package var typed: String
        /// The quote the word is inside of, if any (so that the insertion is escaped for it, and closed).
        package var openQuote: Unicode.Scalar?
        package var candidates: [CompletionCandidate]
        /// True when a page was full, so more candidates may exist than were read: nothing beyond what is
        /// typed may be assumed common to all of them.
        package var truncated: Bool
    }

    /// The word being completed and its candidates, for the line up to the cursor.
    package func complete(_ lineBeforeCursor: String) -> Result {
        let (words, typed, openQuote) = Self.split(lineBeforeCursor)
        var truncated = false
        // By bytes (rule P7): a candidate continues what is typed when its bytes do, whatever its Unicode form.
        let found = candidates(words: words, typed: typed, truncated: &truncated).filter {
            $0.word.utf8.starts(with: typed.utf8) && !$0.word.utf8.elementsEqual(typed.utf8)
        }
        return Result(typed: typed, openQuote: openQuote, candidates: found, truncated: truncated)
    }

    func candidates(words: [String], typed: String, truncated: inout Bool) -> [CompletionCandidate] {
        guard let command = words.first else { return Self.plain(CommandCatalog.firstWords) }
        let subcommands = CommandCatalog.subcommands(of: command)
        if words.count == 1 && !subcommands.isEmpty { return Self.plain(subcommands) }
        let name = subcommands.isEmpty ? command : "\(command) \(words[1])"
        guard let declaration = CommandCatalog.declaration(named: name) else { return [] }
        // The words after the command's own.
        let arguments = words.dropFirst(subcommands.isEmpty ? 1 : 2)
        // `explain COMMAND…` and `dry-run COMMAND…` complete COMMAND as if it stood alone.
        if case .commandLine = declaration.completion {
            return candidates(words: Array(arguments), typed: typed, truncated: &truncated)
        }
        if typed.hasPrefix("-") { return Self.plain(declaration.options) }
        if let option = arguments.last, let kind = declaration.optionCompletions[option] {
            return complete(kind, arguments: [], typed: typed, truncated: &truncated)
        }
        return complete(declaration.completion, arguments: Array(arguments), typed: typed, truncated: &truncated)
    }

    /// The candidates a kind of argument offers, after a command's `arguments`.
    func complete(
        _ kind: CompletionKind, arguments: [String], typed: String, truncated: inout Bool
    ) -> [CompletionCandidate] {
        func paths(_ typed: String, foldersOnly: Bool) -> [CompletionCandidate] {
            self.paths(typed, foldersOnly: foldersOnly, truncated: &truncated)
        }
        switch kind {
        case .nothing: return []
        case .folders: return paths(typed, foldersOnly: true)
        case .objects: return paths(typed, foldersOnly: false)
        case .commandLine: return candidates(words: arguments, typed: typed, truncated: &truncated)
        case .ruleSamples: return Self.plain(ruleSamples)
        case .commandNames:
            guard let topic = arguments.first else { return Self.plain(CommandCatalog.firstWords) }
            return arguments.count == 1 ? Self.plain(CommandCatalog.subcommands(of: topic)) : []
        case .snapshotNames(let count):
            return arguments.count < count ? Self.plain((try? source.snapshotNames()) ?? []) : []
        case .assignmentsThenObjects:
            if arguments.contains("--") { return paths(typed, foldersOnly: false) }
            if typed.contains("=") { return [] }
            // After an assignment, a word without = is a target.
            let hasAssignment = arguments.contains { $0.contains("=") }
            return keys(assignments: true) + (hasAssignment ? paths(typed, foldersOnly: false) : [])
        case .keysThenObjects:
            if arguments.contains("--") { return paths(typed, foldersOnly: false) }
            if arguments.allSatisfy({
                MetaUnsetCommand.looksLikeKey(Word($0, at: SourceLocation(line: 1, column: 1)), isFirst: false)
            }) {
                return keys(assignments: false) + paths(typed, foldersOnly: false)
            }
            return paths(typed, foldersOnly: false)
        }
    }

    static func plain(_ words: [String]) -> [CompletionCandidate] {
        words.map { CompletionCandidate(word: $0, display: $0, continues: false) }
    }

    /// Writable keys (as `KEY=` in meta set), `custom`, and the custom keys of the current object.
    func keys(assignments: Bool) -> [CompletionCandidate] {
        var names = WritableProperty.allCases.map(\.rawValue) + CloudStorageWritableField.names
        if let object = try? current.objectName(), let metadata = try? source.currentMetadata(of: object) {
            names += metadata.customMetadata.sortedByKeyBytes.map { "custom." + $0.key }
            names += metadata.cloudStorage.contexts.sortedByKeyBytes.map {
                CloudStorageWritableField.contextPrefix + $0.key
            }
        }
        if assignments {
            return (names + ["custom.", CloudStorageWritableField.contextPrefix]).map {
                CompletionCandidate(word: $0.hasSuffix(".") ? $0 : $0 + "=", display: $0, continues: true)
            }
        }
        // A custom time is never removed, and a storage class only replaced (rule M9): `meta unset` offers neither.
        let neverUnset = [CloudStorageWritableField.customTime.key, CloudStorageWritableField.storageClass.key]
        return (names.filter { !neverUnset.contains($0) } + ["custom"]).map {
            CompletionCandidate(word: $0, display: $0, continues: false)
        }
    }

    /// Folders and objects whose names continue the typed path, from one page read at the typed name.
    func paths(_ typed: String, foldersOnly: Bool, truncated: inout Bool) -> [CompletionCandidate] {
        // Cut at the last `/` by bytes: a `/` followed by a combining mark is one Character, not a cut.
        let slash = typed.utf8.lastIndex(of: UInt8(ascii: "/"))
        let folderPart = slash.map { String(Substring(typed.utf8[...$0])) } ?? ""
        let namePart = slash.map { String(Substring(typed.utf8[typed.utf8.index(after: $0)...])) } ?? typed
        if namePart == "." || namePart == ".." {
            return [CompletionCandidate(word: folderPart + "../", display: "../", continues: true)]
        }
        guard let folder = try? StoragePath.resolve(folderPart, from: current, bucket: source.name) else { return [] }
        let start = folder.listingPrefix + namePart
        guard
            let page = try? source.listPage(
                folder, options: ListOptions(maxResults: Self.pageSize, startOffset: start.isEmpty ? nil : start))
        else { return [] }
        // A full page whose last entry still continues the typed name may hide more that do.
        if page.nextPageToken != nil {
            let lastEntries = [page.prefixes.last.map { $0 + "/" }, page.items.last].compactMap { $0 }
            let last = lastEntries.max { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            if let last, last.utf8.starts(with: start.utf8) { truncated = true }
        }
        let strip = folder.listingPrefix.utf8.count
        func lastPart(_ fullPath: String) -> String { String(Substring(fullPath.utf8.dropFirst(strip))) }
        var candidates = page.prefixes.map {
            CompletionCandidate(word: folderPart + lastPart($0) + "/", display: lastPart($0) + "/", continues: true)
        }
        if !foldersOnly {
            candidates += page.items.map {
                CompletionCandidate(word: folderPart + lastPart($0), display: lastPart($0), continues: false)
            }
        }
        return candidates.sorted { $0.word.utf8.lexicographicallyPrecedes($1.word.utf8) }
    }

    /// The words of the command under the cursor (after the last `;`), the word being typed (unescaped), and
    /// the quote it is inside of.
    static func split(_ line: String) -> (words: [String], typed: String, openQuote: Unicode.Scalar?) {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Unicode.Scalar?
        var escaped = false
        for scalar in line.unicodeScalars {
            if escaped {
                word.unicodeScalars.append(scalar)
                escaped = false
                continue
            }
            if let open = quote {
                if scalar == open {
                    quote = nil
                } else if scalar == "\\" && open == "\"" {
                    escaped = true
                } else {
                    word.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case " ", "\t":
                if inWord { words.append(word) }
                word = ""
                inWord = false
            case ";":
                words = []
                word = ""
                inWord = false
            case "'", "\"":
                quote = scalar
                inWord = true
            case "\\":
                escaped = true
                inWord = true
            default:
                word.unicodeScalars.append(scalar)
                inWord = true
            }
        }
        return (words, word, quote)
    }

    /// Text to insert so that the lexer reads it back as given: outside quotes, blanks, quotes and other
    /// special characters get a `\`; inside "…" only `"` and `\` do; inside '…' everything is literal but `'`,
    /// which closes the quote, is written `'\''`.
    package static func escaped(_ text: String, inside quote: Unicode.Scalar? = nil) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch quote {
            case "'": result += scalar == "'" ? "'\\''" : String(scalar)
            case "\"":
                if scalar == "\"" || scalar == "\\" { result += "\\" }
                result.unicodeScalars.append(scalar)
            default:
                if " \t'\"\\;#*?[".unicodeScalars.contains(scalar) { result += "\\" }
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
