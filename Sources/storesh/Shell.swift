import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshRules

/// The persisted history of the shell: one line per command, deduplicated (a repeated command moves to the
/// end), at most `limit` lines, written whole after each command so that nothing is lost on exit, Ctrl-D
/// or a crash.
struct HistoryFile {
    static let limit = 1000
    let path: String
    private(set) var lines: [String] = []

    init(path: String) {
        self.path = path
        if let data = FileManager.default.contents(atPath: path) {
            lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).suffix(Self.limit)
        }
    }

    /// Adds a command; an empty line, or one starting with a blank (kept private, as in bash), is not kept.
    mutating func add(_ line: String) {
        guard !line.isEmpty, !line.hasPrefix(" ") else { return }
        // An ID token is a credential: a line that carries one is never written to the history file.
        guard !line.contains("--id-token") else { return }
        lines.removeAll { $0 == line }
        lines.append(line)
        if lines.count > Self.limit { lines.removeFirst(lines.count - Self.limit) }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Whole or not at all: a crash while writing leaves the previous history.
        try? writeFileAtomically(path) { output in try output.write(lines.joined(separator: "\n") + "\n") }
    }
}

/// The interactive shell: libedit line editing (emacs keys, Ctrl-R), Tab completion, persisted history, a
/// prompt with the bucket and the current reference. Each line is its own transaction, durable once the
/// prompt returns. Ctrl-C clears the line at the prompt and cancels a running command (rolling it back).
final class Shell {
    let opened: OpenedBucket
    var bucket: any Bucket { opened.bucket }
    let interpreter: Session
    let output: ConsoleOutput
    let color: Bool
    var history: HistoryFile

