import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage

/// Parses and runs one script (a file, `-c` text or standard input), and says how it ended. Bytes that are not
/// UTF-8 and syntax errors are reported as every error in a script is (FILE:LINE:COLUMN, or a JSON document with
/// `--json`), and nothing runs (status 2). The bucket is opened (`open`) once the script has parsed; a failure to
/// open it is thrown to the caller.
func runScript(
    named name: String, bytes: some Collection<UInt8>, in context: RunContext, adjust: (inout RunOptions) -> Void = { _ in },
    open: () async throws -> OpenedBucket
) async throws -> Session.Status {
    let output = ConsoleOutput(json: context.json, source: SourceText(name: name, text: ""))
    let script: Script
    do throws(Diagnostic) {
        let source = try SourceText(name: name, bytes: bytes)
        output.source = source
        script = try Parser.parse(source)
    } catch {
        output.error(error)
        return .usage
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
