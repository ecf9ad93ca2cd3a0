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
