import StoreshCore

/// A position in a script: 1-based line and column. Columns count Unicode scalars, so a `"` followed by a
/// combining mark is still a quote at its own column.
package struct SourceLocation: Sendable, Equatable, Comparable, CustomStringConvertible {
    package var line: Int
    package var column: Int

    package init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    package static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.line, lhs.column) < (rhs.line, rhs.column)
    }

    package var description: String { "\(line):\(column)" }
}

/// A script's text and where it came from (`FILE`, `-c` or `-` in messages).
package struct SourceText: Sendable {
    package var name: String
    package var text: String
    /// The text's lines, for showing the line of an error with a caret under the column.
    package let lines: [Substring]

    package init(name: String, text: String) {
        self.name = name
        self.text = text
        // By scalars, as the lexer counts lines: as a Character, "\r\n" is not "\n".
        self.lines = text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map { Substring($0) }
    }

    /// Decodes a script's bytes. Invalid UTF-8 is a syntax error at its line and column; a leading byte-order mark
    /// is dropped.
    package init(name: String, bytes: some Collection<UInt8>) throws(Diagnostic) {
        var bytes = Array(bytes)
        if bytes.starts(with: Self.byteOrderMark) { bytes.removeFirst(3) }
        self.init(name: name, text: try Self.decode(bytes[...], firstLine: 1))
    }

    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// Decodes part of a script that starts at line `firstLine`. Invalid UTF-8 is a syntax error at its line
    /// and column.
    static func decode(_ bytes: ArraySlice<UInt8>, firstLine: Int) throws(Diagnostic) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        // The longest valid prefix locates the first bad byte.
        var valid = 0
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var consumed = 0
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                consumed += UTF8.width(scalar)
                valid = consumed
            case .emptyInput, .error: break loop
            }
        }
        let prefix = String(decoding: bytes.prefix(valid), as: UTF8.self)
        let lines = prefix.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        let bad = bytes[bytes.startIndex + valid]
        var error = Diagnostic.syntax(
            "the script is not valid UTF-8 (byte 0x\(String(bad, radix: 16, uppercase: true)))",
            at: SourceLocation(line: firstLine + lines.count - 1, column: (lines.last?.count ?? 0) + 1))
        // The line shown with a replacement character where the bad byte is, the caret under it.
        let newline = UInt8(ascii: "\n")
        let lineStart = bytes[..<(bytes.startIndex + valid)].lastIndex(of: newline).map { $0 + 1 } ?? bytes.startIndex
        let lineEnd = bytes[(bytes.startIndex + valid)...].firstIndex(of: newline) ?? bytes.endIndex
        error.lineText = String(decoding: bytes[lineStart..<lineEnd], as: UTF8.self)
        throw error
    }

    package func line(_ number: Int) -> Substring? {
        number >= 1 && number <= lines.count ? lines[number - 1] : nil
    }
}

/// An error with its place in the script.
///
/// Its phase decides the exit status (contract): found before anything ran (2), a command that failed
/// while running (1), or an interrupted run (130).
package struct Diagnostic: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Phase: Sendable, Equatable {
        case beforeRunning
        case running
        case interrupted
    }

    package var phase: Phase
    /// Printed in parentheses: a storage error's kebab-case name, or `syntax-error`.
    package var code: String
    package var message: String
    package var location: SourceLocation
    /// The line the location is in, when it was at hand as the error was made: shown with a caret under the
    /// column without holding the script (which is read a command at a time).
    package var lineText: String?

    package static let syntaxErrorCode = "syntax-error"

    package init(phase: Phase, code: String, _ message: String, at location: SourceLocation) {
        self.phase = phase
        self.code = code
        self.message = message
        self.location = location
    }

    /// A syntax error: nothing runs.
    package static func syntax(_ message: String, at location: SourceLocation) -> Diagnostic {
        Diagnostic(phase: .beforeRunning, code: syntaxErrorCode, message, at: location)
    }

    /// A storage error found while checking the script (an unknown metadata key, say): nothing runs.
    package static func beforeRunning(_ error: StorageError, at location: SourceLocation) -> Diagnostic {
        Diagnostic(phase: .beforeRunning, code: error.code.name, error.message, at: location)
    }

    /// A command that failed while running.
    package static func running(_ error: StorageError, at location: SourceLocation) -> Diagnostic {
        Diagnostic(
            phase: error.code == .cancelled ? .interrupted : .running, code: error.code.name, error.message,
            at: location)
    }

    package var isSyntaxError: Bool { code == Self.syntaxErrorCode }

    /// The same error at the same place (the line shown with it is not part of it).
    package static func == (lhs: Diagnostic, rhs: Diagnostic) -> Bool {
        lhs.phase == rhs.phase && lhs.code == rhs.code && lhs.message == rhs.message && lhs.location == rhs.location
    }

    package var description: String { "\(location): error: \(message) (\(code))" }

    /// `FILE:LINE:COLUMN: error: MESSAGE (CODE)`; for an error found before running, also the line and a caret
    /// under the column (a long line is shown as a window around the column).
    package func rendered(in source: SourceText) -> String {
        var text = "\(source.name):\(location.line):\(location.column): error: \(message) (\(code))"
        if phase == .beforeRunning, let line = lineText.map({ Substring($0) }) ?? source.line(location.line) {
            var scalars = Array(line.unicodeScalars.filter { $0 != "\r" })
            var column = location.column
            let window = 100
            if scalars.count > window {
                let start = max(0, min(column - 1 - window / 2, scalars.count - window))
                scalars =
                    (start > 0 ? Array("…".unicodeScalars) : []) + scalars[start..<min(scalars.count, start + window)]
                    + (start + window < line.unicodeScalars.count ? Array("…".unicodeScalars) : [])
                column = column - start + (start > 0 ? 1 : 0)
            }
            // Control characters are shown as spaces, tabs keep their width, so the caret stands right.
            let visible = scalars.map { $0 == "\t" || $0.value >= 0x20 ? $0 : " " }
            let shown = String(String.UnicodeScalarView(visible))
            let pad = TerminalCells.blanks(under: String(String.UnicodeScalarView(visible.prefix(max(0, column - 1)))))
            text += "\n    \(shown)\n    \(pad)^"
        }
        return text
    }

    /// The contract's `--json` error document.
    package var jsonDocument: JSONValue { jsonDocument(file: nil) }

    /// The `--json` error document; for a script file, `file` names it (`-c` text and standard input have none).
    package func jsonDocument(file: String?) -> JSONValue {
        .object([
            (
                "error",
                .object(
                    [
                        ("code", .string(code)), ("message", .string(message)),
                        ("line", .integer(Int64(location.line))),
                        ("column", .integer(Int64(location.column))),
                    ] + (file.map { [("file", JSONValue.string($0))] } ?? []))
            )
        ])
    }
}
