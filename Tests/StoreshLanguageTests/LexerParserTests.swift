import StoreshCore
import Testing

@testable import StoreshLanguage

func words(_ text: String) throws -> [[String]] {
    try Lexer.commands(in: text).map { $0.words.map(\.text) }
}

func syntaxError(_ text: String) -> Diagnostic? {
    do {
        _ = try Parser.parse(SourceText(name: "t", text: text))
        return nil
    } catch {
        return error
    }
}

@Suite("Lexer (contract, Lexical rules)")
struct LexerTests {
    @Test("commands split at newlines and ;, words at blanks; comments and continuations")
    func structure() throws {
        #expect(try words("ls a\n\n  pwd ; echo x;;\n") == [["ls", "a"], ["pwd"], ["echo", "x"]])
        #expect(try words("echo a # a comment ; not a command\nls") == [["echo", "a"], ["ls"]])
        #expect(try words("meta set \\\n  contentType=x \\\n  -- a") == [["meta", "set", "contentType=x", "--", "a"]])
        #expect(try words("echo a\r\nls\r\n") == [["echo", "a"], ["ls"]])
        #expect(try words("#!/usr/bin/env -S storesh run\nls") == [["ls"]])
        // Only at the start of a word: values like #fff stay values.
        #expect(
            try words("meta set custom.color=#fff -- a#b #c d\nls;#x") == [
                ["meta", "set", "custom.color=#fff", "--", "a#b"], ["ls"],
            ])
    }

    @Test("quotes: '…' literal, \"…\" with four escapes, quotes inside a word, empty quoted words")
    func quoting() throws {
        #expect(
            try words(#"echo 'a  b' "c\"d" 'it''s' "\\n" "x\ty""#) == [["echo", "a  b", "c\"d", "its", "\\n", "x\ty"]])
        #expect(
            try words(#"meta set custom.location="Yosemite, CA, USA""#) == [
                ["meta", "set", "custom.location=Yosemite, CA, USA"]
            ])
        #expect(try words("echo '' \"\" a''b") == [["echo", "", "", "ab"]])
        #expect(try words("echo 'a;b#c' a\\;b a\\ b") == [["echo", "a;b#c", "a;b", "a b"]])
    }

    @Test("words know which characters were quoted")
    func literalMask() throws {
        let word = try Lexer.commands(in: "x a'*'\\?b")[0].words[1]
        #expect(word.text == "a*?b")
        #expect(word.literal == [false, true, true, false])
        #expect(word.firstUnquoted("*") == nil)
    }

    @Test("positions: line and column of every word, across continuations and multi-byte text")
    func positions() throws {
        let commands = try Lexer.commands(in: "ls\n  meta get  é/x\necho a \\\n b")
        #expect(commands[0].words[0].location == SourceLocation(line: 1, column: 1))
        #expect(
            commands[1].words.map(\.location) == [
                SourceLocation(line: 2, column: 3), SourceLocation(line: 2, column: 8),
                SourceLocation(line: 2, column: 13),
            ])
        #expect(commands[2].words[2].location == SourceLocation(line: 4, column: 2))
    }

    @Test(
        "lexical errors are positioned",
        arguments: [
            ("echo 'abc", 1, 6, "unterminated single quote"),
            ("ls\necho \"abc\nls", 2, 6, "unterminated double quote"),
            ("echo \"a\\qb\"", 1, 8, "unknown escape"),
            ("echo a \\", 1, 8, "no next line"),
        ])
    func errors(text: String, line: Int, column: Int, message: String) {
        let error = syntaxError(text)
        #expect(error?.location == SourceLocation(line: line, column: column))
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "none")")
        #expect(error?.phase == .beforeRunning && error?.code == "syntax-error")
    }

    @Test("invalid UTF-8 is a positioned syntax error")
    func invalidUTF8() {
        var bytes = Array("ls\necho a".utf8)
        bytes += [0xFF, 0x41]
        #expect(
            throws: Diagnostic.syntax(
                "the script is not valid UTF-8 (byte 0xFF)", at: SourceLocation(line: 2, column: 7))
        ) {
            _ = try SourceText(name: "t", bytes: bytes)
        }
    }

    @Test("lines end at \\n or \\r\\n alike, for positions and for the line shown with an error")
    func windowsLineEnds() throws {
        let source = SourceText(name: "t", text: "ls\r\npwd\r\nls --al\r\n")
        #expect(source.lines.count == 4)
        let error = try #require(syntaxError(source.text))
        #expect(error.location == SourceLocation(line: 3, column: 4))
        #expect(error.rendered(in: source).hasSuffix("\n    ls --al\n       ^"))
    }

    @Test("a long line is shown as a window around the error, with the caret under it")
    func longLine() throws {
        let text = "echo " + String(repeating: "x", count: 3000) + " 'open"
        let source = SourceText(name: "t", text: text)
        let rendered = try #require(syntaxError(text)).rendered(in: source)
        let lines = rendered.split(separator: "\n")
        #expect(lines[1].count < 120)
        #expect(lines[1].hasSuffix("x 'open"))
        let caretOffset = try #require(lines[2].firstIndex(of: "^")).utf16Offset(in: lines[2])
        #expect(Array(lines[1].unicodeScalars)[caretOffset - lines[2].startIndex.utf16Offset(in: lines[2])] == "'")
    }

    @Test("errors found before running show their line too (an unknown key)")
    func caretForKeys() throws {
        let source = SourceText(name: "t", text: "meta set contentTyp=x -- a")
        #expect(
            try #require(syntaxError(source.text)).rendered(in: source).hasSuffix(
                "\n    meta set contentTyp=x -- a\n             ^"))
    }

    @Test("a syntax error is shown with its line and a caret")
    func caret() throws {
        let source = SourceText(name: "fix.store", text: "ls\n\tmeta sett x")
        let error = try #require(syntaxError(source.text))
        #expect(
            error.rendered(in: source)
                == "fix.store:2:7: error: unknown subcommand 'meta sett'; did you mean 'meta set'? (syntax-error)\n    \tmeta sett x\n    \t     ^"
        )
    }
}

