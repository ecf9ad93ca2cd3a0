import Foundation
import StoreshCore

/// A value in a rules expression.
package enum RulesValue: Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case float(Double)
    case string(String)
    case list([RulesValue])
    case map([String: RulesValue])
    /// A map of strings shared with the object it came from (`resource.metadata`): reading it copies nothing.
    case stringMap(CustomMetadata)
    case timestamp(Timestamp)
    /// Microseconds.
    case duration(Int64)
    /// An object (`resource`, `request.resource`), whose fields are read on demand; held by reference, so a
    /// value stays small and cheap to copy.
    case object(ObjectSnapshot)
    /// A namespace such as `timestamp` or `duration` whose functions can be called.
    case namespace(String)

    var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .integer: "int"
        case .float: "float"
        case .string: "string"
        case .list: "list"
        case .map, .stringMap, .object: "map"
        case .timestamp: "timestamp"
        case .duration: "duration"
        case .namespace(let name): name
        }
    }
}

/// Why an expression could not be evaluated; the allow statement then grants nothing (fail closed).
struct EvaluationError: Error {
    var message: String
    var line: Int
}

/// Evaluates a ruleset for one request. A struct made per request, so it must never be captured by a closure
/// (each capture would copy it): expressions are evaluated in loops.
struct RulesEvaluator {
    /// What one request's evaluation has spent: expressions evaluated, and how deeply evaluation has nested
    /// (function bodies within calls). Shared by reference, as the evaluator is copied into calls.
    final class Budget {
        var evaluated = 0
        var nesting = 0
    }

    let request: AccessRequest
    let budget = Budget()
    /// `request.auth` (made once per sign-in), `request.resource` and `resource`.
    let auth: RulesValue
    let newResource: RulesValue
    let existingResource: RulesValue
    static let maximumCallDepth = 20

    init(request: AccessRequest, auth: RulesValue) {
        self.request = request
        self.auth = auth
        newResource = request.newResource.map(RulesValue.object) ?? .null
        existingResource = request.existingResource.map(RulesValue.object) ?? .null
    }

    /// `request.auth` for an identity: null when signed out.
    static func authValue(_ identity: Identity?) -> RulesValue {
        identity.map { identity in
            .map(["uid": .string(identity.uid), "token": .map(identity.claims.mapValues(Self.claimValue))])
        } ?? .null
    }

    /// `request.NAME`, read without making the whole `request` map.
    func requestField(_ field: RequestField) -> RulesValue {
        switch field {
        case .auth: auth
        case .path: .string("/b/\(request.bucket)/o/\(request.path)")
        case .time: .timestamp(request.time)
        case .method: .string(request.method.rawValue)
        case .resource: newResource
        }
    }

    /// Evaluation nests at most this deep: an expression's own depth (bounded by the parser) within calls
    /// (bounded by `maximumCallDepth`), so that no ruleset can exhaust a thread's stack.
    static let maximumNesting = 256

    func evaluate(_ expression: RulesExpression, _ scope: Scope) throws(EvaluationError) -> RulesValue {
        budget.evaluated += 1
        budget.nesting += 1
        defer { budget.nesting -= 1 }
        guard budget.evaluated <= RulesLimits.maximumEvaluatedExpressions else {
            throw EvaluationError(
                message:
                    "the rules evaluated more than \(RulesLimits.maximumEvaluatedExpressions) expressions for this request (the service's limit)",
                line: expression.line ?? 0)
        }
        guard budget.nesting <= Self.maximumNesting else {
            throw EvaluationError(
                message: "evaluation nests more than \(Self.maximumNesting) levels deep", line: expression.line ?? 0)
        }
        return try evaluateCounted(expression, scope)
    }

