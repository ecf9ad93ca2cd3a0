import Foundation
import StoreshCore
import StoreshLanguage

/// Feeds random and mutated scripts to the lexer and parser, and some of the accepted ones to the
/// interpreter on a scratch bucket in a dry run. It checks what must hold for any input: no crash, no hang,
/// every rejected input has an error positioned inside the script, and a dry run changes nothing.
package struct ScriptFuzzer {
    package struct Report: Sendable {
        package var inputs = 0
        package var accepted = 0
        package var rejected = 0
        package var interpreted = 0
        package var slowestParseMicroseconds: Double = 0
        package var failures: [String] = []
    }

    /// Words the generator draws from: every command's words, aliases and options (from the command table, so a
    /// new command is fuzzed as soon as it is declared), keys, and the characters the lexer treats specially.
    static let vocabulary: [String] = {
        var words: [String] = []
        for declaration in CommandCatalog.commands {
            for word in declaration.name.split(separator: " ").map(String.init) + declaration.aliases
                + declaration.options
            where !words.contains(word) {
                words.append(word)
            }
        }
        return words + [
            "--", "contentType=x", "cacheControl=no-cache", "custom.k=v", "custom", "custom.", "custom.j", "size=1",
            "contentTyp", "contentType=image/*", "'custom.k exists'", "a", "a/b", "a//b", "/", "..", ".", "gs://fuzz/a",
            "gs://other/", "*", "**", "?", "[a-z]", "[!", "]", "'", "\"", "\\", ";", "#", "=", " ", "\t", "\n", "\r\n",
            "0",
            "1000", "1001", "-1", "é", "\u{301}", "\u{0}", "\u{1B}[31m", "🙂", "AQh0", "x*y", "'a b'", "\"c\\\"d\"",
            "\"\\q\"", "open", "owner-only", "before", String(repeating: "z", count: 1100),
        ]
    }()

    static let seeds: [String] = [
        "cd images\nls -n 2\npage next\nmeta get forest.jpg\n",
        "meta set cacheControl=\"public, max-age=60\" custom.location='Yosemite, CA, USA' -- images/**.jpg\n",
        "meta unset custom.batch contentLanguage -- files/uid/*\nrm 'a*b' c[0-9]?\n",
        "put --raw --content-type text/plain --md5 XUFAKrxLKna5cZ2REBfFkg== --data hello wrongPrefix//sadItem\n",
        "echo a \\\n  b # comment; not a command\nls --all; ls --token AAAA -l /\n",
    ]

    var random: SplitMix64
    let interpret: (String) async -> String?

    /// `interpret` runs an accepted script (in a dry run) and returns a failed invariant, or nil.
    package init(seed: UInt64, interpret: @escaping (String) async -> String?) {
        self.random = SplitMix64(seed: seed)
        self.interpret = interpret
    }

    package mutating func run(inputs count: Int, interpretEvery: Int) async -> Report {
        var report = Report()
        var corpus = Self.seeds
        for index in 0..<count {
            let bytes = nextInput(corpus: corpus)
            report.inputs += 1
            let start = DispatchTime.now().uptimeNanoseconds
            let outcome = Self.check(bytes)
            let micros = Double(DispatchTime.now().uptimeNanoseconds - start) / 1000
            report.slowestParseMicroseconds = max(report.slowestParseMicroseconds, micros)
            if micros > 1_000_000 {
                report.failures.append("parsing took \(Int(micros / 1000)) ms: \(Self.shown(bytes))")
            }
            switch outcome {
            case .accepted(let text):
                report.accepted += 1
                if corpus.count < 200 && random.next() % 50 == 0 { corpus.append(text) }
                if interpretEvery > 0 && index % interpretEvery == 0 {
                    report.interpreted += 1
                    if let failure = await interpret(text) {
                        report.failures.append("\(failure): \(Self.shown(bytes))")
                    }
                }
            case .rejected:
                report.rejected += 1
            case .broken(let why):
                report.failures.append("\(why): \(Self.shown(bytes))")
            }
            if report.failures.count >= 10 { break }
        }
        return report
    }

    enum Outcome {
        case accepted(String)
        case rejected
        case broken(String)
    }

    /// Parses one input and checks the invariants of rejection: a syntax error inside the script.
    static func check(_ bytes: [UInt8]) -> Outcome {
        let source: SourceText
        do {
            source = try SourceText(name: "fuzz", bytes: bytes)
        } catch {
            let lines = String(decoding: bytes, as: UTF8.self).unicodeScalars.split(
                separator: "\n", omittingEmptySubsequences: false)
            return position(error, lines: lines.map { Substring($0) })
        }
        do {
            _ = try Parser.parse(source)
            return .accepted(source.text)
        } catch {
            return position(error, lines: source.lines)
        }
    }

    static func position(_ error: Diagnostic, lines: [Substring]) -> Outcome {
        guard error.phase == .beforeRunning, !error.message.isEmpty else {
            return .broken("an error without a message")
        }
        let line = error.location.line
        guard line >= 1, line <= lines.count else { return .broken("error on line \(line) of \(lines.count)") }
        let width = lines[line - 1].unicodeScalars.count
        guard error.location.column >= 1, error.location.column <= width + 2 else {
            return .broken("error at column \(error.location.column) of a line of \(width)")
        }
        return .rejected
    }

    mutating func nextInput(corpus: [String]) -> [UInt8] {
        if random.next() % 2 == 0 { return Array(generated().utf8) }
        var bytes = Array(corpus[Int(random.next() % UInt64(corpus.count))].utf8)
        for _ in 0...(random.next() % 4) { mutate(&bytes, corpus: corpus) }
        return bytes
    }

    /// A script of random words from the vocabulary.
    mutating func generated() -> String {
        var text = ""
        for _ in 0..<(1 + random.next() % 12) {
            text += Self.vocabulary[Int(random.next() % UInt64(Self.vocabulary.count))]
            if random.next() % 3 != 0 { text += " " }
        }
        return text
    }

    mutating func mutate(_ bytes: inout [UInt8], corpus: [String]) {
        let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
        switch random.next() % 6 {
        case 0 where !bytes.isEmpty: bytes[position] ^= UInt8(truncatingIfNeeded: 1 << (random.next() % 8))
        case 1: bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
        case 2 where !bytes.isEmpty: bytes.remove(at: position)
        case 3:
            bytes.insert(
                contentsOf: Self.vocabulary[Int(random.next() % UInt64(Self.vocabulary.count))].utf8, at: position)
        case 4:
            let other = Array(corpus[Int(random.next() % UInt64(corpus.count))].utf8)
            let cut = other.isEmpty ? 0 : Int(random.next() % UInt64(other.count))
            bytes = Array(bytes.prefix(position)) + other.suffix(from: cut)
        default:
            if !bytes.isEmpty {
                let end = min(bytes.count, position + Int(random.next() % 16))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
    }

    /// The input as a Swift string literal, cut to 300 characters for the report.
    static func shown(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        return text.count > 300 ? text.prefix(300) + "… (\(bytes.count) bytes)" : text
    }
}

/// A small, fast, seedable generator, so that a failing run can be repeated with its seed.
package struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
