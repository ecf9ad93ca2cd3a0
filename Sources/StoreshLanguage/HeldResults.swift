import Foundation

/// The results of a script planned on a bucket without transactions (rule X1), held until its plan is applied:
/// a command's lines ("updated 200,000 objects", the summary by change) are printed once every change they speak
/// of has landed, and only then. When not every change landed, they are dropped and the run says instead how many
/// of each command's changes did (`Session.apply`). Errors and notices are not held: they are true when made.
///
/// The lines are held in memory up to `heldInMemory` bytes, then in a temporary file that is gone once closed
/// (`tmpfile`): the results of an edit of millions of objects cost no memory.
final class HeldResults: SessionOutput {
    /// Where the results go once released, and errors and notices at once.
    let output: SessionOutput
    private var memory = Data()
    private var file: UnsafeMutablePointer<FILE>?
    /// Why the results could not all be held (a full temporary directory): said instead of them.
    private var holdFailure: String?
    static let heldInMemory = 1 << 16

    init(_ output: SessionOutput) { self.output = output }

    deinit { if let file { fclose(file) } }

    func result(_ line: String) { hold(Data((line + "\n").utf8)) }
    func resultBytes(_ bytes: Data) { hold(bytes) }
    func error(_ diagnostic: Diagnostic) { output.error(diagnostic) }
    func notice(_ text: String) { output.notice(text) }

    private func hold(_ bytes: Data) {
        guard holdFailure == nil else { return }
        memory.append(bytes)
        guard memory.count >= Self.heldInMemory else { return }
        if file == nil { file = tmpfile() }
        guard let file else {
            holdFailure = "its results could not be held to print after the apply (\(String(cString: strerror(errno))))"
            memory = Data()
            return
        }
        let written = memory.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        if written != memory.count {
            holdFailure = "its results could not be held to print after the apply (\(String(cString: strerror(errno))))"
        }
        memory = Data()
    }

    /// Prints the held results, in order, to `output`.
    func release() {
        if let holdFailure {
            output.notice("every change landed, but \(holdFailure)")
            return
        }
        if let file {
            fflush(file)
            rewind(file)
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let read = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
                if read == 0 { break }
                output.resultBytes(Data(chunk[..<read]))
            }
            fclose(file)
            self.file = nil
        }
        if !memory.isEmpty { output.resultBytes(memory) }
        memory = Data()
    }
}
