import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage

/// Standard error, for every part of the command line (scripts, the prompt, subcommands, `storesh serve`'s start
/// and log): the one place that decides how an error, a warning or a notice reads, and what exit status an error
/// outside a script gives (usage errors 2, storage errors 1, an interruption 130, help and --version 0; inside a
/// script the run's `Session.Status` decides). With `--json`, an error is a JSON document, as in scripts. Results
/// go to standard output; nothing else writes here.
enum Diagnostics {
    /// A remark about the run (which bucket, what was created or saved): `storesh: TEXT`.
    static func notice(_ text: String, from program: String = "storesh") { write(sentence: "\(program): \(text)") }

    /// Something that may be wrong but does not stop the run: `storesh: warning: TEXT`.
    static func warning(_ text: String, from program: String = "storesh") {
        write(sentence: "\(program): warning: \(text)")
    }

    /// A storage error that ends a run whose script itself succeeded (its output could not be written).
    static func error(_ error: StorageError) {
        write(sentence: "storesh: error: \(error.message) (\(error.code.name))")
    }

    /// An error of the terminal or the machine, with no code of spec E.
    static func error(_ message: String) { write(sentence: "storesh: error: \(message)") }

    /// A sentence and its newline, wrapped for standard error.
    private static func write(sentence: String) { write(wrapped(sentence) + "\n") }

    /// `text` wrapped at blanks between words to the width of the terminal standard error is, if it is one, so that
    /// no word or quoted value is cut at the edge; as it is otherwise.
    static func wrapped(_ text: String) -> String {
        let columns = Int(storesh_terminal_columns(STDERR_FILENO))
        guard columns > 0 else { return text }
        return TerminalCells.wrap(text, toCells: columns).joined(separator: "\n")
    }

    /// A question asked on the terminal; the answer is typed after it.
    /// Wrapped between words as a notice is (the answer follows the last line's last word).
    static func ask(_ question: String) { write(wrapped("storesh: \(question)") + " ") }

    /// A progress line drawn over the last one (on a terminal); nil clears it.
    static func progress(_ text: String?) { write("\r\u{1B}[K" + (text ?? "")) }

    /// A line already in its final form: a script's located diagnostic with its caret or as JSON, a served
    /// request.
    static func line(_ text: String) { write(text + "\n") }

    /// What a subcommand did, as a sentence: wrapped as a notice is.
    static func summary(_ text: String) { write(sentence: text) }

    /// Written as it comes; a standard error that is gone (a closed pipe: `storesh serve … | tee log` stopped with
    /// Ctrl-C) loses the text but stops nothing, so a server still ends as it should (its export on exit too).
    /// (FileHandle's non-throwing `write` would trap on that error.)
    private static func write(_ text: String) { try? FileHandle.standardError.write(contentsOf: Data(text.utf8)) }

    /// An error outside a script: said, and the exit status it gives.
    static func report(_ error: Error) -> Int32 {
        let json = ProcessArguments.current.asksForJSON
        let (status, code, message): (Int32, String, String)
        switch error {
        case let error as StorageError:
            (status, code, message) = (1, error.code.name, error.message)
        case let error as UsageError where error.isInterruption:
            (status, code, message) = (
                Session.Status.interrupted.rawValue, StorageErrorCode.cancelled.name, error.description
            )
        case let error as UsageError:
            (status, code, message) = (2, "usage-error", error.description)
        default:
            // Help and --version exit 0; every usage error exits 2, as the contract says (not 64).
            let exit = Storesh.exitCode(for: error)
            let text = Storesh.fullMessage(for: error)
            if exit == .success {
                if !text.isEmpty { print(text) }
                return 0
            }
            var plain = text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text
            // `storesh ls`: a command of the language given as an argument.
            if let match = plain.firstMatch(of: #/Unexpected argument '([^']+)'/#),
                CommandCatalog.firstWords.contains(String(match.1))
            {
                plain +=
                    "\n(commands of the language run with -c: storesh -c '\(match.1) …', or from a script: storesh run FILE)"
            }
            (status, code, message) = (exit == .validationFailure ? 2 : exit.rawValue, "usage-error", plain)
        }
        let text =
            json
            ? JSONValue.object([("error", .object([("code", .string(code)), ("message", .string(message))]))])
                .serialized
            : "storesh: error: \(message)" + (code == "usage-error" ? "" : " (\(code))")
        line(text)
        return status
    }
}
