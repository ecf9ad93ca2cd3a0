import Foundation
import StoreshCore
import StoreshLanguage
import StoreshLocal

/// The local files of `put` and `get`.
struct HostFiles: LocalFiles {
    func read(_ path: String) throws(StorageError) -> Data {
        do {
            return try readInputFile(path)
        } catch {
            // Ctrl-C while a put reads a pipe: the command is cancelled, and rolled back with the rest of the line.
            if error.isInterruption { throw StorageError(.cancelled, error.description) }
            throw StorageError(
                .invalidArgument, error.description.prefix(1).uppercased() + error.description.dropFirst())
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

/// A file written a piece at a time (`get` of a large object): into a temporary file beside it, synced and renamed
/// into place on commit, removed on discard, so that the path holds the old file or the whole new one.
final class AtomicFileSink: FileSink, @unchecked Sendable {
    let path: String
    private let temporary: String
    private let descriptor: Int32

    init(path: String) throws(StorageError) {
        self.path = path
        temporary = path + ".partial-\(getpid())"
        descriptor = Foundation.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw StorageError(.invalidArgument, "Cannot write \(path): \(String(cString: strerror(errno))).")
        }
    }

    func write(_ bytes: Data) throws {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes {
                Foundation.write(descriptor, $0.baseAddress! + written, bytes.count - written)
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                throw StorageError(.unknown, "Cannot write \(path): \(String(cString: strerror(errno))).")
            }
            written += count
        }
    }

    func commit() throws(StorageError) {
        defer { Foundation.close(descriptor) }
        guard fsync(descriptor) == 0, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw StorageError(.unknown, "Cannot write \(path): \(reason).")
        }
    }

    func discard() {
        Foundation.close(descriptor)
        unlink(temporary)
    }
}

extension HostFiles {
    /// Files larger than this are uploaded a piece at a time (a remote bucket's resumable upload), never read whole.
    static let streamingThreshold: Int64 = 8 << 20

    func source(_ path: String) throws(StorageError) -> (any ContentSource)? {
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
            Int64(status.st_size) > Self.streamingThreshold
        else { return nil }
        return try FileContentSource(path: path)
    }

    func sink(writingTo path: String) throws(StorageError) -> any FileSink { try AtomicFileSink(path: path) }
}