@Suite("Parser (contract, Commands)")
struct ParserTests {
    func command(_ text: String) throws -> any LanguageCommand {
        try Parser.parse(SourceText(name: "t", text: text)).allStatements[0].command
    }

    /// The command `text` parses to, as the type it must be (a failed expectation otherwise).
    func command<T: LanguageCommand>(
        _ text: String, as type: T.Type, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> T {
        let parsed = try command(text)
        guard let typed = parsed as? T else {
            Issue.record(
                "'\(text)' parsed as \(parsed.name), not \(T.declaration.name)", sourceLocation: sourceLocation)
            throw ParsedAsAnother()
        }
        return typed
    }

    struct ParsedAsAnother: Error {}

    @Test("every command of the contract parses")
    func allCommands() throws {
        #expect(try command("cd", as: CdCommand.self) == CdCommand(path: nil))
        #expect(try command("pwd").isEqual(to: PwdCommand()))
        #expect(try command("page next").isEqual(to: PageNextCommand()))
        #expect(try command("exit").isEqual(to: ExitCommand()) && command("quit").isEqual(to: ExitCommand()))
        let list = try command("ls -n 5 --token T -l photos", as: ListCommand.self)
        #expect(list.maxResults == 5 && list.pageToken?.text == "T" && list.long && list.path?.text == "photos")
        #expect(try command("ls --all", as: ListCommand.self).all)
        let metaGet = try command("meta get a/b", as: MetaGetCommand.self)
        #expect(metaGet.targets.map(\.text) == ["a/b"] && !metaGet.raw && metaGet.filters.isEmpty)
        let rawGet = try command("meta get --raw a//b", as: MetaGetCommand.self)
        #expect(rawGet.raw && rawGet.targets.map(\.text) == ["a//b"])
        let filtered = try command(
            "meta get --where 'custom.camera exists' --where contentType!=image/* a/**", as: MetaGetCommand.self)
        #expect(
            !filtered.raw && filtered.targets.map(\.text) == ["a/**"]
                && filtered.filters.map(\.key) == ["custom.camera", "contentType"])
        #expect(filtered.filters.map(\.test) == [.exists, .doesNotMatch("image/*")])
        #expect(throws: Diagnostic.self) { try command("rm --where contentTyp=x a") }
        #expect(throws: Diagnostic.self) { try command("rm --where 'custom.a is b' a") }
        let rename = try command("meta rename custom.old custom.new -- a/*", as: MetaRenameCommand.self)
        #expect(rename.old.text == "old" && rename.new.text == "new" && rename.targets.map(\.text) == ["a/*"])
        #expect(throws: Diagnostic.self) { try command("meta rename contentType custom.new a") }
        // Renaming a key onto itself would delete it: refused before anything runs.
        #expect(syntaxError("meta rename custom.a custom.a -- x")?.message.contains("the same") == true)
        // An option-looking word among targets is a mistyped option, not an object; after a bare -- it is a name.
        #expect(
            syntaxError("meta set --summary cacheControl=z -- a")?.message.contains("no option '--summary'") == true)
        #expect(syntaxError("meta unset --where-not contentType a")?.location == SourceLocation(line: 1, column: 12))
        #expect(syntaxError("rm a --raw")?.message.contains("goes before the targets") == true)
        #expect(syntaxError("meta get a --rwa")?.message.contains("did you mean '--raw'") == true)
        #expect(
            try command("meta set cacheControl=x -- --odd", as: MetaSetCommand.self).targets.map(\.text) == ["--odd"])
        let get = try command("get a/b /tmp/x", as: GetCommand.self)
        #expect(get.object.text == "a/b" && get.file?.text == "/tmp/x" && !get.raw)
        let cat = try command("cat --raw lonelyItem/", as: CatCommand.self)
        #expect(cat.object.text == "lonelyItem/" && cat.raw)
        let rm = try command("rm a 'b*' -- -c", as: RmCommand.self)
        #expect(rm.targets.map(\.text) == ["a", "b*", "--", "-c"] && !rm.raw)
        let rawRm = try command("rm --raw a//b", as: RmCommand.self)
        #expect(rawRm.raw && rawRm.targets.map(\.text) == ["a//b"])
        #expect(try command("echo a  b", as: EchoCommand.self).words.map(\.text) == ["a", "b"])
        #expect(try command("help meta set", as: HelpCommand.self).topic?.text == "meta set")
        // A command inside explain and dry-run is parsed as it would be alone.
        let explained = try command("explain rm --raw a//b", as: ExplainCommand.self)
        #expect(
            (explained.explained as? RmCommand)?.targets.map(\.text) == ["a//b"] && explained.text == "rm --raw a//b")
        #expect(try command("dry-run snapshot save s1", as: DryRunCommand.self).planned is SnapshotSaveCommand)
    }

    @Test("meta set: words with = before -- are assignments, the rest targets")
    func metaSet() throws {
        let set = try command(
            #"meta set contentType=image/jpeg custom.location="Yosemite, CA, USA" a.jpg -- b=c.jpg"#,
            as: MetaSetCommand.self)
        #expect(set.update.properties[.contentType] == .set("image/jpeg"))
        #expect(set.update.customMetadata["location"] == .set("Yosemite, CA, USA"))
        #expect(set.targets.map(\.text) == ["a.jpg", "b=c.jpg"])
        #expect(set.assignments.map(\.value.text) == ["image/jpeg", "Yosemite, CA, USA"])
        #expect(try command("meta set cacheControl=x 'a=b'", as: MetaSetCommand.self).targets.map(\.text) == ["a=b"])
    }

    @Test("meta unset: keys first, then targets")
    func metaUnset() throws {
        let unset = try command("meta unset custom.stale contentLanguage docs/a contentType", as: MetaUnsetCommand.self)
        #expect(unset.keys.map(\.text) == ["custom.stale", "contentLanguage"])
        #expect(unset.targets.map(\.text) == ["docs/a", "contentType"])
        #expect(unset.update.customMetadata["stale"] == .unset && unset.update.properties[.contentLanguage] == .unset)
        let all = try command("meta unset custom -- x", as: MetaUnsetCommand.self)
        #expect(all.update.clearsCustomMetadata && all.targets.map(\.text) == ["x"])
    }

    @Test("put: a local file or --data, an optional DEST, --raw")
    func put() throws {
        #expect(
            try command("put --data hello a/b", as: PutCommand.self)
                == PutCommand(
                    source: .data(Word("hello", at: SourceLocation(line: 1, column: 12))),
                    destination: Word("a/b", at: SourceLocation(line: 1, column: 18))))
        let raw = try command("put --raw --content-type text/plain --md5 X file.txt wrong//name", as: PutCommand.self)
        #expect(raw.raw && raw.contentType?.text == "text/plain" && raw.md5?.text == "X")
        #expect(raw.source == .file(Word("file.txt", at: SourceLocation(line: 1, column: 45))))
        #expect(raw.destination?.text == "wrong//name")
    }

    @Test(
        "mistakes are syntax errors at the word, with a suggestion",
        arguments: [
            ("lss", 1, "unknown command 'lss'; did you mean 'ls'?"),
            (
                "check", 1,
                "unknown command 'check'; it is a subcommand of storesh itself: run `storesh check` from the system's shell"
            ),
            ("import a.json", 1, "run `storesh import`"),
            ("ls --al", 4, "`ls` has no option '--al'; did you mean '--all'?"),
            ("ls -n many", 7, "-n takes a whole number"),
            ("ls -n", 7, "-n needs a value"),
            ("ls a b", 6, "`ls` lists one PATH"),
            ("ls --all --token T", 18, "cannot take --token"),
            ("pwd x", 5, "`pwd` takes no more arguments; 'x' is extra"),
            ("meta", 6, "`meta` needs a subcommand"),
            ("meta gett", 6, "did you mean 'meta get'?"),
            ("meta set a.jpg", 10, "needs at least one KEY=VALUE"),
            ("meta unset", 12, "needs at least one KEY"),
            ("page", 6, "`page` needs a subcommand"),
            ("page prev", 6, "unknown subcommand 'page prev'; use page next or page token"),
            ("put", 5, "needs a LOCAL_FILE or --data TEXT"),
            ("put --data a b c", 16, "one too many"),
            ("put --raw --data x", 5, "--raw needs a DEST"),
            ("put --mdd5 x f", 5, "did you mean '--md5'?"),
            ("cat", 5, "`cat` needs OBJECT"),
            ("rm", 4, "`rm` needs at least one TARGET"),
            ("help lss", 6, "did you mean 'ls'?"),
            ("ls\ncat a b", 7, "'b' is extra"),
        ])
    func mistakes(text: String, column: Int, message: String) throws {
        let error = try #require(syntaxError(text))
        #expect(error.location.column == column, "\(error.message)")
        #expect(error.message.contains(message), "\(error.message)")
        #expect(error.phase == .beforeRunning)
    }

    @Test("metadata keys are checked before anything runs (rule M7)")
    func keysCheckedEarly() throws {
        let unknown = try #require(syntaxError("ls\nmeta set contentTyp=x -- a"))
        #expect(unknown.code == "invalid-argument" && unknown.phase == .beforeRunning)
        #expect(unknown.location == SourceLocation(line: 2, column: 10))
        #expect(unknown.message.contains("did you mean 'contentType'?"))
        let readOnly = try #require(syntaxError("meta unset generation -- a"))
        #expect(readOnly.message.contains("'generation' cannot be changed"))
        let typo = try #require(syntaxError("meta unset contnetType a"))
        #expect(typo.message.contains("did you mean 'contentType'?"))
    }
}

