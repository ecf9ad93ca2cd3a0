import ArgumentParser
import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshExecution
import StoreshLanguage
import StoreshLocal

/// A journal file (rule X4): created whole with the plan (and made durable) before the first change is sent;
/// then one line per change as it lands, each written in one `write(2)` so that a kill -9 loses at most the
/// line being written; made durable again when the run ends.
final class JournalFile: ApplyJournal, @unchecked Sendable {
    let location: String
    private let descriptor: Int32
    private let lock = NSLock()

    /// A new journal holding the plan, written a batch of changes at a time.
    init(creating path: String, bucket: String, source: String, plan: PlanStore, clock: any StorageClock) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(.invalidArgument, "Cannot create the journal \(path): \(String(cString: strerror(errno))).")
        }
        location = path
        try Self.writePlan(bucket: bucket, source: source, plan: plan, clock: clock) { try append($0) }
        try sync()
    }

    /// A journal's first lines: the header and every change of the plan, handed to `write` about 1 MiB at a time.
    /// A plan kept by a dry run (`--plan FILE`) is these lines alone: a journal of a run not started yet.
    static func writePlan(
        bucket: String, source: String, plan: PlanStore, clock: any StorageClock, _ write: (String) throws -> Void
    ) throws {
        var text = JournalRecord.header(bucket: bucket, source: source, changes: plan.count, created: clock.now()) + "\n"
        try plan.forEachChange { index, change in
            text += JournalRecord.change(index, change) + "\n"
            if text.utf8.count >= 1 << 20 {
                try write(text)
                text = ""
            }
        }
        try write(text)
    }

    /// Keeps a dry run's plan in `path` (replacing what was there only once the whole plan is written).
    static func keepPlan(_ plan: PlanStore, at path: String, bucket: String, source: String, clock: any StorageClock) throws {
        try writeFileAtomically(path) { output in
            try writePlan(bucket: bucket, source: source, plan: plan, clock: clock) { try output.write($0) }
        }
    }

    /// An existing journal, to go on with (a resumed run).
    init(appendingTo path: String) throws {
        descriptor = Foundation.open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError(.invalidArgument, "Cannot write to the journal \(path): \(String(cString: strerror(errno))).")
        }
        location = path
    }

    deinit { close(descriptor) }

    func applied(_ index: Int, result: ObjectMetadata?, planned: ObjectMetadata?, found: Bool) throws {
        try append(JournalRecord.applied(index, result: result, planned: planned, found: found) + "\n")
    }

    func failed(_ index: Int, _ error: StorageError) throws {
        try append(JournalRecord.failed(index, error) + "\n")
    }

    func ended(_ outcome: ApplyOutcome) throws {
        try append(JournalRecord.ended(outcome) + "\n")
        try sync()
    }

    private func append(_ text: String) throws {
        let bytes = Array(text.utf8)
        try lock.withLock {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == bytes.count else {
                throw StorageError(.unknown, "Cannot write the journal \(location): \(String(cString: strerror(errno))).")
            }
        }
    }

    private func sync() throws {
        guard fsync(descriptor) == 0 else {
            throw StorageError(.unknown, "Cannot make the journal \(location) durable: \(String(cString: strerror(errno))).")
        }
    }

    /// Where a run's journal goes without `--journal`: `$XDG_STATE_HOME/storesh/journals` (falling back to
    /// `~/.local/state/storesh/journals`), named by the time and the bucket.
    static func defaultPath(bucket: String, environment: Environment = Environment()) -> String {
        let state: String
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") {
            state = xdg + "/storesh"
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            state = home + "/.local/state/storesh"
        }
        let stamp = Timestamp(date: Date()).rfc3339.replacingOccurrences(of: ":", with: "")
        let safeBucket = String(bucket.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        return "\(state)/journals/\(stamp)-\(safeBucket)-\(getpid()).journal"
    }
}

/// How many changes go at once and where the journal goes: the options of every run that may change a real
/// bucket (rules X2, X4).
struct ApplyOptions: ParsableArguments, ApplyArguments {
    @Option(
        help: ArgumentHelp(
            "On a real bucket: how many changes are sent at once (default \(ApplySettings.defaultParallel)).", valueName: "n"))
    var parallel: Int?

    @Option(
        help: ArgumentHelp(
            "On a real bucket: where to write the journal of applied changes (default: a new file under $XDG_STATE_HOME/storesh/journals).",
            valueName: "file"))
    var journal: String?

    func validate() throws { try Self.check(parallel: parallel) }

    static func check(parallel: Int?) throws {
        if let parallel, !(1...256).contains(parallel) { throw ValidationError("--parallel must be 1…256, not \(parallel).") }
    }
}

/// The values of `--parallel` and `--journal`, however they were read: by argument-parser (`ApplyOptions`) or by
/// the everyday root parse (`ApplyArgumentValues`); and how they configure an interpreter.
protocol ApplyArguments {
    var parallel: Int? { get }
    var journal: String? { get }
}

