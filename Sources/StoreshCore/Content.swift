import Crypto
import Foundation

/// Content read a piece at a time, so that a large file never has to be in memory whole: what `put` of a large
/// local file uploads (a remote bucket in chunks). The program around the core makes it (over a file).
public protocol ContentSource: Sendable {
    var size: Int64 { get }
    /// The MD5 of the whole content, base64 (rule M2), computed once with a pass over it.
    var md5Base64: String { get }
    /// Where the content can be read again (a file's path), so that a journal can name it; nil when it cannot.
    var origin: String? { get }
    /// `length` bytes (fewer at the end) from `offset`.
    func read(offset: Int64, length: Int) throws -> Data
}

extension ContentSource {
    /// Hands the content to `body` in order, at most `pieceBytes` at a time, and answers how many bytes it handed:
    /// fewer than `size` only when the source ended early, which the caller judges.
    @discardableResult
    public func forEachPiece(of pieceBytes: Int, _ body: (Data) throws -> Void) throws -> Int64 {
        var offset: Int64 = 0
        // Bounded: each round takes at least one byte, up to the source's size.
        while offset < size {
            let piece = try read(offset: offset, length: Int(min(Int64(pieceBytes), size - offset)))
            guard !piece.isEmpty else { break }
            try body(piece)
            offset += Int64(piece.count)
        }
        return offset
    }

    /// The whole content, for a bucket that keeps content whole (a local bucket's rows).
    public func readAll() throws -> Data {
        var data = Data()
        data.reserveCapacity(Int(size))
        try forEachPiece(of: 8 << 20) { data += $0 }
        return data
    }
}

/// Where downloaded content goes, a piece at a time (`get` of a large object into a file).
public protocol ContentSink: AnyObject, Sendable {
    func write(_ bytes: Data) throws
}

/// An MD5 computed a piece at a time (a large file's, for its upload's checksum).
public struct MD5Accumulator {
    private var hasher = Insecure.MD5()

    public init() {}

    public mutating func update(_ bytes: Data) { hasher.update(data: bytes) }

    /// The base64 of the digest, as `ContentHash.md5Base64` gives it.
    public func base64() -> String { Data(hasher.finalize()).base64EncodedString() }
}
