import Foundation
import StoreshCore
import StoreshLanguage

/// A script's bytes for `run FILE` and standard input, read in pieces: a regular file is read where it is (twice:
/// checked, then run); anything else (a pipe, `/dev/stdin`, `<(…)`) can be read once only, so what it gives is
/// kept as it is read: in memory while it is small, then in a private temporary file.
func scriptBytes(at path: String) throws(UsageError) -> any ScriptBytes {
    var status = stat()
    guard stat(path, &status) == 0 else {
        throw UsageError(
            errno == ENOENT
                ? "cannot read \(path): there is no such file."
                : "cannot read \(path): \(String(cString: strerror(errno))).")
    }
    guard (status.st_mode & S_IFMT) != S_IFDIR else {
        throw UsageError("cannot read \(path): it is a directory.")
    }
    let regular = (status.st_mode & S_IFMT) == S_IFREG
    // A pipe or a device is opened without waiting for a writer, then read as data comes, so that Ctrl-C ends it.
    let descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC | (regular ? 0 : O_NONBLOCK))
    guard descriptor >= 0 else { throw UsageError("cannot read \(path): \(String(cString: strerror(errno))).") }
    // What was opened decides (the path may have been replaced since it was looked at).
    guard fstat(descriptor, &status) == 0 else {
        Foundation.close(descriptor)
        throw UsageError("cannot read \(path): \(String(cString: strerror(errno))).")
    }
    if (status.st_mode & S_IFMT) == S_IFREG { return ScriptFile(descriptor: descriptor, path: path) }
    guard (status.st_mode & S_IFMT) != S_IFDIR else {
        Foundation.close(descriptor)
        throw UsageError("cannot read \(path): it is a directory.")
    }
    return KeptInput(descriptor: descriptor, name: path, closes: true)
}

/// Standard input as a script: a file it is redirected from is read where it is, a pipe is kept as it is read.
func standardInputScript() -> any ScriptBytes {
    var status = stat()
    if fstat(STDIN_FILENO, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG {
        let position = lseek(STDIN_FILENO, 0, SEEK_CUR)
        if position >= 0 {
            return ScriptFile(descriptor: STDIN_FILENO, path: "standard input", start: Int(position), closes: false)
        }
    }
    return KeptInput(descriptor: STDIN_FILENO, name: "standard input", closes: false)
}

/// A regular file, read at offsets (it is checked whole before it runs, then read again as it runs; the check
/// keeps checksums, so an edit in between stops the run).
final class ScriptFile: ScriptBytes {
    private let descriptor: Int32
    private let path: String
    /// Where the script starts in the file (standard input redirected from a file may have been read from).
    private let start: Int
    private let closes: Bool

    init(descriptor: Int32, path: String, start: Int = 0, closes: Bool = true) {
        self.descriptor = descriptor
        self.path = path
        self.start = start
        self.closes = closes
    }

    deinit { if closes { Foundation.close(descriptor) } }

    func read(at offset: Int, count: Int) throws(StorageError) -> [UInt8] {
        guard let bytes = positionedRead(descriptor, at: start + offset, count: count) else {
            throw StorageError(.unknown, "Cannot read \(path): \(String(cString: strerror(errno))).")
        }
        return bytes
    }
}

/// Up to `count` bytes of a file from `offset` (fewer only at its end); nil when the file cannot be read.
private func positionedRead(_ descriptor: Int32, at offset: Int, count: Int) -> [UInt8]? {
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
        let got = bytes.withUnsafeMutableBytes { buffer in
            pread(descriptor, buffer.baseAddress! + filled, count - filled, off_t(offset + filled))
        }
        if got == 0 { break }
        if got < 0 {
            if errno == EINTR { continue }
            return nil
        }
        filled += got
    }
    bytes.removeLast(count - filled)
    return bytes
}

/// Input that can be read once only (standard input, a pipe), kept as it is read: in memory up to
/// `inMemoryLimit`, then in a temporary file of its own, unlinked as soon as it is made, so that it is gone when
/// the process is, however it ends. Reads wait for the writer and end at Ctrl-C.
final class KeptInput: ScriptBytes {
    static let inMemoryLimit = 1 << 20

    private let descriptor: Int32
    private let name: String
    private let closes: Bool
    private var memory: [UInt8] = []
    /// The temporary file, once the input outgrew memory; it then holds everything received.
    private var spool: Int32?
    private var received = 0
    private var ended = false

    init(descriptor: Int32, name: String, closes: Bool) {
        self.descriptor = descriptor
        self.name = name
        self.closes = closes
    }

    deinit {
        if closes { Foundation.close(descriptor) }
        if let spool { Foundation.close(spool) }
    }

    func read(at offset: Int, count: Int) throws(StorageError) -> [UInt8] {
        while !ended && received < offset + count { try receive() }
        let end = min(received, offset + count)
        guard offset < end else { return [] }
        guard let spool else { return Array(memory[offset..<end]) }
        guard let bytes = positionedRead(spool, at: offset, count: end - offset), bytes.count == end - offset else {
            throw failure("cannot read back what was kept of \(name)")
        }
        return bytes
    }

    /// Reads what the input has next and keeps it.
    private func receive() throws(StorageError) {
        let chunk: [UInt8]
        switch nextRead(of: descriptor) {
        case .bytes(let bytes): chunk = bytes
        case .end:
            ended = true
            return
        case .interrupted: throw StorageError(.cancelled, "Interrupted while reading \(name); nothing ran.")
        case .failed: throw failure("cannot read \(name)")
        }
        let got = chunk.count
        if spool == nil && received + got > Self.inMemoryLimit {
            spool = try makeSpool()
            try write(memory)
            memory = []
        }
        if spool != nil {
            try write(chunk)
        } else {
            memory += chunk
        }
        received += got
    }

    private func makeSpool() throws(StorageError) -> Int32 {
        let folder = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((folder + "/storesh-script-XXXXXX").utf8CString)
        let spool = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard spool >= 0 else { throw failure("cannot keep \(name) in \(folder)") }
        // Nobody else's, and nothing left behind: unlinked at once, it lives as long as it is open.
        _ = template.withUnsafeBufferPointer { unlink($0.baseAddress!) }
        _ = fcntl(spool, F_SETFD, FD_CLOEXEC)
        return spool
    }

    private func write(_ bytes: [UInt8]) throws(StorageError) {
        guard let spool else { return }
        var written = 0
        while written < bytes.count {
            let wrote = bytes.withUnsafeBytes { Foundation.write(spool, $0.baseAddress! + written, $0.count - written) }
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { throw failure("cannot keep \(name) in a temporary file") }
            written += wrote
        }
    }

    private func failure(_ what: String) -> StorageError {
        StorageError(
            .unknown, "\(what.prefix(1).uppercased() + what.dropFirst()): \(String(cString: strerror(errno))).")
    }
}
