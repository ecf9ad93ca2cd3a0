import StoreshCore

/// A target pattern of `meta set`, `meta unset` and `rm` (contract, Paths and patterns): `*` matches within
/// one segment, `**` across segments (`a/**/b` also matches `a/b`), `?` one character, `[…]` a set
/// (`[!…]` or `[^…]` negated, `a-z` ranges). Quoted or escaped characters are literal.
package struct ObjectPattern: Sendable, CustomStringConvertible {
    enum Token: Sendable, Equatable {
        case scalar(Unicode.Scalar)
        case star
        case globstar
        case question
        case set(negated: Bool, ranges: [ClosedRange<Unicode.Scalar>])
    }

    let tokens: [Token]
    /// The pattern resolved to a full path, as users see it in messages.
    package let text: String
    /// The names that can match all start with this: the scan of the bucket starts here.
    package let literalPrefix: String

    package var description: String { text }

    /// True when matches may lie in several folders: a `**`, or a wildcard in a folder's segment. Otherwise every
    /// match is an item of one folder, which one listing shows.
    package var crossesSegments: Bool {
        guard let lastSlash = tokens.lastIndex(of: .scalar("/")) else {
            return tokens.contains(.globstar)
        }
        return tokens.contains(.globstar)
            || tokens[..<lastSlash].contains { if case .scalar = $0 { false } else { true } }
    }

    /// True when the word has an unquoted `*`, `?` or `[`: it is a pattern, not a path.
    package static func isPattern(_ word: Word) -> Bool {
        word.firstUnquoted("*") != nil || word.firstUnquoted("?") != nil || word.firstUnquoted("[") != nil
    }

    /// Resolves a pattern word against the current reference like a path (rules P1, P2, P4): relative or
    /// absolute, `.` and `..` navigate, runs of `/` collapse.
    package init(
        resolving word: Word, from current: StoragePath, bucket: String, scheme: String = "gs"
    ) throws(StorageError) {
        var characters = Array(zip(word.text.unicodeScalars, word.literal))
        var segments: [[(Unicode.Scalar, Bool)]] = current.segments.map { segment in
            segment.unicodeScalars.map { ($0, true) }
        }
        let text = word.text
        let urlStart = scheme + "://"
        if text.hasPrefix(urlStart) {
            let afterScheme = text.dropFirst(urlStart.count)
            let bucketPart = afterScheme.prefix { $0 != "/" }
            if bucketPart.isEmpty {
                throw .invalidArgument("\(urlStart) needs a bucket name: \(urlStart)\(bucket)/PATH.")
            }
            if bucketPart != bucket { throw .bucketMismatch(provided: String(bucketPart), current: bucket) }
            characters.removeFirst(urlStart.unicodeScalars.count + bucketPart.unicodeScalars.count)
            segments = []
        } else if text.hasPrefix("/") {
            segments = []
        }
        for segment in characters.split(whereSeparator: { $0.0 == "/" }) {
            let segmentText = String(String.UnicodeScalarView(segment.map(\.0)))
            switch segmentText {
            case ".": continue
            case "..": if !segments.isEmpty { segments.removeLast() }
            default: segments.append(Array(segment))
            }
        }
        var joined: [(Unicode.Scalar, Bool)] = []
        for (index, segment) in segments.enumerated() {
            if index > 0 { joined.append(("/", true)) }
            joined += segment
        }
        self.text = String(String.UnicodeScalarView(joined.map(\.0)))
        self.tokens = try Self.compile(joined, pattern: self.text)
        var prefix = String.UnicodeScalarView()
        for token in tokens {
            guard case .scalar(let scalar) = token else { break }
            prefix.append(scalar)
        }
        self.literalPrefix = String(prefix)
        self.isPrefixThenAnything = tokens.count == prefix.count + 1 && tokens.last == .globstar
    }

    /// True for `PREFIX**` (`users/**`, the common bulk edit): a name matches when it starts with the prefix, with
    /// no need to match it a character at a time.
    private let isPrefixThenAnything: Bool

    private static func compile(_ characters: [(Unicode.Scalar, Bool)], pattern: String) throws(StorageError) -> [Token]
    {
        var tokens: [Token] = []
        var index = 0
        while index < characters.count {
            let (scalar, literal) = characters[index]
            index += 1
            if literal {
                tokens.append(.scalar(scalar))
                continue
            }
            switch scalar {
            case "*":
                if index < characters.count, characters[index] == ("*", false) {
                    index += 1
                    while index < characters.count, characters[index] == ("*", false) { index += 1 }
                    tokens.append(.globstar)
                } else {
                    tokens.append(.star)
                }
            case "?":
                tokens.append(.question)
            case "[":
                var negated = false
                if index < characters.count, !characters[index].1,
                    characters[index].0 == "!" || characters[index].0 == "^"
                {
                    negated = true
                    index += 1
                }
                var ranges: [ClosedRange<Unicode.Scalar>] = []
                var first = true
                while true {
                    guard index < characters.count else {
                        throw .invalidArgument("Pattern '\(pattern)' has a '[' without its closing ']'.")
                    }
                    let (member, memberLiteral) = characters[index]
                    if member == "]" && !memberLiteral && !first {
                        index += 1
                        break
                    }
                    first = false
                    index += 1
                    if index + 1 < characters.count, characters[index] == ("-", false), characters[index + 1].0 != "]" {
                        let upper = characters[index + 1].0
                        guard member <= upper else {
                            throw .invalidArgument("Pattern '\(pattern)' has the backwards range \(member)-\(upper).")
                        }
                        ranges.append(member...upper)
                        index += 2
                    } else {
                        ranges.append(member...member)
                    }
                }
                tokens.append(.set(negated: negated, ranges: ranges))
            default:
                tokens.append(.scalar(scalar))
            }
        }
        return tokens
    }

    /// Whether the whole name matches.
    package func matches(_ name: String) -> Bool {
        if isPrefixThenAnything { return NameBytes.starts(name, with: literalPrefix) }
        let scalars = Array(name.unicodeScalars)
        var failed = Set<Int>()  // (token, scalar) states known not to match, so backtracking stays polynomial
        return match(0, 0, scalars, &failed)
    }

    private func match(
        _ tokenIndex: Int, _ scalarIndex: Int, _ name: [Unicode.Scalar], _ failed: inout Set<Int>
    ) -> Bool {
        var t = tokenIndex
        var n = scalarIndex
        while t < tokens.count {
            switch tokens[t] {
            case .scalar(let expected):
                guard n < name.count, name[n] == expected else { return false }
                t += 1
                n += 1
            case .question:
                guard n < name.count, name[n] != "/" else { return false }
                t += 1
                n += 1
            case .set(let negated, let ranges):
                guard n < name.count, name[n] != "/" else { return false }
                let inSet = ranges.contains { $0.contains(name[n]) }
                guard inSet != negated else { return false }
                t += 1
                n += 1
            case .star, .globstar:
                let key = t * (name.count + 1) + n
                if failed.contains(key) { return false }
                let crossesSegments = tokens[t] == .globstar
                // `**/` may stand for no segment at all: a/**/b matches a/b.
                if crossesSegments, t + 1 < tokens.count, tokens[t + 1] == .scalar("/"), match(t + 2, n, name, &failed)
                {
                    return true
                }
                var end = n
                while true {
                    if match(t + 1, end, name, &failed) { return true }
                    guard end < name.count, crossesSegments || name[end] != "/" else { break }
                    end += 1
                }
                failed.insert(key)
                return false
            }
        }
        return n == name.count
    }
}
