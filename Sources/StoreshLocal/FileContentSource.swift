import Foundation
import StoreshCore

/// A local file as content read a piece at a time (`put` of a large file, a plan's or journal's upload, an emulator
/// export's content): its size and MD5 are computed with one pass when it is opened, and pieces are read with
/// `pread`, so uploads in parallel share it.
public final class FileContentSource: ContentSource, @unchecked Sendable {
    public let path: String
    public let size: Int64
    public let md5Base64: String
    private let descriptor: Int32

    public var origin: String? { path }

    /// Opens `path`, which must be a regular file (a FIFO or a device is refused, not waited on); with
    /// `followingLinks` false, a symbolic link is refused too.
    public init(path: String, what: String = "content", followingLinks: Bool = true) throws(StorageError) {
        self.path = path
        descriptor = try RegularFile.open(path, what: what, followingLinks: followingLinks)
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

    public func read(offset: Int64, length: Int) throws -> Data {
        try Self.read(descriptor, path: path, offset: offset, length: length)
    }

    private static func read(_ descriptor: Int32, path: String, offset: Int64, length: Int) throws(StorageError) -> Data
    {
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
