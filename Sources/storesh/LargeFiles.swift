import Foundation
import StoreshCore
import StoreshLanguage

/// A large local file as content read a piece at a time (`put` of a file over `streamingThreshold`): its MD5 is
/// computed with one pass when it is opened, and pieces are read with `pread`, so uploads in parallel share it.
final class FileContentSource: ContentSource, @unchecked Sendable {
    let path: String
    let size: Int64
    let md5Base64: String
    private let descriptor: Int32

    var origin: String? { path }

    init(path: String) throws(StorageError) {
        self.path = path
        descriptor = Foundation.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError(.invalidArgument, "Cannot read \(path): \(String(cString: strerror(errno))).")
        }
        var status = stat()
        fstat(descriptor, &status)
        size = Int64(status.st_size)
        var hash = MD5Accumulator()
        var offset: Int64 = 0
        while offset < size {
            let piece: Data
            do {
                piece = try Self.read(descriptor, path: path, offset: offset, length: 4 << 20)
            } catch {
                Foundation.close(descriptor)
                throw error
            }
            guard !piece.isEmpty else { break }
            hash.update(piece)
            offset += Int64(piece.count)
        }
        md5Base64 = hash.base64()
    }

    deinit { Foundation.close(descriptor) }

    func read(offset: Int64, length: Int) throws -> Data {
        try Self.read(descriptor, path: path, offset: offset, length: length)
    }

    private static func read(_ descriptor: Int32, path: String, offset: Int64, length: Int) throws(StorageError) -> Data {
        var data = Data(count: length)
        var filled = 0
        while filled < length {
            let count = data.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + filled, length - filled, off_t(offset) + off_t(filled))
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw StorageError(.invalidArgument, "Cannot read \(path): \(String(cString: strerror(errno))).")
            }
            if count == 0 { break }
            filled += count
        }
        return data.prefix(filled)
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
            let count = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
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
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, Int64(status.st_size) > Self.streamingThreshold
        else { return nil }
        return try FileContentSource(path: path)
    }

    func sink(writingTo path: String) throws(StorageError) -> any FileSink { try AtomicFileSink(path: path) }
}
