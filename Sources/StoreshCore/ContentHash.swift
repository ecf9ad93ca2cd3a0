import CStoreshChecksum
import Crypto
import Foundation

/// Content checksums as the service reports them (rule M2).
public enum ContentHash {
    /// The base64 of the 16-byte MD5 of the content: empty content is `1B2M2Y8AsgTpgAmY7PhCfg==`.
    public static func md5Base64(_ content: some Collection<UInt8>) -> String {
        var hasher = Insecure.MD5()
        if let contiguous = content as? [UInt8] {
            hasher.update(data: contiguous)
        } else if let data = content as? Data {
            hasher.update(data: data)
        } else {
            hasher.update(data: Array(content))
        }
        return Data(hasher.finalize()).base64EncodedString()
    }

    /// Whether `text` is the base64 form of a 16-byte MD5 digest.
    public static func isMD5Base64(_ text: String) -> Bool {
        Data(base64Encoded: text)?.count == 16
    }
}

/// CRC-32C (Castagnoli), the checksum Cloud Storage reports beside MD5 (`crc32c` in an object resource,
/// `X-Goog-Hash: crc32c=…`): the official clients check an upload's result and a download against it.
public struct CRC32C: Sendable {
    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        state = storesh_crc32c_update(state, base.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    public mutating func update(_ bytes: Data) {
        bytes.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// As Cloud Storage writes it: the base64 of the 4 bytes, most significant first.
    public var base64: String { Self.base64(of: value) }

    public static func base64(of content: some Collection<UInt8>) -> String {
        var crc = CRC32C()
        if let data = content as? Data {
            crc.update(data)
        } else if content.withContiguousStorageIfAvailable({ crc.update(UnsafeRawBufferPointer($0)) }) == nil {
            crc.update(Array(content))
        }
        return crc.base64
    }

    /// The base64 form of a stored CRC-32C value.
    public static func base64(of value: UInt32) -> String {
        Data([UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
            .base64EncodedString()
    }
}
