import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage

/// Checks and runs one script (a file, `-c` text or standard input), and says how it ended. Bytes that are not
/// UTF-8 and syntax errors are reported as every error in a script is (FILE:LINE:COLUMN, or a JSON document with
/// `--json`), and nothing runs (status 2). The bucket is opened (`open`) once the script has been checked; a
/// failure to open it is thrown to the caller. The script is read in pieces, checked whole, then read again a
/// command at a time as it runs: its length costs no memory.
func runScript(
    named name: String, bytes: any ScriptBytes, in context: RunContext, adjust: (inout RunOptions) -> Void = { _ in },
    open: () async throws -> OpenedBucket
) async throws -> Session.Status {
    let output = ConsoleOutput(json: context.json, source: SourceText(name: name, text: ""))
    let script: Script
    do throws(Diagnostic) {
        script = try Parser.check(bytes)
    } catch {
        output.error(error)
        return error.phase == .interrupted ? .interrupted : .usage
    }
    // Before the bucket opens: Ctrl-C from then on ends the run through the session, which closes it.
    storesh_install_interrupt_handler()
    let session = try context.session(on: try await open(), output: output, journalSource: name, adjust: adjust)
    let status = await session.run(script)
    output.flush()
    if let failure = output.writeFailure {
        Diagnostics.error(failure)
        return status == .success ? .failed : status
    }
    return status
}
