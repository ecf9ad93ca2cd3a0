import Foundation
import StoreshCore
import StoreshRules

/// Feeds random, deeply nested, long and mutated rules texts to the rules parser, and decides a few requests under
/// each one it accepts. Rules arrive from anyone who can reach `storesh serve` (`PUT /internal/setRules`), so what
/// must hold for any text: no crash (a stack overflow kills the process running this), every refusal positioned
/// inside the text, and every decision made in bounded time.
package struct RulesFuzzer {
    package struct Report: Sendable {
        package var inputs = 0
        package var accepted = 0
        package var rejected = 0
        package var decisions = 0
        package var slowestMicroseconds: Double = 0
        package var failures: [String] = []
    }

    /// Pieces of the rules language and the characters its lexer treats specially.
    static let vocabulary: [String] = [
        "(", ")", "[", "]", "{", "}", "!", "-", "&&", "||", "==", "!=", "<", ">=", "+", "*", "/", "%", "?", ":", ",",
        ";",
        ".", "true", "false", "null", "request", "request.auth", "request.auth.uid", "request.auth.token.admin",
        "request.resource.size", "resource.metadata", "request.time", "uid", "f()", "g(1, 2)", "'a'", "\"b\"", "1",
        "1.5",
        "'x'.matches('(a+)+b')", "[1, 2]", "{'k': 1}", "in", "timestamp.date(2020, 1, 1)", "duration.value(1, 'd')",
        "allow read: if", "allow write;", "match /{p=**} {", "match /files/{uid} {", "function f() { return true; }",
        "let x = 1;", "return", "rules_version = '2';", "\n", " ", "/*", "*/", "//", "é", "\u{0}",
    ]

    static var seeds: [String] { SampleRules.all.map(\.source) }

    var random: SplitMix64

    package init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    /// A ruleset around `condition`, so that the generated condition reaches the evaluator.
    package static func wrapping(_ condition: String, functions: String = "") -> String {
        "rules_version = '2';\nservice firebase.storage {\n\(functions)  match /b/{bucket}/o {\n    match /{path=**} {\n      allow read, write: if \(condition);\n    }\n  }\n}\n"
    }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }

    mutating func input() -> String {
        switch random.next() % 8 {
        case 0:  // deep nesting of one kind
            let depth = Int(random.next() % 400)
            let (open, close) = pick([("(", ")"), ("[", "]"), ("!", ""), ("-", ""), ("f(", ")"), ("{'k': ", "}")])
            return Self.wrapping(
                String(repeating: open, count: depth) + "true" + String(repeating: close, count: depth))
        case 1:  // long chains
            let count = Int(random.next() % 40_000)
            return Self.wrapping(
                Array(repeating: pick(["true", "1 == 1", "request.auth == null"]), count: count)
                    .joined(separator: pick([" && ", " || ", " + ", " == "])))
        case 2:  // functions calling functions
            let count = Int(random.next() % 30)
            var functions = ""
            for index in 0..<count {
                let calls = Array(repeating: "f\(index + 1)()", count: Int(random.next() % 4) + 1).joined(
                    separator: pick([" && ", " || "]))
                functions += "  function f\(index)() { return \(calls); }\n"
            }
            functions += "  function f\(count)() { return \(pick(["true", "f0()", "!true"])); }\n"
            return Self.wrapping("f0()", functions: functions)
        case 3:  // random bytes
            let count = Int(random.next() % 300)
            return String(decoding: (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }, as: UTF8.self)
        case 4:  // nested match blocks
            let depth = Int(random.next() % 60)
            return "service firebase.storage {\n" + String(repeating: "match /a {\n", count: depth) + "allow read;\n"
                + String(repeating: "}\n", count: depth) + "}\n"
        default:  // a sample or a generated condition, mutated
            var text =
                random.next() % 2 == 0
                ? pick(Self.seeds)
                : Self.wrapping((0..<Int(random.next() % 12)).map { _ in pick(Self.vocabulary) }.joined(separator: " "))
            for _ in 0..<Int(random.next() % 6) {
                var scalars = Array(text.unicodeScalars)
                let at = scalars.isEmpty ? 0 : Int(random.next() % UInt64(scalars.count))
                if random.next() % 2 == 0, !scalars.isEmpty {
                    scalars.removeSubrange(at..<min(scalars.count, at + Int(random.next() % 8) + 1))
                } else {
                    scalars.insert(contentsOf: pick(Self.vocabulary).unicodeScalars, at: at)
                }
                text = String(String.UnicodeScalarView(scalars))
            }
            return text
        }
    }

    package mutating func run(inputs count: Int) -> Report {
        var report = Report()
        let store = MemoryRulesStore()
        let requests: [AccessMethod] = [.get, .list, .create, .update, .delete]
        for _ in 0..<count {
            let text = input()
            report.inputs += 1
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            let session: RulesSession
            do {
                session = try RulesSession(store: nil)
                let start = ContinuousClock.now
                try session.loadRules(source: text, origin: "fuzz.rules", into: store)
                report.slowestMicroseconds = max(report.slowestMicroseconds, Self.microseconds(since: start))
                report.accepted += 1
            } catch let error as StorageError {
                report.rejected += 1
                // fuzz.rules:LINE:COLUMN: …, inside the text.
                let parts = error.message.split(separator: ":", maxSplits: 3)
                guard parts.count >= 3, parts[0] == "fuzz.rules", let line = Int(parts[1]), let column = Int(parts[2]),
                    line >= 1, column >= 1, line <= max(1, lines.count)
                else {
                    report.failures.append(
                        "an unpositioned refusal \(error.message.prefix(160)) of \(text.prefix(120).debugDescription)")
                    continue
                }
                continue
            } catch {
                report.failures.append("an unexpected error \(error) for \(text.prefix(120).debugDescription)")
                continue
            }
            session.identity = random.next() % 2 == 0 ? nil : Identity(uid: "ada", claims: ["admin": .bool(true)])
            let object = ObjectMetadata.newObject(
                bucket: "fuzz", name: try! ObjectName("files/ada/a.txt"), content: Data("a".utf8), generation: 1,
                now: Timestamp(microseconds: 0))
            for method in requests {
                let start = ContinuousClock.now
                _ = session.decide(
                    AccessRequest(
                        method: method, bucket: "fuzz", path: "files/ada/a.txt", time: Timestamp(microseconds: 0),
                        newResource: ObjectSnapshot(object), existingResource: ObjectSnapshot(object),
                        auth: session.identity))
                let took = Self.microseconds(since: start)
                report.slowestMicroseconds = max(report.slowestMicroseconds, took)
                report.decisions += 1
                if took > 2_000_000 {
                    report.failures.append(
                        "a decision took \(Int(took / 1000)) ms under \(text.prefix(120).debugDescription)")
                }
            }
        }
        return report
    }

    static func microseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12
    }
}

/// Rules kept in memory: where the fuzzer loads each text.
final class MemoryRulesStore: RulesStore {
    var rules: (source: String, origin: String)?
    func storedRules() throws -> (source: String, origin: String)? { rules }
    func storeRules(source: String, origin: String) throws { rules = (source, origin) }
}