    private func evaluateCounted(_ expression: RulesExpression, _ scope: Scope) throws(EvaluationError) -> RulesValue {
        switch expression {
        case .literal(let value): return value
        case .identifier(let name, let line):
            guard let value = scope.lookup(name) else {
                throw EvaluationError(message: "unknown name '\(name)'", line: line)
            }
            return value
        case .request: return requestValue
        case .requestField(let field): return requestField(field)
        case .resource: return existingResource
        case .list(let items): return .list(try evaluateEach(items, scope))
        case .map(let members):
            var map: [String: RulesValue] = [:]
            for (key, value) in members { map[key] = try evaluate(value, scope) }
            return .map(map)
        case .member(.request, let name, let line):
            throw EvaluationError(message: "the request has no field '\(name)'", line: line)
        case .member(let base, let name, let line):
            return try member(try evaluate(base, scope), name, line: line)
        case .index(let base, let key, let line):
            let container = try evaluate(base, scope)
            let index = try evaluate(key, scope)
            switch (container, index) {
            case (.list(let items), .integer(let position)):
                guard position >= 0, position < items.count else {
                    throw EvaluationError(message: "index \(position) is out of range", line: line)
                }
                return items[Int(position)]
            case (.map, .string(let name)), (.stringMap, .string(let name)), (.object, .string(let name)):
                return try member(container, name, line: line)
            default:
                throw EvaluationError(
                    message: "cannot index a \(container.typeName) with a \(index.typeName)", line: line)
            }
        case .call(let callee, let arguments, let line):
            let values = try evaluateEach(arguments, scope)
            switch callee {
            case .identifier(let name, _): return try scope.call(name, values, line: line, evaluator: self)
            case .member(let base, let method, _):
                return try call(try evaluate(base, scope), method, values, line: line)
            default: throw EvaluationError(message: "this is not a function", line: line)
            }
        case .unary(let symbol, let operand, let line):
            let value = try evaluate(operand, scope)
            switch (symbol, value) {
            case ("!", .bool(let flag)): return .bool(!flag)
            case ("-", .integer(let number)):
                // -Int64.min does not exist: an error (the request is denied), never a trap.
                guard number != .min else {
                    throw EvaluationError(message: "-(\(number)) overflows a 64-bit integer", line: line)
                }
                return .integer(-number)
            case ("-", .float(let number)): return .float(-number)
            default: throw EvaluationError(message: "'\(symbol)' does not apply to a \(value.typeName)", line: line)
            }
        case .conditional(let condition, let then, let otherwise):
            return try truth(try evaluate(condition, scope), line: 0)
                ? try evaluate(then, scope) : try evaluate(otherwise, scope)
        case .logical(let all, let operands, let line):
            // Left to right, stopping at the first operand that decides the chain.
            for operand in operands {
                if try truth(try evaluate(operand, scope), line: line) != all { return .bool(!all) }
            }
            return .bool(all)
        case .binary(let symbol, let leftExpression, let rightExpression, let line):
            if symbol == "&&" || symbol == "||" {
                let left = try truth(try evaluate(leftExpression, scope), line: line)
                if symbol == "&&" && !left { return .bool(false) }
                if symbol == "||" && left { return .bool(true) }
                return .bool(try truth(try evaluate(rightExpression, scope), line: line))
            }
            return try binary(
                symbol, try evaluate(leftExpression, scope), try evaluate(rightExpression, scope), line: line)
        }
    }

    func evaluateEach(_ expressions: [RulesExpression], _ scope: Scope) throws(EvaluationError) -> [RulesValue] {
        if expressions.isEmpty { return [] }
        var values: [RulesValue] = []
        values.reserveCapacity(expressions.count)
        for expression in expressions { values.append(try evaluate(expression, scope)) }
        return values
    }

    func truth(_ value: RulesValue, line: Int) throws(EvaluationError) -> Bool {
        guard case .bool(let flag) = value else {
            throw EvaluationError(message: "a condition must be a bool, not a \(value.typeName)", line: line)
        }
        return flag
    }

    func member(_ value: RulesValue, _ name: String, line: Int) throws(EvaluationError) -> RulesValue {
        switch value {
        case .map(let map):
            guard let found = map[name] else {
                throw EvaluationError(message: "the map has no key '\(name)'", line: line)
            }
            return found
        case .stringMap(let map):
            guard let found = map[name] else {
                throw EvaluationError(message: "the map has no key '\(name)'", line: line)
            }
            return .string(found)
        case .object(let snapshot):
            let object = snapshot.metadata
            switch name {
            case "name", "fullPath": return .string(object.fullPath)
            case "bucket": return .string(object.bucket)
            case "size": return .integer(object.size)
            case "contentType", "cacheControl", "contentDisposition", "contentEncoding", "contentLanguage":
                return WritableProperty(rawValue: name).flatMap { object[$0] }.map(RulesValue.string) ?? .null
            case "metadata": return .stringMap(object.customMetadata)
            case "md5Hash": return .string(object.md5Hash)
            case "generation": return .integer(object.generation)
            case "metageneration": return .integer(object.metageneration)
            case "timeCreated": return .timestamp(object.timeCreated)
            case "updated": return .timestamp(object.updated)
            default: throw EvaluationError(message: "an object has no field '\(name)'", line: line)
            }
        case .null:
            throw EvaluationError(message: "'\(name)' of null (for instance request.auth when signed out)", line: line)
        default: throw EvaluationError(message: "a \(value.typeName) has no field '\(name)'", line: line)
        }
    }

