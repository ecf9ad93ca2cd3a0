/// Cloud Storage's bucket names (its naming rules): 3 to 63 characters (222 with dots, 63 between them) of
/// lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit; not an IP address in
/// dotted-decimal form; not starting with `goog`, and without `google` or a close misspelling of it (`g00gle`).
/// A name is also a file name where storesh keeps a bucket per file (`storesh serve`, its imports), so this is
/// what keeps a bucket a request or an export names inside its directory.
public enum BucketNames {
    /// Why `name` is not a bucket name the service takes; nil when it is one.
    public static func problem(with name: String) -> String? {
        let bytes = Array(name.utf8)
        let isLetterOrDigit: (UInt8) -> Bool = { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        let allowed = bytes.allSatisfy { byte in
            isLetterOrDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
        guard allowed else { return "a bucket name has lowercase letters, digits, '-', '_' and '.' only." }
        let limit = bytes.contains(UInt8(ascii: ".")) ? 222 : 63
        guard (3...limit).contains(bytes.count) else { return "a bucket name is 3 to \(limit) characters long." }
        guard isLetterOrDigit(bytes.first!), isLetterOrDigit(bytes.last!) else {
            return "a bucket name starts and ends with a letter or a digit."
        }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.contains(where: { $0.count > 63 || $0.isEmpty }) {
            return "each dot-separated part of a bucket name is 1 to 63 characters long."
        }
        if parts.count == 4,
            parts.allSatisfy({ part in part.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } })
        {
            return "a bucket name is not an IP address in dotted-decimal form."
        }
        if bytes.starts(with: Array("goog".utf8)) { return "a bucket name does not begin with \"goog\"." }
        if containsGoogleLookalike(bytes) {
            return "a bucket name does not contain \"google\" or a close misspelling of it (such as \"g00gle\")."
        }
        return nil
    }

    /// Whether `bytes` hold `google` with either o written as a zero (`g00gle`, `go0gle`).
    static func containsGoogleLookalike(_ bytes: [UInt8]) -> Bool {
        let pattern: [Set<UInt8>] = [
            [UInt8(ascii: "g")], [UInt8(ascii: "o"), UInt8(ascii: "0")], [UInt8(ascii: "o"), UInt8(ascii: "0")],
            [UInt8(ascii: "g")], [UInt8(ascii: "l"), UInt8(ascii: "1")], [UInt8(ascii: "e"), UInt8(ascii: "3")],
        ]
        guard bytes.count >= pattern.count else { return false }
        return (0...(bytes.count - pattern.count)).contains { start in
            pattern.indices.allSatisfy { pattern[$0].contains(bytes[start + $0]) }
        }
    }
}
