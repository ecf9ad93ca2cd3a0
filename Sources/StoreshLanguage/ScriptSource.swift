import StoreshCore

/// A script's bytes, read in pieces from any offset and as often as asked. A script is checked in one pass
/// and then read again as it runs, a command at a time, so that no length of script is held in memory: a file,
/// standard input kept in a private file as it is read, or `-c` text.
package protocol ScriptBytes: AnyObject {
    /// Up to `count` bytes from `offset`: fewer only where the script ends.
    func read(at offset: Int, count: Int) throws(StorageError) -> [UInt8]
}

/// A script held in memory: `-c` text, a line typed at the prompt, a test's script.
package final class ScriptText: ScriptBytes {
    private let bytes: [UInt8]

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    package convenience init(_ text: String) {
        self.init(Array(text.utf8))
    }

    package func read(at offset: Int, count: Int) -> [UInt8] {
        guard offset < bytes.count else { return [] }
        return Array(bytes[offset..<min(bytes.count, offset + count)])
    }
}

/// A script's bytes as they were checked. The check reads them in pieces and keeps each piece's checksum; every
/// later read of a piece is compared with it, so that a script edited after its check (or while it runs) is
/// stopped, never run as something other than what was checked.
final class CheckedBytes {
    /// A megabyte: what is read at once, and checked by one checksum.
    let pieceSize: Int
    let bytes: any ScriptBytes
    private var checksums: [UInt32] = []
    /// Set when the check has read to the end: how many pieces the script has.
    private var pieceCount: Int?

    init(_ bytes: any ScriptBytes, pieceSize: Int = 1 << 20) {
        self.bytes = bytes
        self.pieceSize = pieceSize
    }

    /// Piece `index` (`pieceSize` bytes from `index * pieceSize`; shorter only at the end, empty past it).
    func piece(_ index: Int) throws(StorageError) -> [UInt8] {
        let piece = try bytes.read(at: index * pieceSize, count: pieceSize)
        var crc = CRC32C()
        crc.update(piece)
        if let pieceCount {
            guard index < pieceCount ? crc.value == checksums[index] : piece.isEmpty else { throw Self.changed }
        } else if index == checksums.count {
            checksums.append(crc.value)
            if piece.count < pieceSize { pieceCount = checksums.count }
        } else if index > checksums.count || crc.value != checksums[index] {
            throw Self.changed
        }
        return piece
    }

    static let changed = StorageError.invalidArgument(
        "the script changed after it was checked: it runs only as it was checked, so nothing more of it runs; run it again"
    )
}

/// Where a command group starts: a place to read a script from again.
struct ScriptPlace: Sendable, Equatable {
    /// The number (from 0) of the group's first statement.
    var statement = 0
    var offset = 0
    var line = 1
}

/// Cuts a script into command groups: a line and the lines its trailing `\` continue it on, which the lexer
/// reads together. Only the group in hand is held (up to `largestCommand` bytes).
struct CommandGroupReader {
    /// A command longer than this is refused: a script's commands hold names and values, not content.
    static let largestCommand = 8 << 20

    private let source: CheckedBytes
    /// Unread bytes from `bufferStart`, as read from the source in pieces.
    private var buffer: [UInt8] = []
    private var bufferStart: Int
    private var nextPiece: Int
    private var atEnd = false
    /// The offset and line of the next group.
    private(set) var offset: Int
    private(set) var line: Int

    init(_ source: CheckedBytes, from place: ScriptPlace) {
        self.source = source
        offset = place.offset
        line = place.line
        nextPiece = place.offset / source.pieceSize
        bufferStart = nextPiece * source.pieceSize
    }