    func call(
        _ receiver: RulesValue, _ method: String, _ arguments: [RulesValue], line: Int
    ) throws(EvaluationError) -> RulesValue {
        let arity = arguments.count
        switch (receiver, method) {
        case (.string(let text), "matches") where arity == 1:
            if case .string(let pattern) = arguments[0] { return .bool(try Self.matches(text, pattern, line: line)) }
        case (.string(let text), "size") where arity == 0: return .integer(Int64(text.count))
        case (.string(let text), "lower") where arity == 0: return .string(text.lowercased())
        case (.string(let text), "upper") where arity == 0: return .string(text.uppercased())
        case (.list(let items), "size") where arity == 0: return .integer(Int64(items.count))
        case (.list(let items), "hasAny") where arity == 1:
            if case .list(let others) = arguments[0] {
                return .bool(others.contains { other in items.contains { Self.equal($0, other) } })
            }
        case (.list(let items), "hasAll") where arity == 1:
            if case .list(let others) = arguments[0] {
                return .bool(others.allSatisfy { other in items.contains { Self.equal($0, other) } })
            }
        case (.map(let map), "size") where arity == 0: return .integer(Int64(map.count))
        case (.map(let map), "keys") where arity == 0: return Self.sortedKeys(map.keys)
        case (.map(let map), "get") where arity == 2:
            if case .string(let key) = arguments[0] { return map[key] ?? arguments[1] }
        case (.stringMap(let map), "size") where arity == 0: return .integer(Int64(map.count))
        case (.stringMap(let map), "keys") where arity == 0: return Self.sortedKeys(map.keys)
        case (.stringMap(let map), "get") where arity == 2:
            if case .string(let key) = arguments[0] { return map[key].map(RulesValue.string) ?? arguments[1] }
        case (.timestamp(let time), "toMillis") where arity == 0: return .integer(time.microseconds / 1000)
        case (.namespace("timestamp"), "date") where arity == 3:
            if case .integer(let year) = arguments[0], case .integer(let month) = arguments[1],
                case .integer(let day) = arguments[2]
            {
                guard let time = Timestamp(rfc3339: String(format: "%04lld-%02lld-%02lldT00:00:00Z", year, month, day))
                else {
                    throw EvaluationError(
                        message: "timestamp.date(\(year), \(month), \(day)) is not a date", line: line)
                }
                return .timestamp(time)
            }
        case (.namespace("duration"), "value") where arity == 2:
            if case .integer(let amount) = arguments[0], case .string(let unit) = arguments[1] {
                let units: [String: Int64] = [
                    "w": 604_800_000_000, "d": 86_400_000_000, "h": 3_600_000_000, "m": 60_000_000, "s": 1_000_000,
                    "ms": 1000,
                ]
                guard let scale = units[unit] else {
                    throw EvaluationError(message: "unknown duration unit '\(unit)'", line: line)
                }
                let (microseconds, overflow) = amount.multipliedReportingOverflow(by: scale)
                guard !overflow else {
                    throw EvaluationError(message: "duration.value(\(amount), '\(unit)') is out of range", line: line)
                }
                return .duration(microseconds)
            }
        default: break
        }
        throw EvaluationError(
            message:
                "a \(receiver.typeName) has no function \(method) taking (\(arguments.map(\.typeName).joined(separator: ", ")))",
            line: line)
    }

    /// A string map as a map of the rules' values. (Its keys are bytes, and no map holds two spellings of one text,
    /// rule M5, so none is lost as a dictionary's key.)
    private static func ruleMap(_ map: CustomMetadata) -> [String: RulesValue] {
        Dictionary(map.lazy.map { ($0.key, RulesValue.string($0.value)) }, uniquingKeysWith: { first, _ in first })
    }

    /// A map's keys in byte order (the service does not promise an order; a fixed one makes `keys()[0]`
    /// reproducible), made into a list in one allocation.
    static func sortedKeys<Keys: Collection<String>>(_ keys: Keys) -> RulesValue {
        var list = keys.map(RulesValue.string)
        list.sort { left, right in
            guard case .string(let x) = left, case .string(let y) = right else { return false }
            return x.utf8.lexicographicallyPrecedes(y.utf8)
        }
        return .list(list)
    }

