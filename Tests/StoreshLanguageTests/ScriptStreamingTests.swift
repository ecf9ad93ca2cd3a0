import Foundation
import StoreshCore
import Testing

@testable import StoreshLanguage

/// Bytes that can be changed after the check, as an editor would change a file between check and run.
final class EditableScript: ScriptBytes {
    var bytes: [UInt8]
    init(_ text: String) { bytes = Array(text.utf8) }
    func read(at offset: Int, count: Int) -> [UInt8] {
        guard offset < bytes.count else { return [] }
        return Array(bytes[offset..<min(bytes.count, offset + count)])
    }
}

@Suite("Scripts of any length: checked in one pass, run from their bytes a command group at a time")
struct ScriptStreamingTests {
    /// Commands that exercise what a command group is: continuations (inside a word and between words, with
    /// `\r\n`), a `\` that continues nothing (quoted, in a comment, escaping a space), `;`, comments, quotes.
    static let kinds = [
        "put --raw --data x users/u%d/photos/1.jpg",
        "meta set custom.k=v \\\n    -- users/u%d/photos/1.jpg",
        "meta set custom.k=a\\\nb -- users/u%d/a.jpg\r",
        "echo one ; echo two # a comment ending in \\",
        "echo 'quoted \\' \\\r\n  \"and \\\\ more\" %d",
        "echo word\\ with\\ spaces %d",
        "  # only a comment",
        "",
        "echo é/%d/日本\\\n#inside-the-word",
    ]

    /// Small pieces, so that a short script crosses many of them.
    static let pieceSize = 4096

    /// A script of `count` lines of every kind, padded so that it crosses several of the check's pieces.
    static func script(lines count: Int) -> String {
        var text = "\u{FEFF}"
        for number in 0..<count {
            text += kinds[number % kinds.count].replacingOccurrences(of: "%d", with: String(number)) + "\n"
        }
        return text
    }

    /// The whole text lexed and parsed at once, as scripts were read before (the oracle).
    static func wholeText(_ text: String) throws -> [Statement] {
        try Parser.statements(in: String(text.dropFirst()), firstLine: 1)
    }

    @Test(
        "read a group at a time, across the check's pieces, a script gives the statements, places and texts of the whole text"
    )
    func sameAsWholeText() throws {
        let text = Self.script(lines: 6_000)
        let script = try Script(checking: ScriptText(text), pieceSize: Self.pieceSize)
        #expect(text.utf8.count > 20 * Self.pieceSize)
        let streamed = try script.allStatements
        let whole = try Self.wholeText(text)
        #expect(streamed.count == whole.count)
        #expect(streamed == whole)
        #expect(script.summary.statementCount == whole.count)
        #expect(script.summary.changesBucket)
        #expect(script.summary.firstLocation == whole.first?.location)
        #expect(script.summary.lastLocation == whole.last?.location)
        // A statement's place is found again from the nearest kept place, at any distance from it.
        for number in [0, 1, 1023, 1024, 1025, 3_000, whole.count / 2, whole.count - 1] {
            #expect(script.location(ofStatement: number) == whole[number].location)
        }
        #expect(script.location(ofStatement: whole.count) == nil)
    }

    @Test("an error on the last line of a long script is found before anything runs, at its place, with its line")
    func errorAtTheEnd() throws {
        let text = Self.script(lines: 4_000) + "ls\nmeta sett x\n"
        let lineCount = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
        let error = try #require(throws: Diagnostic.self) {
            try Script(checking: ScriptText(text), pieceSize: Self.pieceSize)
        }
        #expect(error.location == SourceLocation(line: lineCount - 1, column: 6))
        #expect(error.lineText == "meta sett x")
        #expect(error.rendered(in: SourceText(name: "big.store", text: "")).hasSuffix("\n    meta sett x\n         ^"))
    }

    @Test("a bad byte deep in the script is placed by line and column")
    func badByte() throws {
        var bytes = Array(Self.script(lines: 3_000).utf8)
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).count
        bytes += Array("echo ok\nls ab".utf8) + [0xC3] + Array("\n".utf8)
        let error = try #require(throws: Diagnostic.self) {
            try Script(checking: ScriptText(bytes), pieceSize: Self.pieceSize)
        }
        #expect(error.message == "the script is not valid UTF-8 (byte 0xC3)")
        #expect(error.location == SourceLocation(line: lines + 1, column: 6))
    }

    @Test("a script changed after its check is not run as something else: the reading stops")
    func changedAfterCheck() throws {
        let text = Self.script(lines: 4_000)
        for edit in ["overwrite", "append", "truncate"] {
            let bytes = EditableScript(text)
            let script = try Script(checking: bytes, pieceSize: Self.pieceSize)
            switch edit {
            case "overwrite": bytes.bytes[bytes.bytes.count - 10] = UInt8(ascii: "Z")
            case "append": bytes.bytes += Array("rm --raw users/u1/photos/1.jpg\n".utf8)
            default: bytes.bytes.removeLast(100)
            }
            let error = try #require(throws: Diagnostic.self, "\(edit)") { _ = try script.allStatements }
            #expect(error.message.contains("the script changed after it was checked"), "\(edit)")
        }
    }

    @Test("a command longer than the largest one is refused at its line, before anything runs")
    func overlongCommand() throws {
        let text = "ls\necho " + String(repeating: "x", count: CommandGroupReader.largestCommand + 10) + "\n"
        let error = try #require(throws: Diagnostic.self) { try Parser.check(ScriptText(text)) }
        #expect(error.location.line == 2)
        #expect(error.message.contains("a command of more than 8 MiB"))
    }

    @Test("the summary knows what the whole script needs, and where the first command that needs it is")
    func summary() throws {
        let script = try Parser.check(ScriptText("ls\ndry-run put --data x a\nsnapshot list\nsnapshot save s\n"))
        #expect(script.summary.asksForDryRun)
        #expect(script.summary.changesBucket)
        #expect(script.summary.requiredCapabilities == .snapshots)
        #expect(script.summary.firstNeeding.map(\.location) == [SourceLocation(line: 3, column: 1)])
        #expect(script.summary.firstNeeding.map(\.line) == ["snapshot list"])
        #expect(try script.allStatements[1].command is DryRunCommand)
    }

    @Test("a script edited while it runs stops where the edit is met, and nothing of it lands (one transaction)")
    func editedWhileRunning() async throws {
        let sandbox = try LanguageSandbox()
        let before = try await sandbox.names()
        let bytes = EditableScript((0..<2_000).map { "put --raw --data x load/\($0)\n" }.joined())
        let script = try Script(checking: bytes, pieceSize: Self.pieceSize)
        bytes.bytes.replaceSubrange((bytes.bytes.count - 20)..., with: Array("rm --raw load/1\nls\n\n".utf8))
        let output = CapturedOutput()
        let session = Session(bucket: sandbox.bucket, output: output, files: sandbox.files, options: RunOptions())
        #expect(await session.run(script) == .failed)
        let error = try #require(output.errors.first)
        #expect(error.message.contains("the script changed after it was checked"))
        #expect(error.phase == .running)
        // The statements before the edit ran (in the transaction), and were rolled back with it.
        #expect(error.location.line > 1_500)
        #expect(try await sandbox.names() == before)
    }
}