/// `--parallel` and `--journal` as plain values.
struct ApplyArgumentValues: ApplyArguments, Equatable {
    var parallel: Int?
    var journal: String?
}

extension ApplyArguments {
    /// The interpreter's apply settings: a journal file, and a progress line on a terminal (never with --json).
    func configure(_ interpreter: Session, source: String, json: Bool) {
        interpreter.options.parallel = parallel ?? ApplySettings.defaultParallel
        let bucket = interpreter.bucket
        let journal = self.journal
        interpreter.applySettings.openJournal = { plan in
            try JournalFile(
                creating: journal ?? JournalFile.defaultPath(bucket: bucket.name), bucket: bucket.url,
                source: source, plan: plan, clock: SystemClock())
        }
        if !json && isatty(STDERR_FILENO) != 0 {
            let line = ProgressLine()
            interpreter.applySettings.progress = { line.show($0) }
            interpreter.applySettings.progressEnded = { line.clear() }
        }
    }
}

/// The progress line of apply on a terminal: done/total, rate and time left, redrawn at most ten times a second.
final class ProgressLine: @unchecked Sendable {
    private let lock = NSLock()
    private var lastDrawn: ContinuousClock.Instant?
    private var drawn = false

    func show(_ progress: ApplyProgress) {
        let now = ContinuousClock.now
        let text: String? = lock.withLock {
            if let lastDrawn, now - lastDrawn < .milliseconds(100), progress.done < progress.total { return nil }
            lastDrawn = now
            drawn = true
            let seconds = max(0.001, Double((now - progress.started).components.seconds) + Double((now - progress.started).components.attoseconds) / 1e18)
            let rate = Double(progress.done) / seconds
            let left = rate > 0 ? Int((Double(progress.total - progress.done) / rate).rounded(.up)) : nil
            var text = "applying \(progress.done)/\(progress.total) · \(Int(rate.rounded()))/s"
            if let left { text += " · \(left) s left" }
            if progress.failed > 0 { text += " · \(progress.failed) failed" }
            return text
        }
        guard let text else { return }
        Diagnostics.progress(text)
    }

    func clear() {
        guard lock.withLock({ drawn }) else { return }
        Diagnostics.progress(nil)
    }
}

/// `storesh undo JOURNAL`: puts back the old values of what a run applied (rule X4).
struct Undo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "undo",
        abstract: "Put back what a run on a real bucket applied, from its journal (--dry-run shows the plan first).",
        discussion: """
            Each object the run changed gets its metadata from before the run, guarded by the state the run left \
            it in: an object changed since is reported (precondition-failed) and not touched. An object the run \
            created is deleted. Content the run replaced or deleted cannot be put back (the journal keeps metadata, \
            not content): those objects are listed. The undo is journaled too.
            """)

    @OptionGroup var outputOptions: OutputOptions
    @OptionGroup var applyOptions: ApplyOptions

    @Argument(help: ArgumentHelp("The journal of the run to undo.", valueName: "journal"))
    var file: String

    /// `--dry-run`: print the plan of the undo and change nothing (the root command's group, see Copy).
    @OptionGroup var planOptions: PlanOptions
    var dryRun: Bool { planOptions.dryRun }

    /// `--keep-going`: go on past a change that fails (exit 1 if any failed); the root command's group too.
    var keepGoing: Bool { planOptions.keepGoing }

    /// `--quiet` (the same option group as the other commands', so that the flag reaches this command wherever it
    /// is written); `--bucket` is refused: the journal names its bucket.
    @OptionGroup(visibility: .hidden) var bucketOptions: BucketOptions
    var quiet: Bool { bucketOptions.quiet }

    func run() async throws {
        try planOptions.refusePlan("undo")
        let journal = try readJournal(file)
        if let given = bucketOptions.bucket, given != journal.bucket {
            throw CommandLineError("\(file) is a journal of \(journal.bucket), not \(given); undo works on the bucket its journal names.")
        }
        let (changes, impossible) = try JournalRecord.undo(journal)
        let interpreter = try await journalSession(journal, json: outputOptions.json, quiet: quiet, dryRun: dryRun, keepGoing: keepGoing)
        for (object, reason) in impossible.first {
            interpreter.output.notice("cannot undo the change to \(object): \(reason)")
        }
        if impossible.count > impossible.first.count {
            interpreter.output.notice("… and \(MessageText.counted(impossible.count - impossible.first.count, "more change")) that cannot be undone, for the same reason")
        }
        guard changes.count > 0 else {
            interpreter.output.notice("nothing to undo: \(file) records no applied change that can be put back")
            throw ExitCode(impossible.isEmpty ? 0 : 1)
        }
        if dryRun {
            try interpreter.showPlan(changes)
            interpreter.output.notice("dry run: nothing was changed")
            throw ExitCode(0)
        }
        applyOptions.configure(interpreter, source: "undo \(file)", json: outputOptions.json)
        let status = await interpreter.apply(changes)
        throw ExitCode(impossible.isEmpty ? status.rawValue : max(status.rawValue, 1))
    }
}