@Suite("Patterns (contract, Paths and patterns)")
struct PatternTests {
    func pattern(_ text: String, from current: String = "") throws -> ObjectPattern {
        let word = try Lexer.commands(in: "x " + text)[0].words[1]
        return try ObjectPattern(resolving: word, from: StoragePath(normalizing: current), bucket: "teaching")
    }

    @Test(
        "*, **, ?, and sets",
        arguments: [
            ("images/*.jpg", "images/forest.jpg", true), ("images/*.jpg", "images/a/b.jpg", false),
            ("images/**.jpg", "images/a/b.jpg", true), ("images/**", "images/a/b/c", true),
            ("images/**/x.jpg", "images/x.jpg", true), ("images/**/x.jpg", "images/a/b/x.jpg", true),
            ("**", "anything/at/all", true), ("a/?.txt", "a/b.txt", true), ("a/?.txt", "a/bb.txt", false),
            ("a/?", "a//", false), ("f[0-9][!a-z]", "f1B", true), ("f[0-9][!a-z]", "f1b", false),
            ("f[^0-9]", "fx", true), ("f[]]", "f]", true), ("*", "a/b", false), ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXbY", false), ("é*", "éa", true),
        ])
    func matching(text: String, name: String, matches: Bool) throws {
        #expect(try pattern(text).matches(name) == matches)
    }