    init(context: RunContext, opened: OpenedBucket, historyPath: String) throws {
        let environment = Environment()
        // Colour only on a terminal, never with NO_COLOR (no-color.org) or a dumb terminal.
        let color =
            isatty(STDOUT_FILENO) != 0 && (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
        self.color = color
        self.opened = opened
        output = ConsoleOutput(json: context.json, source: SourceText(name: "-", text: ""))
        output.color = color
        interpreter = try context.session(on: opened, output: output, journalSource: "the prompt") { options in
            options.color = color
            options.atPrompt = true
        }
        history = HistoryFile(path: historyPath)
    }

    /// The terminal's width in cells, measured for each command (the window may have changed); nil when unknown.
    static func terminalWidth() -> Int? {
        let columns = storesh_terminal_columns(STDOUT_FILENO)
        return columns > 0 ? Int(columns) : nil
    }

    /// A screenful for `ls` without `-n`, measured anew for each line, since the window may have been resized.
    static func screenfulPageSize() -> Int? {
        var rows: Int32 = 0
        var columns: Int32 = 0
        storesh_terminal_size(&rows, &columns)
        return rows > 0 ? max(5, min(ListOptions.maximumResults, Int(rows) - 3)) : nil
    }

    /// The visible prompt, `gs://teaching/images> `, with its colour escapes marked for libedit.
    var prompt: (marked: String, width: Int) {
        let text = interpreter.current.url(bucket: bucket.name, scheme: bucket.scheme)
        // `storesh --dry-run` at the prompt: every line is a dry run, and the prompt says so.
        let mode = interpreter.options.dryRun ? "(dry run) " : ""
        let marked = color ? "\(mode)\u{1}\u{1B}[1;36m\u{1}\(text)\u{1}\u{1B}[0m\u{1}> " : "\(mode)\(text)> "
        return (marked, mode.count + text.count + 2)
    }

    func run() async -> Session.Status {
        storesh_use_utf8_locale()
        storesh_install_interrupt_handler()
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let editor = storesh_editor_open("storesh", context, completeCallback) else {
            Diagnostics.error("cannot start line editing: \(String(cString: storesh_editor_problem()))")
            return .failed
        }
        defer { storesh_editor_close(editor) }
        for line in history.lines { storesh_editor_history_add(editor, line) }
        let greeting = "storesh \(storeshVersion) · `help` for commands · Tab completes · Ctrl-D leaves"
        print(TerminalCells.wrap(greeting, toCells: Self.terminalWidth() ?? 0).joined(separator: "\n"))
        if interpreter.options.dryRun {
            print("dry run (--dry-run): each line shows what it would change; nothing is saved")
        }
        while true {
            storesh_interrupt_clear()
            let currentPrompt = prompt
            storesh_editor_set_prompt(editor, currentPrompt.marked)
            var interrupted: Int32 = 0
            guard let raw = storesh_editor_read_line(editor, &interrupted) else {
                if interrupted != 0 {
                    print("^C")  // the line is dropped; a new prompt follows
                    continue
                }
                print()  // Ctrl-D
                return .success
            }
            var line = String(cString: raw)
            if line.hasSuffix("\n") { line.removeLast() }
            // A line ending in \ continues on the next, as in scripts (a pasted multi-line command).
            while Lexer.continues(line) {
                storesh_editor_set_prompt(editor, "… ")
                guard let more = storesh_editor_read_line(editor, &interrupted) else { break }
                var next = String(cString: more)
                if next.hasSuffix("\n") { next.removeLast() }
                line += "\n" + next
            }
            if interrupted != 0 {
                print("^C")
                continue
            }
            if line.trimmingCharacters(in: .whitespaces).isEmpty { continue }
            history.add(line)
            storesh_editor_history_add(editor, line)
            let source = SourceText(name: "-", text: line)
            output.source = source
            // A caret under the typed text fits one line; continued lines get FILE:LINE:COLUMN and their own caret.
            output.promptWidth = line.contains("\n") ? nil : currentPrompt.width
            interpreter.options.defaultPageSize = Self.screenfulPageSize()
            interpreter.options.terminalWidth = Self.terminalWidth()
            let script: Script
            do {
                script = try Parser.parse(source)
            } catch {
                output.error(error)
                continue
            }
            _ = await interpreter.run(script)
            // Output without a final newline (`cat` of a one-line file) would shift libedit's idea of the
            // column, and the line on screen would no longer be the line that runs.
            if !output.endsWithNewline { output.result("") }
            output.flush()
            // Only an `exit` that ran leaves: in `rm missing; exit` the failed rm stopped the line first.
            if interpreter.exitRan { return .success }
        }
    }

    /// The longest start two texts share, scalar for scalar.
    static func commonScalarPrefix(_ first: String, _ second: String) -> String {
        var shared = String.UnicodeScalarView()
        for (a, b) in zip(first.unicodeScalars, second.unicodeScalars) {
            guard a == b else { break }
            shared.append(a)
        }
        return String(shared)
    }

    /// Tab: completes the word under the cursor as far as all candidates agree, or lists them.
    func complete(_ lineBeforeCursor: String, editor: OpaquePointer) -> UInt8 {
        // Under the session's rules; Tab's reads are decided but never recorded, so `rules why` goes on explaining
        // the last command.
        guard let reads = (interpreter.rules?.guarding(bucket) ?? bucket).immediateReads else {
            return storesh_cc_error
        }
        let result = Completer(
            source: reads, current: interpreter.current, ruleSamples: interpreter.rules?.samples.map(\.name) ?? []
        ).complete(lineBeforeCursor)
        let candidates = result.candidates
        guard !candidates.isEmpty else { return storesh_cc_error }
        // From a truncated page nothing beyond the typed text is known to be common to all candidates.
        // By Unicode scalars, not Characters: two spellings of one name (NFC and NFD) are two objects (rule P7),
        // and what they share is only what their scalars share; neither is inserted for the other.
        let common =
            result.truncated
            ? result.typed : candidates.map(\.word).reduce(candidates[0].word) { Self.commonScalarPrefix($0, $1) }
        let rest = String(common.unicodeScalars.dropFirst(result.typed.unicodeScalars.count))
        // One finished candidate (a command, an object) gets its closing quote and the blank before the next word.
        let finished = candidates.count == 1 && !candidates[0].continues && !result.truncated
        if !rest.isEmpty || finished {
            var insertion = Completer.escaped(rest, inside: result.openQuote)
            if finished { insertion += result.openQuote.map { String($0) + " " } ?? " " }
            _ = storesh_editor_insert(editor, insertion)
            return storesh_cc_refresh
        }
        // Nothing more is common: show the choices in columns, at most a screenful, then the line again.
        var rows: Int32 = 0
        var columns: Int32 = 0
        storesh_terminal_size(&rows, &columns)
        let names = candidates.map { MessageText.isComposed($0.display) ? $0.display : $0.display + " (not NFC)" }
        let width = min((names.map(TerminalCells.width(of:)).max() ?? 0) + 2, max(Int(columns), 20))
        let perLine = max(1, Int(columns > 0 ? columns : 80) / width)
        let maxLines = max(3, Int(rows > 0 ? rows : 24) - 4)
        let shown = names.prefix(perLine * maxLines)
        var text = "\n"
        for (index, name) in shown.enumerated() {
            text += TerminalCells.padded(name, to: width)
            if (index + 1) % perLine == 0 || index == shown.count - 1 { text += "\n" }
        }
        if shown.count < names.count || result.truncated {
            text += "… and more: type more of the name to narrow it\n"
        }
        FileHandle.standardOutput.write(Data(text.utf8))
        return storesh_cc_redisplay
    }
}

/// libedit's Tab callback, bridged to the shell that opened the editor.
private let completeCallback: storesh_complete_fn = { context, editor, line in
    guard let context, let editor, let line else { return storesh_cc_error }
    let shell = Unmanaged<Shell>.fromOpaque(context).takeUnretainedValue()
    return shell.complete(String(cString: line), editor: editor)
}

extension BucketLocation {
    /// `history` beside the default bucket, in the user's data directory.
    static func historyPath(environment: Environment = Environment()) -> String {
        defaultDataDirectory(environment: environment) + "/history"
    }
}