    /// The next group: its text, and the number of its first line; nil at the end of the script.
    mutating func next() throws(Diagnostic) -> (text: String, firstLine: Int)? {
        let start = offset
        let firstLine = line
        guard var lineEnd = try endOfLine(from: start, line: firstLine) else { return nil }
        var insideWord = false
        // Only a line ending in `\` (before a `\r`, if any) is asked whether it continues.
        while let open = continuation(from: lineEnd.start, to: lineEnd.end, insideWord: insideWord) {
            insideWord = open
            guard lineEnd.broken else { break }  // `\` at the very end: the lexer says so
            line += 1
            guard let next = try endOfLine(from: lineEnd.end + 1, line: firstLine) else {
                // A continued last line: the line break ends the group (as an empty next line would).
                lineEnd = (lineEnd.end + 1, lineEnd.end + 1, false)
                break
            }
            lineEnd = next
        }
        offset = lineEnd.broken ? lineEnd.end + 1 : lineEnd.end
        if lineEnd.broken { line += 1 }
        var bytes = buffer[(start - bufferStart)..<(lineEnd.end - bufferStart)]
        // The `\r` of a `\r\n` line end is part of the line break, as the lexer reads it.
        if lineEnd.broken && bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
        if start == 0 && bytes.starts(with: SourceText.byteOrderMark) { bytes = bytes.dropFirst(3) }
        let text = try SourceText.decode(bytes, firstLine: firstLine)
        // What is read is let go of, once it is more than a piece.
        if offset - bufferStart > source.pieceSize {
            buffer.removeFirst(offset - bufferStart)
            bufferStart = offset
        }
        return (text, firstLine)
    }

    /// The line from `start`: where it starts and ends (before its `\n`) and whether a `\n` ends it; nil when the
    /// script has ended at `start` (after a final line break, or empty).
    private mutating func endOfLine(
        from start: Int, line: Int
    ) throws(Diagnostic) -> (start: Int, end: Int, broken: Bool)? {
        var searched = start
        while true {
            let found =
                searched - bufferStart <= buffer.count
                ? buffer[(searched - bufferStart)...].firstIndex(of: UInt8(ascii: "\n")) : nil
            searched = found.map { bufferStart + $0 } ?? max(searched, bufferStart + buffer.count)
            if searched - offset > Self.largestCommand {
                throw Diagnostic.syntax(
                    "a command of more than \(Self.largestCommand >> 20) MiB: a script's commands hold names and values; put larger content from a file",
                    at: SourceLocation(line: line, column: 1))
            }
            if found != nil { return (start, searched, true) }
            if atEnd { return searched > start ? (start, searched, false) : nil }
            let piece: [UInt8]
            do {
                piece = try source.piece(nextPiece)
            } catch {
                throw Diagnostic.running(error, at: SourceLocation(line: line, column: 1))
            }
            nextPiece += 1
            atEnd = piece.count < source.pieceSize
            buffer.append(contentsOf: piece)
        }
    }

    /// When the line `start..<end` ends in a continuation: whether it leaves a word open; nil when it does not
    /// continue.
    private func continuation(from start: Int, to end: Int, insideWord: Bool) -> Bool? {
        var last = end - bufferStart
        if last > start - bufferStart && buffer[last - 1] == UInt8(ascii: "\r") { last -= 1 }
        guard last > start - bufferStart, buffer[last - 1] == UInt8(ascii: "\\") else { return nil }
        guard let text = String(validating: buffer[(start - bufferStart)..<(end - bufferStart)], as: UTF8.self) else {
            return nil
        }
        return Lexer.continuation(of: text, insideWord: insideWord)
    }
}

/// Reads a script's statements in order, a command group at a time.
package struct StatementReader {
    private var groups: CommandGroupReader
    private var pending: [Statement] = []
    private var pendingText = ""
    private var pendingFirstLine = 1
    /// The number (from 0) of the statement `next` returns next.
    package private(set) var number: Int
    /// Where the group of the statements in hand starts.
    private(set) var groupStart: ScriptPlace
    /// Whether the script is being checked (its errors are found before anything runs) or run.
    private let checking: Bool

    init(_ source: CheckedBytes, from place: ScriptPlace = ScriptPlace(), checking: Bool) {
        groups = CommandGroupReader(source, from: place)
        number = place.statement
        groupStart = place
        self.checking = checking
    }

    /// The next statement; nil at the end. Its errors carry their line.
    package mutating func next() throws(Diagnostic) -> Statement? {
        while pending.isEmpty {
            let place = ScriptPlace(statement: number, offset: groups.offset, line: groups.line)
            let group: (text: String, firstLine: Int)?
            do {
                group = try groups.next()
            } catch {
                // A script that cannot be read is found before anything runs when it is being checked.
                var error = error
                if checking && error.phase == .running { error.phase = .beforeRunning }
                throw error
            }
            guard let group else { return nil }
            groupStart = place
            pendingText = group.text
            pendingFirstLine = group.firstLine
            do {
                pending = try Parser.statements(in: group.text, firstLine: group.firstLine).reversed()
            } catch {
                var error = error
                error.lineText = lineText(error.location.line)
                throw error
            }
        }
        number += 1
        return pending.removeLast()
    }

    /// Line `number` of the group in hand, for an error's caret.
    func lineText(_ number: Int) -> String? {
        let lines = pendingText.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        let index = number - pendingFirstLine
        return lines.indices.contains(index) ? String(String.UnicodeScalarView(lines[index])) : nil
    }
}