    @Test("quoted wildcards are literal; isPattern looks only at unquoted ones")
    func quoted() throws {
        #expect(try pattern("'a*'b*").matches("a*bc"))
        #expect(try !pattern("'a*'b*").matches("axbc"))
        let word = try Lexer.commands(in: "x 'a*b'")[0].words[1]
        #expect(!ObjectPattern.isPattern(word))
    }

    @Test("patterns resolve like paths, and scan from their literal prefix")
    func resolution() throws {
        let relative = try pattern("*.jpg", from: "images/mountains")
        #expect(relative.text == "images/mountains/*.jpg")
        #expect(relative.literalPrefix == "images/mountains/")
        #expect(try pattern("../*.png", from: "images/mountains").text == "images/*.png")
        #expect(try pattern("gs://teaching/docs//*").text == "docs/*")
        #expect(try pattern("/x/**", from: "a").literalPrefix == "x/")
        #expect(throws: StorageError.self) { try pattern("gs://other/*") }
        #expect(throws: StorageError.self) { try pattern("a[bc") }
    }

    @Test("pathological patterns stay fast")
    func backtracking() throws {
        let nasty = try pattern(String(repeating: "*a", count: 30) + "b")
        #expect(!nasty.matches(String(repeating: "a", count: 1000)))
        let deep = try pattern(String(repeating: "**a", count: 30) + "b")
        #expect(!deep.matches(String(repeating: "a/", count: 500)))
    }
}
