import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import Synchronization

/// Results to standard output (buffered, every write checked), errors to standard error: as text
/// (`FILE:LINE:COLUMN: error: …`), or as JSON documents with `--json`.
final class ConsoleOutput: SessionOutput {
    private let stdout = CheckedOutput(descriptor: STDOUT_FILENO, name: "standard output")
    let json: Bool
    var source: SourceText
    /// The first failed write to standard output; the run then ends with status 1.
    private(set) var writeFailure: StorageError?
    /// At the prompt: the prompt's width, so that an error's caret stands under the typed line. Setting it starts
    /// a new line at the prompt.
    var promptWidth: Int? {
        didSet { printedSinceLine = false }
    }
    /// Whether anything was printed since the typed line: the caret then needs the line above it again.
    private var printedSinceLine = false
    /// Colour for `error:` on a terminal.
    var color = false

    init(json: Bool, source: SourceText) {
        self.json = json
        self.source = source
    }

    /// Whether the last output ended a line (the shell adds a newline when it did not).
    private(set) var endsWithNewline = true

    func result(_ line: String) {
        record { try stdout.write(line + "\n") }
        endsWithNewline = true
        printedSinceLine = true
    }

    func resultBytes(_ bytes: Data) {
        record { try stdout.write(bytes: bytes) }
        printedSinceLine = true
        if let last = bytes.last { endsWithNewline = last == UInt8(ascii: "\n") }
    }

    func error(_ diagnostic: Diagnostic) {
        flush()  // results so far come before the error on a terminal
        let file = ["-c", "-"].contains(source.name) ? nil : source.name
        var text = json ? diagnostic.jsonDocument(file: file).serialized : diagnostic.rendered(in: source)
        if !json, promptWidth == nil {
            // `FILE:LINE:COLUMN: error: …` wrapped between words to the terminal; the script's line and the caret
            // under it stay as they are (a caret must stand under its column).
            let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            text = Diagnostics.wrapped(String(lines[0])) + (lines.count > 1 ? "\n" + lines[1] : "")
        }
        if !json, let promptWidth {
            // At the prompt the line is on the screen already: a caret under it, then the message. An
            // interruption gets a line of its own instead (the terminal has just echoed ^C).
            let label = color ? "\u{1B}[1;31merror:\u{1B}[0m" : "error:"
            // Wrapped between words to the terminal's width, as every sentence storesh writes there.
            let message = Diagnostics.wrapped("\(label) \(diagnostic.message) (\(diagnostic.code))")
            if diagnostic.phase == .interrupted || !endsWithNewline {
                text = "\n" + message
            } else {
                // Under the column by terminal cells: wide characters and combining marks before it move it as on screen.
                let typed =
                    source.line(diagnostic.location.line).map {
                        String(
                            String.UnicodeScalarView($0.unicodeScalars.prefix(max(0, diagnostic.location.column - 1))))
                    } ?? ""
                var caret = String(repeating: " ", count: promptWidth) + TerminalCells.blanks(under: typed) + "^"
                // `rules load …; ls files/bob`: output stands between the typed line and the error, so the line is
                // shown again, where the prompt had it, for the caret to point into.
                if printedSinceLine, let line = source.line(diagnostic.location.line) {
                    caret = String(repeating: " ", count: promptWidth) + line + "\n" + caret
                }
                text = "\(caret)\n\(message)"
            }
        }
        endsWithNewline = true
        printedSinceLine = true
        Diagnostics.line(text)
    }

    func notice(_ text: String) {
        guard !json else { return }  // with --json, standard error holds JSON documents only
        flush()
        Diagnostics.notice(text)
        printedSinceLine = true
    }

    func flush() {
        record { try stdout.flush() }
    }

    private func record(_ body: () throws -> Void) {
        guard writeFailure == nil else { return }
        do { try body() } catch { writeFailure = error as? StorageError ?? StorageError(.unknown, "\(error)") }
    }
}

/// The progress line of long work on a terminal: how many (of how many), the rate and, when the total is known, the
/// time left; redrawn at most ten times a second, and never wider than the terminal (it is redrawn over itself).
final class ProgressLine: Sendable {
    /// When the line was last drawn, and whether it ever was.
    private let drawing = Mutex<(last: ContinuousClock.Instant?, ever: Bool)>((nil, false))

    func show(_ progress: WorkProgress) {
        let now = ContinuousClock.now
        let text: String? = drawing.withLock { drawing in
            if let last = drawing.last, now - last < .milliseconds(100), progress.done < progress.total ?? .max {
                return nil
            }
            drawing = (now, true)
            return Self.text(of: progress, at: now, columns: Int(storesh_terminal_columns(STDERR_FILENO)))
        }
        guard let text else { return }
        Diagnostics.progress(text)
    }

    /// `applying 1,234 of 5,000 · 234/s · 17 s left · 3 failed`; `updating 120,000 objects · 45,210/s`. Parts are
    /// left off from the end until the line fits `columns` (0: any width).
    static func text(of progress: WorkProgress, at now: ContinuousClock.Instant, columns: Int) -> String {
        let seconds = max(0.001, (now - progress.started).inSeconds)
        let rate = Double(progress.done) / seconds
        var parts: [String]
        if let total = progress.total {
            parts = ["\(progress.activity) \(MessageText.grouped(progress.done)) of \(MessageText.grouped(total))"]
        } else {
            parts = ["\(progress.activity) \(MessageText.counted(progress.done, progress.unit))"]
        }
        parts.append("\(MessageText.grouped(Int(rate.rounded())))/s")
        if let total = progress.total, rate > 0 {
            parts.append(
                Self.duration(seconds: Int((Double(max(0, total - progress.done)) / rate).rounded(.up))) + " left")
        }
        if progress.failed > 0 { parts.append("\(MessageText.grouped(progress.failed)) failed") }
        var text = parts.joined(separator: " · ")
        while columns > 0, TerminalCells.width(of: text) >= columns, parts.count > 1 {
            parts.removeLast()
            text = parts.joined(separator: " · ")
        }
        return text
    }

    /// `45 s`, `12 min 5 s`, `3 h 20 min`.
    static func duration(seconds: Int) -> String {
        if seconds < 60 { return "\(seconds) s" }
        if seconds < 3600 { return "\(seconds / 60) min \(seconds % 60) s" }
        return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
    }

    func clear() {
        guard drawing.withLock({ $0.ever }) else { return }
        Diagnostics.progress(nil)
    }
}

extension WorkProgress {
    /// A plan's apply as a progress line shows it.
    init(applying progress: ApplyProgress) {
        self.init(
            activity: "applying", done: progress.done, total: progress.total, failed: progress.failed,
            started: progress.started)
    }
}
