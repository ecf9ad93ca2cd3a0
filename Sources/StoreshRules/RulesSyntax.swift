import StoreshCore

/// An error in a rules file, at its line and column.
package struct RulesSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package var line: Int
    package var column: Int

    package var description: String { "\(line):\(column): \(message)" }
}

/// The bounds of a rules text, as the service has them: rules are input a request can send (`PUT
/// /internal/setRules`), so the parser and the evaluator must stay within a fixed stack and time whatever the text.
/// A text beyond them is refused with a positioned error, never parsed or evaluated on.
package enum RulesLimits {
    /// The largest rules text, in UTF-8 bytes (the service's 256 KB).
    package static let maximumSourceBytes = 256 * 1024
    /// How deeply expressions may nest: parentheses, operators, calls, lists. A chain of `&&` or `||` is one
    /// level however long.
    package static let maximumExpressionDepth = 100
    /// How deeply match blocks may nest.
    package static let maximumMatchDepth = 32
    /// Expressions evaluated for one request, function calls included; beyond it the allow grants nothing.
    package static let maximumEvaluatedExpressions = 1_000
}

/// A parsed ruleset (the subset of the Cloud Storage rules language that storesh enforces).
package struct Ruleset: Sendable {
    package var version: String
    package var functions: [RulesFunction]
    package var matches: [MatchBlock]
}

package struct MatchBlock: Sendable {
    package enum Segment: Sendable, Equatable {
        case literal(String)
        /// `{name}`: one segment.
        case variable(String)
        /// `{name=**}`: the rest of the path (zero or more segments in rules_version 2, one or more in 1).
        case rest(String)
    }

    package var path: [Segment]
    package var allows: [AllowStatement]
    package var functions: [RulesFunction]
    package var children: [MatchBlock]
    package var line: Int
}

/// Shared by reference (as `RulesFunction`): every decision passes the candidates around, and a struct of
/// four references cost four retains at every step.
package final class AllowStatement: Sendable {
    package let methods: Set<AccessMethod>
    package let methodNames: [String]
    /// nil: `allow read;` grants without a condition.
    package let condition: RulesExpression?
    package let line: Int
    /// The statement's text, for `rules why`.
    package let text: String

    init(methods: Set<AccessMethod>, methodNames: [String], condition: RulesExpression?, line: Int, text: String) {
        self.methods = methods
        self.methodNames = methodNames
        self.condition = condition
        self.line = line
        self.text = text
    }
}

package final class RulesFunction: Sendable {
    package let name: String
    package let parameters: [String]
    package let bindings: [(name: String, value: RulesExpression)]
    package let body: RulesExpression

    init(name: String, parameters: [String], bindings: [(name: String, value: RulesExpression)], body: RulesExpression)
    {
        self.name = name
        self.parameters = parameters
        self.bindings = bindings
        self.body = body
    }
}

package indirect enum RulesExpression: Sendable {
    case literal(RulesValue)
    case identifier(String, line: Int)
    /// `request` and `resource` are reserved (as in the service: no path variable or parameter hides them), so
    /// the parser resolves them, and a decision compares no names to find them.
    case request(line: Int)
    case requestField(RequestField)
    case resource
    case member(RulesExpression, String, line: Int)
    case index(RulesExpression, RulesExpression, line: Int)
    case call(RulesExpression, [RulesExpression], line: Int)
    case list([RulesExpression])
    case map([(String, RulesExpression)])
    case unary(String, RulesExpression, line: Int)
    case binary(String, RulesExpression, RulesExpression, line: Int)
    /// `a && b && …` (`all`) or `a || b || …` (any), kept flat: a long chain makes no deep tree.
    case logical(all: Bool, [RulesExpression], line: Int)
    case conditional(RulesExpression, RulesExpression, RulesExpression)
}

extension RulesExpression {
    /// The line an expression is on, where it knows it.
    var line: Int? {
        switch self {
        case .identifier(_, let line), .request(let line), .member(_, _, let line), .index(_, _, let line),
            .call(_, _, let line),
            .unary(_, _, let line), .binary(_, _, _, let line), .logical(_, _, let line):
            line
        case .literal, .requestField, .resource, .list, .map, .conditional: nil
        }
    }
}

/// The fields of `request` (rule R4).
package enum RequestField: String, Sendable, CaseIterable {
    case auth, path, time, method, resource
}

/// Tokens of the rules language.
struct RulesToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        case string(String)
        case integer(Int64)
        case float(Double)
        case symbol(String)
        case path(String)
        case end
    }

    var kind: Kind
    var line: Int
    var column: Int
    var offset: Int
}

