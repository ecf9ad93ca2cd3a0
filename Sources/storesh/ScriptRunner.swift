import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal
import StoreshRules

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
                let typed = source.line(diagnostic.location.line).map { String(String.UnicodeScalarView($0.unicodeScalars.prefix(max(0, diagnostic.location.column - 1)))) } ?? ""
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

/// The local files of `put` and `get`.
struct HostFiles: LocalFiles {
    func read(_ path: String) throws(StorageError) -> Data {
        do {
            return try readInputFile(path)
        } catch {
            // Ctrl-C while a put reads a pipe: the command is cancelled, and rolled back with the rest of the line.
            if error.isInterruption { throw StorageError(.cancelled, error.description) }
            throw StorageError(.invalidArgument, error.description.prefix(1).uppercased() + error.description.dropFirst())
        }
    }

    func readDocument(_ path: String) throws(StorageError) -> Data {
        try RegularFile.read(path, maximumBytes: RegularFile.maximumDocumentBytes, what: "a rules file")
    }

    func isDirectory(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    func write(_ data: Data, to path: String) throws(StorageError) {
        do {
            try writeFileAtomically(path) { output in try output.write(bytes: data) }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.unknown, "Cannot write \(path): \(error)")
        }
    }
}

/// A script's bytes as text. Invalid UTF-8 is reported as every other error in a script is (FILE:LINE:COLUMN,
/// or a JSON document with `--json`), and nothing runs (exit 2).
func decodeScript(name: String, bytes: some Collection<UInt8>, json: Bool) throws -> SourceText {
    do {
        return try SourceText(name: name, bytes: bytes)
    } catch {
        ConsoleOutput(json: json, source: SourceText(name: name, text: "")).error(error)
        throw ExitCode(Session.Status.usage.rawValue)
    }
}

/// Parses and runs one script (a file, `-c` text or standard input), returning the exit status.
/// The bucket is opened once the script has parsed; a failure to open it is thrown to the caller.
///
/// `keepingPlanIn`: a dry run's plan is kept in that file (`--plan`), for `storesh apply`.
func runScript(
    _ source: SourceText, options: RunOptions, applyOptions: some ApplyArguments, keepingPlanIn planPath: String? = nil,
    open: () async throws -> OpenedBucket
) async throws -> Int32 {
    let output = ConsoleOutput(json: options.json, source: source)
    let script: Script
    do {
        script = try Parser.parse(source)
    } catch {
        output.error(error)
        return Session.Status.usage.rawValue
    }
    // Before the bucket opens: Ctrl-C from then on ends the run through the interpreter, which closes it.
    storesh_install_interrupt_handler()
    let opened = try await open()
    let interpreter = Session(bucket: opened.bucket, output: output, files: HostFiles(), options: options, clock: opened.clock)
    interpreter.isCancelled = { storesh_interrupt_pending() != 0 }
    interpreter.rules = try rulesSession(for: opened)
    applyOptions.configure(interpreter, source: source.name, json: options.json)
    if let planPath {
        let clock = opened.clock
        interpreter.applySettings.keepPlan = { plan in
            try JournalFile.keepPlan(plan, at: planPath, bucket: opened.location, source: source.name, clock: clock)
            return planPath
        }
    }
    let status = await interpreter.run(script)
    output.flush()
    if let failure = output.writeFailure {
        Diagnostics.error(failure)
        return status == .success ? Session.Status.failed.rawValue : status.rawValue
    }
    return status.rawValue
}

/// The security rules of a shell or script session: the bucket's own rules, deciding every request the session's
/// commands make (export, import, check and backup are administration and bypass them).
func rulesSession(for opened: OpenedBucket) throws -> RulesSession {
    let session = try RulesSession(store: opened.bucket.rulesStore, clock: opened.clock)
    if let problem = session.problem {
        Diagnostics.warning(
            "the bucket's security rules cannot be used (\(problem)); every request they would decide is denied until `rules load FILE` or `rules reset` replaces them")
    }
    return session
}
