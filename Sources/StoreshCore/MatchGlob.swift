/// Cloud Storage's `matchGlob` for listings: `*` matches any characters but `/`; `**` any characters, `/` included
/// (`**/` also matches nothing, so `**/a` matches `a`); `?` one character but `/`; `[abc]`, `[a-z]`, `[!a-z]` one
/// character of a set or not of it; `{a,b}` one of the alternatives (not nested). Matched by characters (Unicode
/// scalars) in time proportional to the pattern's length times the name's, whatever the pattern: no backtracking.
public struct MatchGlob: Sendable {
    enum Token: Equatable, Sendable {
        case scalar(Unicode.Scalar)
        /// `*`: within a segment.
        case star
        /// `**`: across segments.
        case globstar
        /// `**/`: nothing, or anything that ends with `/`.
        case globstarSlash
        case question
        case set(negated: Bool, ranges: [ClosedRange<Unicode.Scalar>])
    }

    /// Each alternative the braces make, as tokens.
    let alternatives: [[Token]]
    public let text: String

    /// The longest glob accepted, and the most alternatives its braces may make.
    public static let maximumLength = 1024
    public static let maximumAlternatives = 256

    public init(_ text: String) throws(StorageError) {
        self.text = text
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else {
            throw .invalidArgument("matchGlob must be 1 to \(Self.maximumLength) bytes long.")
        }
        // Braces first: each {a,b} multiplies the alternatives.
        var expanded: [[Unicode.Scalar]] = [[]]
        var scalars = Array(text.unicodeScalars)[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "{" else {
                for index in expanded.indices { expanded[index].append(scalar) }
                continue
            }
            guard let close = scalars.firstIndex(of: "}") else {
                throw .invalidArgument("matchGlob '\(text)' has a { without its }.")
            }
            let inside = scalars[..<close]
            if inside.contains("{") {
                throw .invalidArgument("matchGlob '\(text)' nests braces, which Cloud Storage does not allow.")
            }
            let choices = inside.split(separator: ",", omittingEmptySubsequences: false)
            guard expanded.count * choices.count <= Self.maximumAlternatives else {
                throw .invalidArgument("matchGlob '\(text)' makes more than \(Self.maximumAlternatives) alternatives.")
            }
            expanded = expanded.flatMap { start in choices.map { start + $0 } }
            scalars = scalars[scalars.index(after: close)...]
        }
        alternatives = try expanded.map { alternative throws(StorageError) in try Self.tokens(alternative, glob: text) }
    }

    private static func tokens(_ scalars: [Unicode.Scalar], glob: String) throws(StorageError) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            switch scalar {
            case "*":
                if index < scalars.count, scalars[index] == "*" {
                    index += 1
                    if index < scalars.count, scalars[index] == "/" {
                        index += 1
                        tokens.append(.globstarSlash)
                    } else {
                        tokens.append(.globstar)
                    }
                } else {
                    tokens.append(.star)
                }
            case "?": tokens.append(.question)
            case "[":
                var negated = false
                if index < scalars.count, scalars[index] == "!" || scalars[index] == "^" {
                    negated = true
                    index += 1
                }
                var ranges: [ClosedRange<Unicode.Scalar>] = []
                var closed = false
                // `]` first in a set is itself.
                var first = true
                while index < scalars.count {
                    let member = scalars[index]
                    index += 1
                    if member == "]" && !first {
                        closed = true
                        break
                    }
                    first = false
                    if index + 1 < scalars.count, scalars[index] == "-", scalars[index + 1] != "]" {
                        let upper = scalars[index + 1]
                        index += 2
                        guard member <= upper else {
                            throw .invalidArgument(
                                "matchGlob '\(glob)' has the range \(member)-\(upper), which is empty.")
                        }
                        ranges.append(member...upper)
                    } else {
                        ranges.append(member...member)
                    }
                }
                guard closed else { throw .invalidArgument("matchGlob '\(glob)' has a [ without its ].") }
                tokens.append(.set(negated: negated, ranges: ranges))
            default: tokens.append(.scalar(scalar))
            }
        }
        return tokens
    }

    /// Whether the whole name matches.
    public func matches(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        return alternatives.contains { Self.matches($0, scalars) }
    }

    /// Dynamic programming over (token, character): `reachable[j]` says whether the tokens so far can match the
    /// first `j` characters.
    private static func matches(_ tokens: [Token], _ name: [Unicode.Scalar]) -> Bool {
        var reachable = [Bool](repeating: false, count: name.count + 1)
        reachable[0] = true
        for token in tokens {
            var next = [Bool](repeating: false, count: name.count + 1)
            switch token {
            case .star, .globstar:
                // Any run of characters (none of them `/` for `*`) after a reachable point.
                var open = false
                for j in 0...name.count {
                    if reachable[j] { open = true }
                    next[j] = open
                    if j < name.count, token == .star, name[j] == "/" { open = false }
                }
            case .globstarSlash:
                // Nothing, or any run that ends with `/`.
                var open = false
                for j in 0...name.count {
                    next[j] = reachable[j] || (open && j > 0 && name[j - 1] == "/")
                    if reachable[j] { open = true }
                }
            case .scalar, .question, .set:
                for j in 0..<name.count where reachable[j] && Self.matches(token, name[j]) { next[j + 1] = true }
            }
            reachable = next
        }
        return reachable[name.count]
    }

    private static func matches(_ token: Token, _ scalar: Unicode.Scalar) -> Bool {
        switch token {
        case .scalar(let expected): scalar == expected
        case .question: scalar != "/"
        case .set(let negated, let ranges): ranges.contains { $0.contains(scalar) } != negated
        case .star, .globstar, .globstarSlash: false
        }
    }
}