enum RulesLexer {
    static let symbols = [
        "==", "!=", "<=", ">=", "&&", "||", "{", "}", "(", ")", "[", "]", ",", ";", ":", ".", "=", "<", ">",
        "!", "+", "-", "*", "/", "%", "?",
    ]

    static func tokens(_ text: String) throws(RulesSyntaxError) -> [RulesToken] {
        let scalars = Array(text.unicodeScalars)
        var tokens: [RulesToken] = []
        var index = 0
        var line = 1
        var column = 1
        func advance(_ count: Int = 1) {
            for _ in 0..<count {
                if scalars[index] == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
                index += 1
            }
        }
        func peek(_ offset: Int = 0) -> Unicode.Scalar? {
            index + offset < scalars.count ? scalars[index + offset] : nil
        }
        while let scalar = peek() {
            if scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" {
                advance()
                continue
            }
            if scalar == "/" && peek(1) == "/" {
                while let next = peek(), next != "\n" {
                    _ = next
                    advance()
                }
                continue
            }
            if scalar == "/" && peek(1) == "*" {
                let (startLine, startColumn) = (line, column)
                advance(2)
                while peek() != nil && !(peek() == "*" && peek(1) == "/") { advance() }
                guard peek() != nil else {
                    throw RulesSyntaxError(message: "unterminated comment", line: startLine, column: startColumn)
                }
                advance(2)
                continue
            }
            let (startLine, startColumn, startOffset) = (line, column, index)
            // After `match`, the path up to the blank before its block: /files/{uid}/{rest=**}
            if case .identifier("match") = tokens.last?.kind {
                guard scalar == "/" else {
                    throw RulesSyntaxError(message: "a match path starts with /", line: line, column: column)
                }
                var path = String.UnicodeScalarView()
                while let next = peek(), next != " ", next != "\t", next != "\n", next != "\r",
                    !(next == "{" && path.last != "/")
                {
                    path.append(next)
                    advance()
                }
                tokens.append(
                    RulesToken(kind: .path(String(path)), line: startLine, column: startColumn, offset: startOffset))
                continue
            }
            if scalar == "'" || scalar == "\"" {
                advance()
                var value = String.UnicodeScalarView()
                while true {
                    guard let next = peek(), next != "\n" else {
                        throw RulesSyntaxError(message: "unterminated string", line: startLine, column: startColumn)
                    }
                    advance()
                    if next == scalar { break }
                    if next == "\\", let escaped = peek() {
                        advance()
                        switch escaped {
                        case "n": value.append("\n")
                        case "t": value.append("\t")
                        default: value.append(escaped)
                        }
                        continue
                    }
                    value.append(next)
                }
                tokens.append(
                    RulesToken(kind: .string(String(value)), line: startLine, column: startColumn, offset: startOffset))
                continue
            }
            if ("0"..."9").contains(scalar) {
                var text = ""
                while let next = peek(),
                    ("0"..."9").contains(next) || next == "." && peek(1).map({ ("0"..."9").contains($0) }) == true
                {
                    text.unicodeScalars.append(next)
                    advance()
                }
                let kind: RulesToken.Kind
                if text.contains("."), let value = Double(text) {
                    kind = .float(value)
                } else if let value = Int64(text) {
                    kind = .integer(value)
                } else {
                    throw RulesSyntaxError(
                        message: "the number \(text) is out of range", line: startLine, column: startColumn)
                }
                tokens.append(RulesToken(kind: kind, line: startLine, column: startColumn, offset: startOffset))
                continue
            }
            if scalar == "_" || scalar.properties.isAlphabetic {
                var name = ""
                while let next = peek(), next == "_" || next.properties.isAlphabetic || ("0"..."9").contains(next) {
                    name.unicodeScalars.append(next)
                    advance()
                }
                tokens.append(
                    RulesToken(kind: .identifier(name), line: startLine, column: startColumn, offset: startOffset))
                continue
            }
            let two = String(String.UnicodeScalarView([scalar] + (peek(1).map { [$0] } ?? [])))
            if symbols.contains(two) && two.unicodeScalars.count == 2 {
                advance(2)
                tokens.append(RulesToken(kind: .symbol(two), line: startLine, column: startColumn, offset: startOffset))
            } else if symbols.contains(String(scalar)) {
                advance()
                tokens.append(
                    RulesToken(kind: .symbol(String(scalar)), line: startLine, column: startColumn, offset: startOffset)
                )
            } else {
                throw RulesSyntaxError(message: "unexpected character '\(scalar)'", line: line, column: column)
            }
        }
        tokens.append(RulesToken(kind: .end, line: line, column: column, offset: scalars.count))
        return tokens
    }
}

