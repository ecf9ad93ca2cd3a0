/// One word of a command, with which of its characters were quoted or escaped.
///
/// Quoting matters after lexing: a quoted `*` is a literal star, not a pattern, and a quoted `=` does not
/// split `KEY=VALUE`.
package struct Word: Sendable, Equatable, CustomStringConvertible {
    package var text: String
    /// One flag per Unicode scalar of `text`: true when that scalar was quoted or escaped.
    package var literal: [Bool]
    package var location: SourceLocation

    package init(_ text: String, literal: [Bool]? = nil, at location: SourceLocation) {
        self.text = text
        self.literal = literal ?? Array(repeating: false, count: text.unicodeScalars.count)
        self.location = location
    }

    package var description: String { text }

    /// True when no character was quoted or escaped.
    package var isBare: Bool { !literal.contains(true) }

    /// The offset (in scalars) of the first unquoted occurrence of `scalar`.
    package func firstUnquoted(_ scalar: Unicode.Scalar) -> Int? {
        for (offset, character) in text.unicodeScalars.enumerated() where character == scalar && !literal[offset] {
            return offset
        }
        return nil
    }

    /// The word cut at scalar offset `offset`: the part before, and the part after the scalar there.
    package func split(at offset: Int) -> (Word, Word) {
        let scalars = Array(text.unicodeScalars)
        var before = String.UnicodeScalarView()
        before.append(contentsOf: scalars[..<offset])
        var after = String.UnicodeScalarView()
        after.append(contentsOf: scalars[(offset + 1)...])
        let afterLocation = SourceLocation(line: location.line, column: location.column + offset + 1)
        return (
            Word(String(before), literal: Array(literal[..<offset]), at: location),
            Word(String(after), literal: Array(literal[(offset + 1)...]), at: afterLocation)
        )
    }
}

/// The words of one command, as written between newlines and `;`.
package struct WordList: Sendable, Equatable {
    package var words: [Word]
    /// The command as written, from its first word to its last (a continued line joined with a space).
    package var source: String = ""
    package var location: SourceLocation { words[0].location }
}

