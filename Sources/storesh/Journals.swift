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
        descriptor = try Self.create(path)
        location = path
        try Self.writePlan(bucket: bucket, source: source, plan: plan, clock: clock) { try append($0) }
        try sync()
    }

    /// A new journal that starts as the bytes of a kept plan (`--dry-run --plan FILE` keeps a journal of a run not
    /// started): the plan was written once, by the dry run, and is copied a piece at a time, not written again from
    /// the plan read back. Its header is the plan's (the script that planned it, and when). `read` is the plan file
    /// as it was when it was read; a file changed since, or while it is copied, is refused, so the journal holds the
    /// plan that is applied.
    init(copying planPath: String, read: FileIdentity, creating path: String) throws {
        let source: Int32
        do {
            source = try RegularFile.open(planPath, what: "a plan")
        } catch {
            throw UsageError(error.message)
        }
        defer { close(source) }
        let changed = StorageError(
            .invalidArgument,
            "\(planPath) changed while it was being applied; nothing was applied. Review it, then apply it again.")
        guard FileIdentity(descriptor: source) == read else { throw changed }
        descriptor = try Self.create(path)
        location = path
        var piece = [UInt8](repeating: 0, count: 1 << 20)
        var copied: Int64 = 0
        var last: UInt8?
        while true {
            let count = piece.withUnsafeMutableBytes { Foundation.read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw StorageError(
                    .unknown,
                    "Cannot read the plan \(planPath): \(String(cString: strerror(errno))); nothing was applied.")
            }
            if count == 0 { break }
            try piece.withUnsafeBytes { try append(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            copied += Int64(count)
            last = piece[count - 1]
        }
        // Changed in place while it was copied: the bytes copied may not be the plan that was read.
        guard copied == read.size, FileIdentity(descriptor: source) == read else { throw changed }
        // A plan written by hand may end without a newline; the journal's next line must start a line of its own.
        if last != UInt8(ascii: "\n") { try append("\n") }
        try sync()
    }

    /// A new journal file at `path` (its directory made if missing), open for appending; one that exists is refused.
    private static func create(_ path: String) throws -> Int32 {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let descriptor = Foundation.open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StorageError(
                .invalidArgument, "Cannot create the journal \(path): \(String(cString: strerror(errno))).")
        }
        return descriptor
    }

    /// A journal's first lines: the header and every change of the plan, handed to `write` about 1 MiB at a time.
    /// A plan kept by a dry run (`--plan FILE`) is these lines alone: a journal of a run not started yet.
    static func writePlan(
        bucket: String, source: String, plan: PlanStore, clock: any StorageClock, _ write: (String) throws -> Void
    ) throws {
        var text =
            JournalRecord.header(bucket: bucket, source: source, changes: plan.count, created: clock.now()) + "\n"
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
    static func keepPlan(
        _ plan: PlanStore, at path: String, bucket: String, source: String, clock: any StorageClock
    ) throws {
        try writeFileAtomically(path) { output in
            try writePlan(bucket: bucket, source: source, plan: plan, clock: clock) { try output.write($0) }
        }
    }

    /// An existing journal, to go on with (a resumed run).
    init(appendingTo path: String) throws {
        descriptor = Foundation.open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw StorageError(
                .invalidArgument, "Cannot write to the journal \(path): \(String(cString: strerror(errno))).")
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
        try Array(text.utf8).withUnsafeBytes { try append($0) }
    }

    private func append(_ bytes: UnsafeRawBufferPointer) throws {
        try lock.withLock {
            let written = write(descriptor, bytes.baseAddress, bytes.count)
            guard written == bytes.count else {
                throw StorageError(
                    .unknown, "Cannot write the journal \(location): \(String(cString: strerror(errno))).")
            }
        }
    }

    private func sync() throws {
        guard fsync(descriptor) == 0 else {
            throw StorageError(
                .unknown, "Cannot make the journal \(location) durable: \(String(cString: strerror(errno))).")
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

/// Reads a journal a line at a time (a journal of millions of changes is gigabytes) into a plan store.
func readJournal(
    _ path: String, counting: (any WorkCounter)? = nil,
    reopen: ((String) throws(StorageError) -> any ContentSource)? = nil
) throws -> JournalRecord.Contents {
    // A regular file, or standard input when asked for by `-`: a FIFO with no writer or a device such as /dev/zero
    // is refused, not waited on or read without end.
    let descriptor: Int32
    if path == "-" {
        descriptor = STDIN_FILENO
    } else {
        do {
            descriptor = try RegularFile.open(path, what: "a plan or journal")
        } catch {
            throw UsageError(error.message)
        }
    }
    defer { if path != "-" { close(descriptor) } }
    var lines = BoundedLines(descriptor: descriptor, source: path, maximumLineBytes: maximumJournalLineBytes)
    return try JournalRecord.read(source: path, nextLine: { try lines.next() }, reopen: reopen, counting: counting)
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
                throw UsageError(
                    "\(source): line \(lineNumber) is longer than \(MessageText.byteCount(Int64(maximumLineBytes))); this is not a plan or journal storesh wrote."
                )
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
                throw UsageError("Cannot read \(source): \(String(cString: strerror(errno))).")
            }
            if count == 0 { atEnd = true } else { buffer += piece[0..<count] }
        }
    }
}
