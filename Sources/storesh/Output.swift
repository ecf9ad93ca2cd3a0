import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshLanguage

/// Buffered output to a file descriptor that reports every failed write: a full disk or a closed pipe is an
/// error with its reason, never a crash or a silent loss.
final class CheckedOutput {
    private let descriptor: Int32
    private let name: String
    private var buffer: [UInt8] = []
    private static let flushThreshold = 1 << 20

    init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
        buffer.reserveCapacity(Self.flushThreshold)
    }

    func write(_ text: String) throws(StorageError) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    /// Bytes exactly as given (object content is not text).
    func write(bytes: some Collection<UInt8>) throws(StorageError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= Self.flushThreshold { try flush() }
    }

    func flush() throws(StorageError) {
        var offset = 0
        while offset < buffer.count {
            let written = buffer[offset...].withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw StorageError(.unknown, "Cannot write \(name): \(String(cString: strerror(errno))).")
            }
            offset += written
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and forces the data to the disk (for files that are renamed into place afterwards).
    func synchronize() throws(StorageError) {
        try flush()
        if fsync(descriptor) != 0 {
            throw StorageError(.unknown, "Cannot write \(name): \(String(cString: strerror(errno))).")
        }
    }
}

/// What a file argument holds, with a message that says why when it cannot be read.
func readInputFile(_ path: String) throws(UsageError) -> Data {
    if path == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
        throw UsageError("cannot read \(path): there is no such file.")
    }
    guard !isDirectory.boolValue else { throw UsageError("cannot read \(path): it is a directory.") }
    var status = stat()
    if stat(path, &status) == 0, (status.st_mode & S_IFMT) != S_IFREG {
        // A pipe or a device: opened without waiting for a writer, then read as data comes, so Ctrl-C ends it.
        let descriptor = Foundation.open(path, O_RDONLY | O_NONBLOCK)
        guard descriptor >= 0 else {
            throw UsageError("cannot read \(path): \(String(cString: strerror(errno))).")
        }
        defer { Foundation.close(descriptor) }
        return try readInterruptibly(descriptor, path: path)
    }
    // Read through the descriptor, so that pipes (`run <(…)`, /dev/stdin) work as well as files.
    guard let handle = FileHandle(forReadingAtPath: path) else {
        throw UsageError("cannot read \(path): \(String(cString: strerror(errno))).")
    }
    defer { try? handle.close() }
    do {
        return try handle.readToEnd() ?? Data()
    } catch {
        throw UsageError("cannot read \(path): \(error.localizedDescription)")
    }
}

/// What a pipe or a device holds, read until its end or until Ctrl-C, which a read that waits for a writer (a
/// FIFO) or never ends (/dev/zero) would otherwise not see.
private func readInterruptibly(_ descriptor: Int32, path: String) throws(UsageError) -> Data {
    var data = Data()
    while true {
        switch nextRead(of: descriptor) {
        case .bytes(let bytes): data.append(contentsOf: bytes)
        case .end: return data
        case .interrupted:
            throw UsageError(interrupted: "Interrupted while reading \(path); nothing was written.")
        case .failed: throw UsageError("cannot read \(path): \(String(cString: strerror(errno))).")
        }
    }
}

/// What one read of a pipe or a device gave.
enum InterruptibleRead {
    /// Some bytes (none when the read was interrupted by a signal, or the descriptor had nothing after all).
    case bytes([UInt8])
    case end
    /// Ctrl-C was pressed while waiting.
    case interrupted
    /// The read failed (`errno` says why).
    case failed
}

/// Waits until `descriptor` has something to read, or Ctrl-C, then reads up to 64 KiB of it.
func nextRead(of descriptor: Int32) -> InterruptibleRead {
    switch storesh_wait_readable(descriptor) {
    case 0: return .interrupted
    case 1: break
    default: return .failed
    }
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    let got = chunk.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
    if got == 0 { return .end }
    if got < 0 { return errno == EINTR || errno == EAGAIN ? .bytes([]) : .failed }
    chunk.removeLast(chunk.count - got)
    return .bytes(chunk)
}

/// Writes a file whole or not at all: into a temporary file beside it, synced, then renamed over it.
func writeFileAtomically(_ path: String, _ body: (CheckedOutput) throws -> Void) throws {
    let temporary = path + ".partial-\(getpid())"
    let descriptor = Foundation.open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o644)
    guard descriptor >= 0 else {
        throw StorageError(.unknown, "Cannot write \(path): \(String(cString: strerror(errno))).")
    }
    do {
        defer { Foundation.close(descriptor) }
        let output = CheckedOutput(descriptor: descriptor, name: path)
        try body(output)
        try output.synchronize()
        guard rename(temporary, path) == 0 else {
            throw StorageError(.unknown, "Cannot write \(path): \(String(cString: strerror(errno))).")
        }
    } catch {
        unlink(temporary)
        throw error
    }
}

/// Text for people on standard output (a subcommand's report, a help topic), wrapped at blanks between words to the
/// terminal's width when standard output is a terminal (`TerminalCells.wrap`: a word is never cut at the edge); as
/// it is otherwise, for a pipe or a file to get each line whole.
func printForPeople(_ text: String) {
    let columns = Int(storesh_terminal_columns(STDOUT_FILENO))
    print(columns > 0 ? TerminalCells.wrap(text, toCells: columns).joined(separator: "\n") : text)
}
