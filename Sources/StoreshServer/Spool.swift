import Foundation
import StoreshCore

/// Bytes on their way into or out of the bucket (an upload as it arrives, a download before it is sent), kept in
/// memory while small and in a file past that, so that the server's memory does not grow with object sizes. The
/// file is made beside the bucket (so a full disk is met where the bucket is) and unlinked at once: it is never
/// visible, and it disappears with its descriptor, however the server ends.
///
/// Not thread-safe: one request uses it at a time (an upload session's lock serialises its requests).
final class Spool: @unchecked Sendable {
    /// Bytes kept in memory before the spool moves to a file.
    static let memoryBytes = 1 << 20
    /// Bytes read or written at a time.
    static let pieceBytes = 1 << 20

    private let directory: String
    private var memory = Data()
    private var descriptor: Int32 = -1
    private(set) var size: Int64 = 0

    /// A spool whose file, when it needs one, is made in `directory`.
    init(directory: String) {
        self.directory = directory
    }

    deinit {
        if descriptor >= 0 { Foundation.close(descriptor) }
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        if descriptor < 0 && memory.count + bytes.count <= Self.memoryBytes {
            memory.append(contentsOf: bytes)
        } else {
            if descriptor < 0 { try moveToFile() }
            try writeFully(bytes, at: size)
        }
        size += Int64(bytes.count)
    }

    func append(_ bytes: Data) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    /// Drops everything past `length` bytes (a chunk that turned out not to belong).
    func truncate(to length: Int64) throws {
        guard length < size else { return }
        if descriptor < 0 {
            memory.removeSubrange(Int(length)...)
        } else if ftruncate(descriptor, off_t(length)) != 0 {
            throw Self.failure("cut back", errno)
        }
        size = length
    }

    /// `length` bytes (fewer at the end) from `offset`.
    func read(offset: Int64, length: Int) throws -> Data {
        let count = Int(max(0, min(Int64(length), size - offset)))
        guard count > 0 else { return Data() }
        if descriptor < 0 { return memory.subdata(in: Int(offset)..<Int(offset) + count) }
        var data = Data(count: count)
        var done = 0
        // Bounded: each round reads at least one byte, or ends.
        while done < count {
            let got = data.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw Self.failure("read", got < 0 ? errno : EIO) }
            done += got
        }
        return data
    }

    /// The first place at or after `start` where `pattern` occurs, searched a piece at a time.
    func firstOffset(of pattern: Data, from start: Int64) throws -> Int64? {
        var offset = start
        // Bounded: each round moves `offset` forward by at least one byte, or ends.
        while offset + Int64(pattern.count) <= size {
            let window = try read(offset: offset, length: Self.pieceBytes + pattern.count - 1)
            if let found = window.range(of: pattern) { return offset + Int64(found.lowerBound - window.startIndex) }
            if offset + Int64(window.count) >= size { return nil }
            offset += Int64(window.count - pattern.count + 1)
        }
        return nil
    }

    /// Bytes `range` of the spool as content of its own, with its checksums computed in one pass (its MD5 only
    /// when not `knownMD5` already).
    func content(_ range: Range<Int64>, knownMD5: String? = nil) throws -> SpooledContent {
        var md5 = MD5Accumulator()
        var crc = CRC32C()
        var offset = range.lowerBound
        // Bounded: each round moves `offset` forward by at least one byte, or ends.
        while offset < range.upperBound {
            let piece = try read(offset: offset, length: Int(min(Int64(Self.pieceBytes), range.upperBound - offset)))
            guard !piece.isEmpty else { break }
            if knownMD5 == nil { md5.update(piece) }
            crc.update(piece)
            offset += Int64(piece.count)
        }
        return SpooledContent(spool: self, range: range, md5Base64: knownMD5 ?? md5.base64(), crc32cBase64: crc.base64)
    }

    /// All of it as content.
    func content() throws -> SpooledContent { try content(0..<size) }

    private func moveToFile() throws {
        var template = Array((directory + "/.storesh-spool-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else { throw Self.failure("make a file for", errno, in: directory) }
        unlink(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        descriptor = made
        try memory.withUnsafeBytes { try writeFully($0, at: 0) }
        memory = Data()
    }

    private func writeFully(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws {
        var done = 0
        // Bounded: each round writes at least one byte, or throws.
        while done < bytes.count {
            let wrote = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if wrote < 0 && errno == EINTR { continue }
            guard wrote > 0 else { throw Self.failure("write", wrote < 0 ? errno : EIO) }
            done += wrote
        }
    }

    private static func failure(_ doing: String, _ code: Int32, in directory: String? = nil) -> StorageError {
        let place = directory.map { " in \($0)" } ?? ""
        if code == ENOSPC {
            return StorageError(
                .unavailable,
                "The disk is full: storesh serve could not \(doing) the upload's bytes\(place); nothing was changed.")
        }
        return StorageError(
            .internalError,
            "storesh serve could not \(doing) an upload's bytes\(place): \(String(cString: strerror(code))).")
    }
}

/// A range of a spool as an object's content: what an upload writes, or a download sends.
struct SpooledContent: ContentSource, @unchecked Sendable {
    let spool: Spool
    let range: Range<Int64>
    let md5Base64: String
    let crc32cBase64: String

    var size: Int64 { range.upperBound - range.lowerBound }
    var origin: String? { nil }

    func read(offset: Int64, length: Int) throws -> Data {
        try spool.read(offset: range.lowerBound + offset, length: Int(min(Int64(length), max(0, size - offset))))
    }
}

/// Content read into a spool as it arrives (a copy within a bucket, a compose's sources).
final class SpoolSink: ContentSink, @unchecked Sendable {
    private let spool: Spool

    init(_ spool: Spool) { self.spool = spool }

    func write(_ bytes: Data) throws { try spool.append(bytes) }
}
