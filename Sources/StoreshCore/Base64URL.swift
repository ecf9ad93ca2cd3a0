import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs and storesh's own tokens (page tokens, rewrite tokens) carry
/// bytes in URLs.
public enum Base64URL {
    public static func encoded(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of `text`, padded as base64 needs; nil when it is not base64url.
    public static func decoded(_ text: some StringProtocol) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

/// Bytes as lowercase hexadecimal digits (digests in signatures), and back.
public enum Hexadecimal {
    public static func encoded(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes { output += [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]] }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes `text` spells (either case); nil when it is not an even count of hexadecimal digits.
    public static func decoded(_ text: some StringProtocol) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }
}
