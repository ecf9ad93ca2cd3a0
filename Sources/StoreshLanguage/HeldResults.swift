import Foundation

/// The results of a script planned on a bucket without transactions (rule X1), held until its plan is applied:
/// a command's lines ("updated 200,000 objects", the summary by change) are printed once every change they speak
/// of has landed, and only then. When not every change landed, they are dropped and the run says instead how many
/// of each command's changes did (`Session.apply`). Errors and notices are not held: they are true when made.
///
/// The lines are held in a `SpooledText`: the results of an edit of millions of objects cost no memory.
final class HeldResults: SessionOutput {
    /// Where the results go once released, and errors and notices at once.
    let output: SessionOutput
    private let held = SpooledText()

    init(_ output: SessionOutput) { self.output = output }

    func result(_ line: String) { held.append(Data((line + "\n").utf8)) }
    func resultBytes(_ bytes: Data) { held.append(bytes) }
    func error(_ diagnostic: Diagnostic) { output.error(diagnostic) }
    func notice(_ text: String) { output.notice(text) }

    /// Prints the held results, in order, to `output`.
    func release() {
        if let failure = held.failure {
            output.notice(
                "every change landed, but its results could not be held to print after the apply (\(failure))")
            return
        }
        held.drain { output.resultBytes($0) }
    }
}

/// Bytes kept in order, in memory up to `heldInMemory`, then in a temporary file that is gone once closed
/// (`tmpfile`): what is written out later (held results, the parts of a JSON document) costs no memory however
/// long it is.
final class SpooledText {
    private var memory = Data()
    private var file: UnsafeMutablePointer<FILE>?
    /// Why not everything could be kept (a full temporary directory); the bytes after it are dropped.
    private(set) var failure: String?
    static let heldInMemory = 1 << 16

    init() {}

    deinit { if let file { fclose(file) } }

    func append(_ bytes: Data) {
        guard failure == nil else { return }
        memory.append(bytes)
        guard memory.count >= Self.heldInMemory else { return }
        if file == nil { file = tmpfile() }
        guard let file else {
            failure = String(cString: strerror(errno))
            memory = Data()
            return
        }
        let written = memory.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if written != memory.count { failure = String(cString: strerror(errno)) }
        memory = Data()
    }

    /// Gives every byte kept, in order and a piece at a time, to `write`; the spool is empty afterwards.
    func drain(_ write: (Data) -> Void) {
        if let file {
            fflush(file)
            rewind(file)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let read = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
                if read == 0 { break }
                write(Data(chunk[..<read]))
            }
            fclose(file)
            self.file = nil
        }
        if !memory.isEmpty { write(memory) }
        memory = Data()
    }
}
