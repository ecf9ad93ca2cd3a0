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
    /// The reflected Castagnoli polynomial.
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var crc = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        state = crc
    }

    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// As Cloud Storage writes it: the base64 of the 4 bytes, most significant first.
    public var base64: String {
        let value = value
        return Data([UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)])
            .base64EncodedString()
    }

    public static func base64(of content: Data) -> String {
        var crc = CRC32C()
        content.withUnsafeBytes { crc.update($0) }
        return crc.base64
    }
}