    /// `matches` is a whole-string regular expression match (as RE2 in the service).
    static func matches(_ text: String, _ pattern: String, line: Int) throws(EvaluationError) -> Bool {
        guard let expression = RegexCache.shared.expression(for: pattern) else {
            throw EvaluationError(message: "'\(pattern)' is not a regular expression", line: line)
        }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    static func equal(_ a: RulesValue, _ b: RulesValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.float(let x), .float(let y)): x == y
        case (.integer(let x), .float(let y)), (.float(let y), .integer(let x)): Double(x) == y
        // Strings (object names among them) are equal when their bytes are (rule P7), not when Swift's canonical
        // equivalence says so: `café` typed and `café` from a Mac's file name are two names.
        case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
        case (.timestamp(let x), .timestamp(let y)): x == y
        case (.duration(let x), .duration(let y)): x == y
        case (.list(let x), .list(let y)): x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.map(let x), .map(let y)):
            x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        case (.stringMap(let x), .stringMap(let y)): x == y
        case (.stringMap(let x), .map): equal(.map(ruleMap(x)), b)
        case (.map, .stringMap(let y)): equal(a, .map(ruleMap(y)))
        default: false
        }
    }

    func binary(
        _ symbol: String, _ left: RulesValue, _ right: RulesValue, line: Int
    ) throws(EvaluationError) -> RulesValue {
        switch symbol {
        case "==": return .bool(Self.equal(left, right))
        case "!=": return .bool(!Self.equal(left, right))
        case "in":
            switch right {
            case .list(let items): return .bool(items.contains { Self.equal($0, left) })
            case .map(let map):
                guard case .string(let key) = left else {
                    throw EvaluationError(message: "map keys are strings", line: line)
                }
                return .bool(map[key] != nil)
            case .stringMap(let map):
                guard case .string(let key) = left else {
                    throw EvaluationError(message: "map keys are strings", line: line)
                }
                return .bool(map[key] != nil)
            default: throw EvaluationError(message: "'in' needs a list or a map, not a \(right.typeName)", line: line)
            }
        case "<", "<=", ">", ">=":
            let order: Int
            switch (left, right) {
            case (.integer(let x), .integer(let y)): order = x < y ? -1 : x == y ? 0 : 1
            case (.integer, .float), (.float, .integer), (.float, .float):
                let (x, y) = (Self.number(left), Self.number(right))
                order = x < y ? -1 : x == y ? 0 : 1
            case (.string(let x), .string(let y)):
                order = x.utf8.lexicographicallyPrecedes(y.utf8) ? -1 : x.utf8.elementsEqual(y.utf8) ? 0 : 1
            case (.timestamp(let x), .timestamp(let y)): order = x < y ? -1 : x == y ? 0 : 1
            case (.duration(let x), .duration(let y)): order = x < y ? -1 : x == y ? 0 : 1
            default:
                throw EvaluationError(message: "cannot compare a \(left.typeName) with a \(right.typeName)", line: line)
            }
            switch symbol {
            case "<": return .bool(order < 0)
            case "<=": return .bool(order <= 0)
            case ">": return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        default:
            switch (symbol, left, right) {
            case ("+", .string(let x), .string(let y)): return .string(x + y)
            case ("+", .list(let x), .list(let y)): return .list(x + y)
            // Times and durations may come from a request (a claim, an upload's size): out of range is an error (the
            // request is denied), never a trap.
            case ("+", .timestamp(let t), .duration(let d)), ("+", .duration(let d), .timestamp(let t)):
                return .timestamp(
                    Timestamp(microseconds: try Self.inRange(t.microseconds.addingReportingOverflow(d), line: line)))
            case ("-", .timestamp(let t), .duration(let d)):
                return .timestamp(
                    Timestamp(
                        microseconds: try Self.inRange(t.microseconds.subtractingReportingOverflow(d), line: line)))
            case ("-", .timestamp(let x), .timestamp(let y)):
                return .duration(
                    try Self.inRange(x.microseconds.subtractingReportingOverflow(y.microseconds), line: line))
            case (_, .integer(let x), .integer(let y)):
                switch symbol {
                case "+": return .integer(x &+ y)
                case "-": return .integer(x &- y)
                case "*": return .integer(x &* y)
                case "/", "%":
                    guard y != 0 else { throw EvaluationError(message: "division by zero", line: line) }
                    let (result, overflow) =
                        symbol == "/" ? x.dividedReportingOverflow(by: y) : x.remainderReportingOverflow(dividingBy: y)
                    guard !overflow else {
                        throw EvaluationError(message: "\(x) \(symbol) \(y) overflows a 64-bit integer", line: line)
                    }
                    return .integer(result)
                default: break
                }
            case (_, .integer, .float), (_, .float, .integer), (_, .float, .float):
                let (x, y) = (Self.number(left), Self.number(right))
                switch symbol {
                case "+": return .float(x + y)
                case "-": return .float(x - y)
                case "*": return .float(x * y)
                case "/": return .float(x / y)
                default: break
                }
            default: break
            }
            throw EvaluationError(
                message: "'\(symbol)' does not apply to a \(left.typeName) and a \(right.typeName)", line: line)
        }
    }

    /// The result of an arithmetic that reports overflow, or an evaluation error when it overflowed.
    static func inRange(_ result: (partialValue: Int64, overflow: Bool), line: Int) throws(EvaluationError) -> Int64 {
        guard !result.overflow else { throw EvaluationError(message: "a time or duration out of range", line: line) }
        return result.partialValue
    }

    static func number(_ value: RulesValue) -> Double {
        switch value {
        case .integer(let x): Double(x)
        case .float(let x): x
        default: .nan
        }
    }

    /// The `request` variable (rule R4), when a rule uses it whole.
    var requestValue: RulesValue {
        .map(Dictionary(uniqueKeysWithValues: RequestField.allCases.map { ($0.rawValue, requestField($0)) }))
    }

    /// A claim as the rules read it, with the type its token gave it.
    static func claimValue(_ claim: ClaimValue) -> RulesValue {
        switch claim {
        case .string(let text): .string(text)
        case .bool(let flag): .bool(flag)
        case .integer(let number): .integer(number)
        case .float(let number): .float(number)
        }
    }
}