/// Parses a rules file: `rules_version = '1'|'2';`, `service firebase.storage { match /b/{bucket}/o { … } }`,
/// nested `match` blocks, `allow METHODS: if COND;`, `function name(args) { let x = …; return EXPR; }`.
package enum RulesParser {
    package static func parse(_ text: String) throws(RulesSyntaxError) -> Ruleset {
        let bytes = text.utf8.count
        guard bytes <= RulesLimits.maximumSourceBytes else {
            throw RulesSyntaxError(
                message:
                    "the rules are \(bytes) bytes long; a rules file is at most \(RulesLimits.maximumSourceBytes) bytes (256 KB)",
                line: 1, column: 1)
        }
        var parser = Parser(tokens: try RulesLexer.tokens(text), scalars: Array(text.unicodeScalars))
        return try parser.ruleset()
    }

    struct Parser {
        let tokens: [RulesToken]
        let scalars: [Unicode.Scalar]
        var position = 0
        /// How deep the expression being parsed is (bounded by `RulesLimits.maximumExpressionDepth`).
        var depth = 0
        /// How deep the match block being parsed is.
        var matchDepth = 0

        /// Goes one level deeper into an expression at `token`, refusing past the limit.
        mutating func enter(at token: RulesToken) throws(RulesSyntaxError) {
            depth += 1
            guard depth <= RulesLimits.maximumExpressionDepth else {
                throw error(
                    "the expression nests more than \(RulesLimits.maximumExpressionDepth) levels deep", at: token)
            }
        }

        var current: RulesToken { tokens[position] }

        mutating func next() -> RulesToken {
            defer { if position < tokens.count - 1 { position += 1 } }
            return tokens[position]
        }

        func error(_ message: String, at token: RulesToken? = nil) -> RulesSyntaxError {
            let at = token ?? current
            return RulesSyntaxError(message: message, line: at.line, column: at.column)
        }

        func describe(_ token: RulesToken) -> String {
            switch token.kind {
            case .identifier(let name): "'\(name)'"
            case .string(let value): "the string '\(value)'"
            case .integer(let value): "\(value)"
            case .float(let value): "\(value)"
            case .symbol(let symbol): "'\(symbol)'"
            case .path(let path): "the path \(path)"
            case .end: "the end of the file"
            }
        }

        mutating func expect(_ symbol: String, _ what: String) throws(RulesSyntaxError) {
            guard current.kind == .symbol(symbol) else {
                throw error("expected '\(symbol)' \(what), found \(describe(current))")
            }
            _ = next()
        }

        mutating func isKeyword(_ word: String) -> Bool { current.kind == .identifier(word) }

        mutating func identifier(_ what: String) throws(RulesSyntaxError) -> String {
            guard case .identifier(let name) = current.kind else {
                throw error("expected \(what), found \(describe(current))")
            }
            _ = next()
            return name
        }

        mutating func ruleset() throws(RulesSyntaxError) -> Ruleset {
            var version = "1"  // rule R1: no declaration means '1'
            if isKeyword("rules_version") {
                _ = next()
                try expect("=", "after rules_version")
                guard case .string(let value) = current.kind, value == "1" || value == "2" else {
                    throw error("rules_version is '1' or '2'")
                }
                version = value
                _ = next()
                try expect(";", "after the rules version")
            }
            guard isKeyword("service") else {
                throw error("expected 'service firebase.storage {', found \(describe(current))")
            }
            _ = next()
            var service = try identifier("a service name")
            while current.kind == .symbol(".") {
                _ = next()
                service += "." + (try identifier("a service name"))
            }
            guard service == "firebase.storage" else {
                throw error(
                    "these are rules for \(service); storesh reads rules for service firebase.storage",
                    at: tokens[max(0, position - 1)])
            }
            try expect("{", "to open the service")
            var functions: [RulesFunction] = []
            var matches: [MatchBlock] = []
            while current.kind != .symbol("}") {
                if isKeyword("match") {
                    matches.append(try match())
                } else if isKeyword("function") {
                    functions.append(try function())
                } else {
                    throw error("expected 'match' or 'function' in the service, found \(describe(current))")
                }
            }
            _ = next()
            guard current.kind == .end else { throw error("unexpected \(describe(current)) after the service") }
            return Ruleset(version: version, functions: functions, matches: matches)
        }

        mutating func match() throws(RulesSyntaxError) -> MatchBlock {
            let keyword = next()
            matchDepth += 1
            defer { matchDepth -= 1 }
            guard matchDepth <= RulesLimits.maximumMatchDepth else {
                throw error("match blocks nest more than \(RulesLimits.maximumMatchDepth) deep", at: keyword)
            }
            guard case .path(let text) = current.kind else { throw error("expected a path after match") }
            let pathToken = next()
            var segments: [MatchBlock.Segment] = []
            for (index, part) in text.split(separator: "/", omittingEmptySubsequences: false).dropFirst().enumerated() {
                if part.hasPrefix("{") && part.hasSuffix("}") {
                    let inner = part.dropFirst().dropLast()
                    if inner.hasSuffix("=**") {
                        segments.append(.rest(String(inner.dropLast(3))))
                    } else {
                        segments.append(.variable(String(inner)))
                    }
                } else if part.isEmpty || part.contains("{") || part.contains("}") {
                    throw error(
                        "segment \(index + 1) of the path \(text) is not a name, {name} or {name=**}", at: pathToken)
                } else {
                    segments.append(.literal(String(part)))
                }
            }
            if let restIndex = segments.firstIndex(where: { if case .rest = $0 { true } else { false } }),
                restIndex != segments.count - 1
            {
                throw error("a {name=**} wildcard must be the last segment of the path", at: pathToken)
            }
            try expect("{", "to open the match block")
            var block = MatchBlock(path: segments, allows: [], functions: [], children: [], line: keyword.line)
            while current.kind != .symbol("}") {
                if isKeyword("match") {
                    block.children.append(try match())
                } else if isKeyword("allow") {
                    block.allows.append(try allow())
                } else if isKeyword("function") {
                    block.functions.append(try function())
                } else {
                    throw error("expected 'match', 'allow' or 'function', found \(describe(current))")
                }
            }
            _ = next()
            return block
        }

        mutating func allow() throws(RulesSyntaxError) -> AllowStatement {
            let keyword = next()
            var methods = Set<AccessMethod>()
            var names: [String] = []
            repeat {
                if current.kind == .symbol(",") { _ = next() }
                let token = current
                let name = try identifier("a method (read, write, get, list, create, update, delete)")
                switch name {
                case "read": methods.formUnion([.get, .list])
                case "write": methods.formUnion([.create, .update, .delete])
                default:
                    guard let method = AccessMethod(rawValue: name) else {
                        var message = "unknown method '\(name)'"
                        if let near = Suggestion.nearest(
                            to: name, among: ["read", "write"] + AccessMethod.allCases.map(\.rawValue))
                        {
                            message += "; did you mean '\(near)'?"
                        }
                        throw error(message, at: token)
                    }
                    methods.insert(method)
                }
                names.append(name)
            } while current.kind == .symbol(",")
            var condition: RulesExpression?
            if current.kind == .symbol(":") {
                _ = next()
                guard isKeyword("if") else { throw error("expected 'if' after ':'") }
                _ = next()
                condition = try expression()
            }
            let end = current
            try expect(";", "to end the allow statement")
            let text = String(String.UnicodeScalarView(scalars[keyword.offset..<end.offset + 1]))
                .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(
                    separator: " ")
            return AllowStatement(
                methods: methods, methodNames: names, condition: condition, line: keyword.line, text: text)
        }

        mutating func function() throws(RulesSyntaxError) -> RulesFunction {
            _ = next()
            let name = try identifier("a function name")
            try expect("(", "after the function's name")
            var parameters: [String] = []
            while current.kind != .symbol(")") {
                parameters.append(try identifier("a parameter name"))
                if current.kind == .symbol(",") { _ = next() } else { break }
            }
            try expect(")", "to close the parameters")
            try expect("{", "to open the function's body")
            var bindings: [(String, RulesExpression)] = []
            while isKeyword("let") {
                _ = next()
                let variable = try identifier("a name after let")
                try expect("=", "after the let name")
                bindings.append((variable, try expression()))
                try expect(";", "after the let")
            }
            guard isKeyword("return") else { throw error("expected 'return' in the function \(name)") }
            _ = next()
            let body = try expression()
            try expect(";", "after the return expression")
            try expect("}", "to close the function \(name)")
            return RulesFunction(name: name, parameters: parameters, bindings: bindings, body: body)
        }

        // Expressions, lowest precedence first.

        mutating func expression() throws(RulesSyntaxError) -> RulesExpression {
            try enter(at: current)
            defer { depth -= 1 }
            let condition = try binary(level: 0)
            if current.kind == .symbol("?") {
                _ = next()
                let then = try expression()
                try expect(":", "in a conditional expression")
                return .conditional(condition, then, try expression())
            }
            return condition
        }

        static let levels: [[String]] = [
            ["||"], ["&&"], ["==", "!=", "<", "<=", ">", ">=", "in"], ["+", "-"], ["*", "/", "%"],
        ]

        mutating func binary(level: Int) throws(RulesSyntaxError) -> RulesExpression {
            guard level < Self.levels.count else { return try unary() }
            let first = current
            var left = try binary(level: level + 1)
            if level <= 1 {
                // `||` (level 0) and `&&` (level 1): the operands of a chain, kept in one flat node.
                let symbol = level == 0 ? "||" : "&&"
                guard current.kind == .symbol(symbol) else { return left }
                var operands = [left]
                while current.kind == .symbol(symbol) {
                    _ = next()
                    operands.append(try binary(level: level + 1))
                }
                return .logical(all: level == 1, operands, line: first.line)
            }
            // Any other operator makes the chain's tree one level deeper at each step.
            let entered = depth
            defer { depth = entered }
            while true {
                let token = current
                let symbol: String
                switch token.kind {
                case .symbol(let value) where Self.levels[level].contains(value): symbol = value
                case .identifier("in") where Self.levels[level].contains("in"): symbol = "in"
                default: return left
                }
                try enter(at: token)
                _ = next()
                left = .binary(symbol, left, try binary(level: level + 1), line: token.line)
            }
        }

        mutating func unary() throws(RulesSyntaxError) -> RulesExpression {
            let token = current
            if token.kind == .symbol("!") || token.kind == .symbol("-") {
                try enter(at: token)
                defer { depth -= 1 }
                _ = next()
                guard case .symbol(let symbol) = token.kind else { return try unary() }
                return .unary(symbol, try unary(), line: token.line)
            }
            return try postfix()
        }

        mutating func postfix() throws(RulesSyntaxError) -> RulesExpression {
            var value = try primary()
            // Each member, index or call wraps the value so far: one level deeper.
            let entered = depth
            defer { depth = entered }
            while true {
                let token = current
                if token.kind == .symbol(".") || token.kind == .symbol("[") || token.kind == .symbol("(") {
                    try enter(at: token)
                }
                if token.kind == .symbol(".") {
                    _ = next()
                    let name = try identifier("a name after '.'")
                    if case .request = value, let field = RequestField(rawValue: name) {
                        value = .requestField(field)
                    } else {
                        value = .member(value, name, line: token.line)
                    }
                } else if token.kind == .symbol("[") {
                    _ = next()
                    let key = try expression()
                    try expect("]", "to close the index")
                    value = .index(value, key, line: token.line)
                } else if token.kind == .symbol("(") {
                    _ = next()
                    var arguments: [RulesExpression] = []
                    while current.kind != .symbol(")") {
                        arguments.append(try expression())
                        if current.kind == .symbol(",") { _ = next() } else { break }
                    }
                    try expect(")", "to close the call")
                    value = .call(value, arguments, line: token.line)
                } else {
                    return value
                }
            }
        }

        mutating func primary() throws(RulesSyntaxError) -> RulesExpression {
            let token = next()
            switch token.kind {
            case .string(let value): return .literal(.string(value))
            case .integer(let value): return .literal(.integer(value))
            case .float(let value): return .literal(.float(value))
            case .identifier("true"): return .literal(.bool(true))
            case .identifier("false"): return .literal(.bool(false))
            case .identifier("null"): return .literal(.null)
            case .identifier("request"): return .request(line: token.line)
            case .identifier("resource"): return .resource
            case .identifier("timestamp"): return .literal(.namespace("timestamp"))
            case .identifier("duration"): return .literal(.namespace("duration"))
            case .identifier(let name): return .identifier(name, line: token.line)
            case .symbol("("):
                let inner = try expression()
                try expect(")", "to close the parenthesis")
                return inner
            case .symbol("["):
                var items: [RulesExpression] = []
                while current.kind != .symbol("]") {
                    items.append(try expression())
                    if current.kind == .symbol(",") { _ = next() } else { break }
                }
                try expect("]", "to close the list")
                return .list(items)
            case .symbol("{"):
                var members: [(String, RulesExpression)] = []
                while current.kind != .symbol("}") {
                    guard case .string(let key) = current.kind else { throw error("a map key is a string") }
                    _ = next()
                    try expect(":", "after the map key")
                    members.append((key, try expression()))
                    if current.kind == .symbol(",") { _ = next() } else { break }
                }
                try expect("}", "to close the map")
                return .map(members)
            default:
                throw error("expected a value, found \(describe(token))", at: token)
            }
        }
    }
}
