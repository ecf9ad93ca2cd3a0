import ArgumentParser
import Foundation
import StoreshExecution
import StoreshLanguage

// The command line's option groups, as argument-parser declares them. Each subcommand declares the groups it
// takes; what they read becomes one `RunContext`, the values every part of a run works from. (The everyday root
// parse, `EverydayInvocation`, reads the root's options into the same `RunContext` without argument-parser.)

/// `--bucket`, `--clock`, `--quiet` and `--trace`.
struct BucketOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The bucket: a local bucket file, gs://NAME (Google Cloud Storage, Firebase) or s3://NAME (S3-compatible) (default: $STORESH_BUCKET, else the default bucket).",
            valueName: "location"))
    var bucket: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Start the clock at this RFC 3339 time and advance 1 ms per change (default: $STORESH_CLOCK, else real time).",
            valueName: "rfc3339"))
    var clock: String?

    @Flag(
        name: .long,
        help: "Do not say which bucket is used when --bucket does not name it (storesh serve: and log no requests).")
    var quiet = false

    @Flag(
        name: .long,
        help:
            "On a real bucket, print each request sent on standard error: method, URL, status, time (credentials and tokens left out; also $STORESH_TRACE=1)."
    )
    var trace = false
}

/// `--json`, which every command that prints takes.
struct OutputOptions: ParsableArguments {
    @Flag(name: .long, help: "Print each result as one JSON document per line (NDJSON), and errors as JSON.")
    var json = false
}

/// How many changes go at once and where the journal goes: the options of every run that may change a real
/// bucket (rules X2, X4).
struct ApplyOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "On a real bucket: how many changes are sent at once (default \(ApplySettings.defaultParallel)).",
            valueName: "n"))
    var parallel: Int?

    @Option(
        help: ArgumentHelp(
            "On a real bucket: the most writes a second (default: what the service documents, 1000 for gs:// doubling every 20 minutes, 3500 for s3://; slower when it pushes back).",
            valueName: "n"))
    var rate: Int?

    @Option(
        help: ArgumentHelp(
            "On gs://: the most changes sent in one batch request (default \(ApplySettings.defaultBatchSize), the service's most; 1 sends each alone).",
            valueName: "n"))
    var batch: Int?

    @Option(
        help: ArgumentHelp(
            "On a real bucket: where to write the journal of applied changes (default: a new file under $XDG_STATE_HOME/storesh/journals).",
            valueName: "file"))
    var journal: String?

    func validate() throws { try Self.check(parallel: parallel, rate: rate, batch: batch) }

    static func check(parallel: Int?, rate: Int?, batch: Int?) throws {
        if let batch, !(1...ApplySettings.defaultBatchSize).contains(batch) {
            throw ValidationError("--batch must be 1…\(ApplySettings.defaultBatchSize) changes, not \(batch).")
        }
        if let parallel, !(1...256).contains(parallel) {
            throw ValidationError("--parallel must be 1…256, not \(parallel).")
        }
        if let rate, !(1...1_000_000).contains(rate) {
            throw ValidationError("--rate must be 1…1000000 writes a second, not \(rate).")
        }
    }
}

/// `--dry-run`, `--summary`, `--keep-going` and `--plan`, for a script however it is given (`-c`, standard input,
/// `run FILE`), for the prompt, and for the subcommands that change a bucket. One group that the root command and
/// the subcommands all declare, so that a flag written before or after the subcommand's name reaches it.
struct PlanOptions: ParsableArguments {
    @Flag(help: "Run without saving anything, and print the plan: each object, each property old → new.")
    var dryRun = false

    @Flag(help: "A bulk change prints its summary by change (property: old → new: N objects), not each object.")
    var summary = false

    @Flag(help: "Report each failing command and keep the changes of those that succeeded (exit 1 if any failed).")
    var keepGoing = false

    @Option(
        help: ArgumentHelp(
            "With --dry-run: keep the plan in this file, to review and apply later as it is (storesh apply FILE); an object changed meanwhile is refused.",
            valueName: "file"))
    var plan: String?

    func validate() throws { try Self.check(plan: plan, dryRun: dryRun) }

    /// What the declaration cannot say: `--plan` needs `--dry-run`, and a file name.
    static func check(plan: String?, dryRun: Bool) throws {
        if plan != nil && !dryRun {
            throw ValidationError(
                "--plan keeps the plan of a dry run: add --dry-run (storesh --dry-run --plan FILE -c '…'), then storesh apply FILE."
            )
        }
        if plan?.isEmpty == true { throw ValidationError("--plan needs a file name.") }
    }
}

/// The process's arguments, read from the system once: as Swift strings, and as the bytes the system gave (Swift's
/// strings replace invalid UTF-8 with U+FFFD).
struct ProcessArguments {
    static let current = ProcessArguments()

    /// The arguments after the program's name.
    let words: [String]
    /// The same arguments as bytes.
    let bytes: [[UInt8]]

    private init() {
        bytes = (1..<Int(CommandLine.argc)).map { index in
            CommandLine.unsafeArgv[index].map {
                Array(UnsafeBufferPointer(start: $0, count: strlen($0))).map { UInt8(bitPattern: $0) }
            } ?? []
        }
        words = bytes.map { String(decoding: $0, as: UTF8.self) }
    }

    /// The words before `--`: the options and arguments, not a script's own words.
    var options: ArraySlice<String> { words.prefix { $0 != "--" } }

    /// Whether the run asked for JSON: its errors, even a usage error argument-parser found, are then JSON too.
    var asksForJSON: Bool { options.contains("--json") }

    /// How many times `option` is given (`-c TEXT` or `-cTEXT`), its values not counted, before `--`.
    func occurrences(ofOption option: String) -> Int {
        let flag = Array(option.utf8)
        var count = 0
        var index = 0
        while index < bytes.count, bytes[index] != Array("--".utf8) {
            if bytes[index] == flag {
                count += 1
                index += 1
            } else if bytes[index].starts(with: flag) {
                count += 1
            }
            index += 1
        }
        return count
    }

    /// The bytes of the argument after `option` (`-c TEXT`) or joined to it (`-cTEXT`), as the system gave them;
    /// nil when the option is not there.
    func rawValue(ofOption option: String) -> [UInt8]? {
        let flag = Array(option.utf8)
        for (index, argument) in bytes.enumerated() {
            if argument == Array("--".utf8) { return nil }
            if argument == flag { return index + 1 < bytes.count ? bytes[index + 1] : nil }
            if argument.starts(with: flag) && argument.count > flag.count {
                return Array(argument.dropFirst(flag.count))
            }
        }
        return nil
    }
}