/// Splits a script into commands and words (contract, Lexical rules):
/// one command per line, `;` between commands, `#` outside quotes starts a comment (at the start of a word;
/// inside a word it is an ordinary character), a line ending in `\`
/// continues on the next; `'…'` is literal, `"…"` knows `\"`, `\\`, `\n` and `\t`; a `\` outside quotes
/// makes the next character literal. Quotes may stand inside a word. Quotes do not span lines.
package struct Lexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line: Int
    private var column = 1
    /// Set when the text's last line break was a continuation (`\` before it): whether a word was being read
    /// there, which goes on at the start of the next line.
    private var continuedAtEnd: Bool?
    private let startsInsideWord: Bool

    /// A lexer of `text` whose first line is line `firstLine` of its script (a script is read a command group at
    /// a time). `insideWord`: the text goes on with a word a continued line left open, so a `#` at its start is
    /// part of that word.
    init(_ text: String, firstLine: Int = 1, insideWord: Bool = false) {
        scalars = Array(text.unicodeScalars)
        line = firstLine
        startsInsideWord = insideWord
    }

    static let danglingContinuation = "a '\\' at the end of the script has no next line to continue on"

    /// Whether `text` ends in a `\` that continues it on a next line: the shell asks this before it runs a line,
    /// so that it reads the text as scripts are read (a `\` inside quotes or a `#` comment continues nothing).
    package static func continues(_ text: String) -> Bool {
        continuation(of: text, insideWord: false) != nil
    }

    /// When one line of a script (without its line break) ends in a continuation, whether it leaves a word open
    /// for the next line; nil when it does not continue (or is wrong: the parse then says how). `insideWord`: the
    /// line goes on with a word the previous one left open. A script is cut into command groups with this,
    /// lexing only the lines that end in `\`.
    static func continuation(of line: String, insideWord: Bool) -> Bool? {
        var lexer = Lexer(line + "\n", insideWord: insideWord)
        do {
            _ = try lexer.commands()
        } catch {
            return nil
        }
        return lexer.continuedAtEnd
    }

    /// The commands of `text`, which starts at line `firstLine` of its script (a script is read a command group
    /// at a time: a line and the lines it continues on).
    package static func commands(in text: String, firstLine: Int = 1) throws(Diagnostic) -> [WordList] {
        var lexer = Lexer(text, firstLine: firstLine)
        return try lexer.commands()
    }

    private var location: SourceLocation { SourceLocation(line: line, column: column) }

    private func append(_ scalar: Unicode.Scalar, to bytes: inout [UInt8]) {
        if scalar.isASCII {
            bytes.append(UInt8(truncatingIfNeeded: scalar.value))
        } else {
            bytes.append(contentsOf: UTF8.encode(scalar)!)
        }
    }

    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    /// True at a line break: `\n`, or `\r\n` as Windows editors write it.
    private func atLineBreak() -> Bool {
        peek() == "\n" || (peek() == "\r" && peek(1) == "\n")
    }

    private mutating func skipLineBreak() {
        if peek() == "\r" { advance() }
        advance()
    }

    mutating func commands() throws(Diagnostic) -> [WordList] {
        var commands: [WordList] = []
        var words: [Word] = []
        // A word's text as UTF-8, made a String once it ends (a scalar appended to a String at a time is slow).
        var text: [UInt8] = []
        var literal: [Bool] = []
        var wordStart: SourceLocation?
        // Where each line starts (scalar offsets), to find a command's text from its first word's location.
        var lineStarts = [0]
        for (offset, scalar) in scalars.enumerated() where scalar == "\n" { lineStarts.append(offset + 1) }
        let firstLine = line
        var lastWordEnd = 0
        if startsInsideWord { wordStart = location }

        func finishWord() {
            if let start = wordStart {
                words.append(Word(String(decoding: text, as: UTF8.self), literal: literal, at: start))
                lastWordEnd = index
            }
            text.removeAll(keepingCapacity: true)
            literal.removeAll(keepingCapacity: true)
            wordStart = nil
        }
        func finishCommand() {
            finishWord()
            if let first = words.first {
                let start = lineStarts[first.location.line - firstLine] + first.location.column - 1
                // A continued line is one command: its `\`, line break and indentation read as one space.
                var source: [UInt8] = []
                var offset = start
                while offset < lastWordEnd {
                    if scalars[offset] == "\\", offset + 1 < lastWordEnd,
                        scalars[offset + 1] == "\n" || scalars[offset + 1] == "\r"
                    {
                        offset += scalars[offset + 1] == "\r" ? 3 : 2
                        while offset < lastWordEnd, scalars[offset] == " " || scalars[offset] == "\t" { offset += 1 }
                        if source.last != UInt8(ascii: " ") { source.append(UInt8(ascii: " ")) }
                        continue
                    }
                    append(scalars[offset], to: &source)
                    offset += 1
                }
                commands.append(WordList(words: words, source: String(decoding: source, as: UTF8.self)))
            }
            words = []
        }

        while let scalar = peek() {
            if atLineBreak() {
                finishCommand()
                skipLineBreak()
                continue
            }
            switch scalar {
            case " ", "\t":
                finishWord()
                advance()
            case ";":
                finishCommand()
                advance()
            case "#" where wordStart == nil:
                // As in a shell, # starts a comment at the start of a word only: in `custom.color=#fff` or
                // `page#2` it is part of the word, so a value can never silently turn into a comment.
                while peek() != nil && !atLineBreak() { advance() }
            case "\\":
                let start = location
                advance()
                if peek() == nil { throw Diagnostic.syntax(Self.danglingContinuation, at: start) }
                if atLineBreak() {
                    skipLineBreak()  // a continuation: the command goes on on the next line
                    if peek() == nil { continuedAtEnd = wordStart != nil }
                } else {
                    if wordStart == nil { wordStart = start }
                    append(peek()!, to: &text)
                    literal.append(true)
                    advance()
                }
            case "'":
                let start = location
                if wordStart == nil { wordStart = start }
                advance()
                while true {
                    guard let next = peek(), !atLineBreak() else {
                        throw Diagnostic.syntax(
                            "unterminated single quote: add the closing ' on the same line", at: start)
                    }
                    advance()
                    if next == "'" { break }
                    append(next, to: &text)
                    literal.append(true)
                }
            case "\"":
                let start = location
                if wordStart == nil { wordStart = start }
                advance()
                while true {
                    guard let next = peek(), !atLineBreak() else {
                        throw Diagnostic.syntax(
                            "unterminated double quote: add the closing \" on the same line", at: start)
                    }
                    if next == "\"" {
                        advance()
                        break
                    }
                    if next == "\\" {
                        let escapeStart = location
                        advance()
                        let escaped: Unicode.Scalar
                        switch peek() {
                        case "\"": escaped = "\""
                        case "\\": escaped = "\\"
                        case "n": escaped = "\n"
                        case "t": escaped = "\t"
                        default:
                            throw Diagnostic.syntax(
                                "unknown escape in double quotes: only \\\", \\\\, \\n and \\t are known; use single quotes for a literal backslash",
                                at: escapeStart)
                        }
                        advance()
                        append(escaped, to: &text)
                        literal.append(true)
                        continue
                    }
                    advance()
                    append(next, to: &text)
                    literal.append(true)
                }
            default:
                if wordStart == nil { wordStart = location }
                append(scalar, to: &text)
                literal.append(false)
                advance()
            }
        }
        finishCommand()
        return commands
    }
}