/// A few named values (path variables, parameters, lets). The first four are held in fields, names apart from
/// values, so that binding a request's path variables allocates nothing and a lookup compares names without
/// copying values; a later binding of a name hides an earlier one.
struct Variables {
    private var name0, name1, name2, name3: String?
    private var value0 = RulesValue.null, value1 = RulesValue.null, value2 = RulesValue.null, value3 = RulesValue.null
    private var more: [(name: String, value: RulesValue)] = []

    func get(_ name: String) -> RulesValue? {
        if !more.isEmpty, let found = more.last(where: { $0.name == name }) { return found.value }
        if name3 == name { return value3 }
        if name2 == name { return value2 }
        if name1 == name { return value1 }
        if name0 == name { return value0 }
        return nil
    }

    mutating func set(_ name: String, _ value: RulesValue) {
        if name0 == nil {
            (name0, value0) = (name, value)
        } else if name1 == nil {
            (name1, value1) = (name, value)
        } else if name2 == nil {
            (name2, value2) = (name, value)
        } else if name3 == nil {
            (name3, value3) = (name, value)
        } else {
            more.append((name, value))
        }
    }
}

/// Names in scope: path variables, function parameters and lets, and functions (`request` and `resource` are
/// resolved by the parser).
struct Scope {
    var variables: Variables
    var functions: [RulesFunction]
    var depth = 0
    /// Inside a function, the caller's scope, whose names (its path variables) stay visible. Read through a
    /// pointer that is valid while the call runs, so a call copies none of them.
    var caller: UnsafePointer<Scope>?

    func lookup(_ name: String) -> RulesValue? {
        if let value = variables.get(name) { return value }
        return caller?.pointee.lookup(name)
    }

    func call(
        _ name: String, _ arguments: [RulesValue], line: Int, evaluator: RulesEvaluator
    ) throws(EvaluationError) -> RulesValue {
        guard let function = functions.last(where: { $0.name == name }) else {
            throw EvaluationError(message: "unknown function '\(name)'", line: line)
        }
        guard function.parameters.count == arguments.count else {
            throw EvaluationError(
                message: "\(name) takes \(function.parameters.count) arguments, not \(arguments.count)", line: line)
        }
        guard depth < RulesEvaluator.maximumCallDepth else {
            throw EvaluationError(
                message: "functions call each other more than \(RulesEvaluator.maximumCallDepth) deep", line: line)
        }
        return try withUnsafePointer(to: self) { (caller) throws(EvaluationError) -> RulesValue in
            var inner = Scope(variables: Variables(), functions: functions, depth: depth + 1, caller: caller)
            for (parameter, argument) in zip(function.parameters, arguments) {
                inner.variables.set(parameter, argument)
            }
            for binding in function.bindings {
                inner.variables.set(binding.name, try evaluator.evaluate(binding.value, inner))
            }
            return try evaluator.evaluate(function.body, inner)
        }
    }
}

/// Compiled patterns of `matches()`: a bulk edit asks the same rule for every object.
final class RegexCache: @unchecked Sendable {
    static let shared = RegexCache()
    private let lock = NSLock()
    private var compiled: [String: NSRegularExpression?] = [:]

    func expression(for pattern: String) -> NSRegularExpression? {
        lock.withLock {
            if let known = compiled[pattern] { return known }
            let expression = try? NSRegularExpression(pattern: "^(?:" + pattern + ")$")
            if compiled.count < 256 { compiled[pattern] = expression }
            return expression
        }
    }
}