/// A session on the bucket a journal names, for resuming or undoing its run.
func journalSession(_ journal: JournalRecord.Contents, json: Bool, quiet: Bool, dryRun: Bool, keepGoing: Bool) async throws -> Session {
    storesh_install_interrupt_handler()
    let location = try BucketLocation.parse(journal.bucket, source: "the journal's bucket")
    let bucket = OpenBuckets.shared.keep(try await location.openRemote(quiet: quiet || json))
    var options = RunOptions(json: json, dryRun: dryRun, keepGoing: keepGoing)
    options.atPrompt = false
    let interpreter = Session(
        bucket: bucket, output: ConsoleOutput(json: json, source: SourceText(name: journal.source, text: "")), files: HostFiles(),
        options: options)
    interpreter.isCancelled = { storesh_interrupt_pending() != 0 }
    return interpreter
}

extension Run {
    /// `run --resume JOURNAL`: the journal's plan, less what it records as applied, sent to its bucket; a change
    /// that landed unrecorded (the run was killed in between) is found by its planned state and not sent again.
    func resumeRun(_ path: String) async throws -> Int32 {
        let journal = try readJournal(path) { origin throws(StorageError) in try FileContentSource(path: origin) }
        if let given = bucketOptions.bucket, given != journal.bucket {
            throw CommandLineError("\(path) is a journal of \(journal.bucket), not \(given); resume it without --bucket.")
        }
        if journal.end == ApplyOutcome.End.complete.rawValue {
            Diagnostics.notice("\(path): every change was applied already; nothing to resume")
            return 0
        }
        let interpreter = try await journalSession(
            journal, json: outputOptions.json, quiet: bucketOptions.quiet, dryRun: false, keepGoing: planOptions.keepGoing)
        applyOptions.configure(interpreter, source: path, json: outputOptions.json)
        let status = await interpreter.apply(journal.plan, journal: try JournalFile(appendingTo: path))
        return status.rawValue
    }
}

/// Reads a journal a line at a time (a journal of millions of changes is gigabytes) into a plan store.
func readJournal(_ path: String, reopen: ((String) throws(StorageError) -> any ContentSource)? = nil) throws -> JournalRecord.Contents {
    // A regular file, or standard input when asked for by `-`: a FIFO with no writer or a device such as /dev/zero
    // is refused, not waited on or read without end.
    let descriptor: Int32
    if path == "-" {
        descriptor = STDIN_FILENO
    } else {
        do {
            descriptor = try RegularFile.open(path, what: "a plan or journal")
        } catch {
            throw CommandLineError(error.message)
        }
    }
    defer { if path != "-" { close(descriptor) } }
    var lines = BoundedLines(descriptor: descriptor, source: path, maximumLineBytes: maximumJournalLineBytes)
    return try JournalRecord.read(source: path, nextLine: { try lines.next() }, reopen: reopen)
}

/// The longest line of a plan or journal storesh reads: a line is one change with its values (kilobytes; a rules
/// text, at most 256 KB), so a longer one is not a plan's.
let maximumJournalLineBytes = 4 << 20

/// The lines of a file a piece at a time, each at most `maximumLineBytes`: a file of any length in bounded memory,
/// and a file that is not made of lines (`/dev/zero` behind a link, a gigabyte without a newline) a clear error.
struct BoundedLines {
    let descriptor: Int32
    let source: String
    let maximumLineBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline resumes: the bytes before it hold none.
    private var searched = 0
    private var atEnd = false
    private var lineNumber = 0

    init(descriptor: Int32, source: String, maximumLineBytes: Int) {
        self.descriptor = descriptor
        self.source = source
        self.maximumLineBytes = maximumLineBytes
    }

    /// The next line without its newline, and whether a newline ended it; nil at the end.
    mutating func next() throws -> (line: [UInt8], ended: Bool)? {
        lineNumber += 1
        while true {
            if let newline = buffer[max(start, searched)...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                searched = start
                return (line, true)
            }
            searched = buffer.count
            guard buffer.count - start <= maximumLineBytes else {
                throw CommandLineError(
                    "\(source): line \(lineNumber) is longer than \(MessageText.byteCount(Int64(maximumLineBytes))); this is not a plan or journal storesh wrote.")
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                return (line, false)
            }
            if start > 0 {
                buffer.removeFirst(start)
                searched -= start
                start = 0
            }
            var piece = [UInt8](repeating: 0, count: 64 << 10)
            let count = piece.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw CommandLineError("Cannot read \(source): \(String(cString: strerror(errno))).")
            }
            if count == 0 { atEnd = true } else { buffer += piece[0..<count] }
        }
    }
}