/// What a script's check found out about the whole of it, kept while it runs a command at a time.
package struct ScriptSummary: Sendable {
    package internal(set) var statementCount = 0
    /// Whether any command may change the bucket (as its declaration says; a `dry-run` prefix set aside).
    package internal(set) var changesBucket = false
    /// How many of its statements may change the bucket (`echo` and `ls` do not).
    package internal(set) var changingStatementCount = 0
    /// Whether a statement asks for a dry run (`dry-run COMMAND`).
    package internal(set) var asksForDryRun = false
    /// What the bucket must be able to do for the script to run (rule B3).
    package internal(set) var requiredCapabilities: BucketCapabilities = []
    /// The first statement that needs each capability: its command, where, and its line (rule B3's refusal is
    /// made before anything runs, and shows the line).
    var firstNeeding: [(command: any LanguageCommand, location: SourceLocation, line: String?)] = []
    package internal(set) var firstLocation: SourceLocation?
    package internal(set) var lastLocation: SourceLocation?

    /// Counts a statement in; `line` gives its line when it is kept.
    mutating func add(_ statement: Statement, line: () -> String?) {
        var command = statement.command
        if let dryRun = command as? DryRunCommand {
            asksForDryRun = true
            command = dryRun.planned
        }
        statementCount += 1
        if command.changesBucket { changingStatementCount += 1 }
        changesBucket = changesBucket || command.changesBucket
        let requires = command.declaration.requires
        if !requires.isSubset(of: requiredCapabilities) {
            firstNeeding.append((command, statement.location, line()))
            requiredCapabilities.formUnion(requires)
        }
        firstLocation = firstLocation ?? statement.location
        lastLocation = statement.location
    }

    /// The summary of the script explained instead of run (`run --explain`): it changes nothing and needs nothing.
    var explained: ScriptSummary {
        var summary = self
        summary.changesBucket = false
        summary.changingStatementCount = 0
        summary.requiredCapabilities = []
        summary.firstNeeding = []
        return summary
    }
}

/// A checked script: what its check found, and its statements, read again from its bytes as it runs.
///
/// The whole script is checked before anything runs, so a syntax error anywhere runs nothing (contract, Scripts);
/// what is kept is its summary, a checksum per megabyte and a place every `placeEvery` statements (to find where
/// a statement was written when its change fails), whatever its length.
package struct Script {
    package let summary: ScriptSummary
    let source: CheckedBytes
    /// Where every `placeEvery`-th group starts.
    let places: [ScriptPlace]
    static let placeEvery = 1024

    /// Checks a script whole in one pass: its first error is thrown, with its line.
    init(checking bytes: any ScriptBytes, pieceSize: Int = 1 << 20) throws(Diagnostic) {
        source = CheckedBytes(bytes, pieceSize: pieceSize)
        var reader = StatementReader(source, checking: true)
        var summary = ScriptSummary()
        var places = [ScriptPlace()]
        while let statement = try reader.next() {
            summary.add(statement) { reader.lineText(statement.location.line) }
            if reader.groupStart.statement >= places[places.count - 1].statement + Self.placeEvery {
                places.append(reader.groupStart)
            }
        }
        self.summary = summary
        self.places = places
    }

    /// The statements in order, read again from the script. A script changed since its check stops the reading.
    package func statements() -> StatementReader {
        StatementReader(source, checking: false)
    }

    /// Every statement, in memory: for a short script (a line, a test).
    package var allStatements: [Statement] {
        get throws(Diagnostic) {
            var reader = statements()
            var all: [Statement] = []
            while let statement = try reader.next() { all.append(statement) }
            return all
        }
    }

    /// Where statement `number` (from 0) was written: read again from the place before it.
    package func location(ofStatement number: Int) -> SourceLocation? { statement(number)?.location }

    /// Statement `number` (from 0), read again from the place before it.
    package func statement(_ number: Int) -> Statement? {
        guard number >= 0, number < summary.statementCount else { return nil }
        let place = places.last { $0.statement <= number } ?? ScriptPlace()
        var reader = StatementReader(source, from: place, checking: false)
        while reader.number < number {
            guard (try? reader.next()) != nil else { return nil }
        }
        return try? reader.next()
    }
}
