import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite

/// The bucket file's write-ahead log (`FILE-wal`) and its shared-memory index (`FILE-shm`), the two files SQLite
/// keeps beside a bucket while it is open.
///
/// SQLite applies whatever log lies beside a file when it opens it, and nothing in a log names the file it was
/// written for. A log left by a file that was deleted, or replaced by a copy, would be applied to the new file
/// and bring back the old state. So storesh records a *lineage* in every bucket: each committed change appends
/// a fresh random mark to a list kept in the file. A log written on top of a file carries that file's last mark
/// in its list; a log that does not was written for another file, and is refused, never applied.
///
/// The list keeps every mark from the newest one known to be folded into the file itself (`LineageKeeper`), so it
/// is bounded by the log, not by a count: however many commits a crash leaves in a log (a busy server commits in
/// groups), the file's own mark is among them.
public enum BucketFileLog {
    static let suffixes = ["-wal", "-shm"]
    static let lineageKey = "lineage"

    static func newMark() -> String { String(UInt64.random(in: 1...UInt64.max), radix: 16) }

    /// Whether another process has the bucket open: every SQLite connection to a WAL database holds a shared
    /// lock on one byte of the shared-memory file (the "DMS" byte, offset 128) for as long as it is open.
    /// POSIX locks are per process, so this process's own connections are not seen.
    static func isOpenElsewhere(_ path: String) -> Bool {
        let descriptor = Foundation.open(path + "-shm", O_RDONLY)
        guard descriptor >= 0 else { return false }
        defer { Foundation.close(descriptor) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 128
        lock.l_len = 1
        guard fcntl(descriptor, F_GETLK, &lock) == 0 else { return false }
        return lock.l_type != Int16(F_UNLCK)
    }

    static func hasLog(_ path: String) -> Bool {
        var status = stat()
        return stat(path + "-wal", &status) == 0 && status.st_size > 0
    }

    static func sidecarsExist(_ path: String) -> Bool {
        suffixes.contains { access(path + $0, F_OK) == 0 }
    }

    /// Removes the log and index left beside `path` by a bucket file that is no longer there. Refuses when a
    /// process still has that file open (it would go on writing to the log storesh is about to make).
    static func removeOrphans(of path: String) throws(StorageError) {
        guard sidecarsExist(path) else { return }
        if isOpenElsewhere(path) {
            throw .internalError(
                "Cannot create the bucket \(path): a process still has a deleted bucket of that name open (its \(path)-wal is in use). Close it (leave its shell, or end its script) and try again."
            )
        }
        for suffix in suffixes where unlink(path + suffix) != 0 && errno != ENOENT {
            throw .internalError(
                "Cannot remove \(path + suffix), left by an earlier bucket file: \(String(cString: strerror(errno))).")
        }
    }

    /// Before opening `path`: a log that no process is writing (a crash left it, or the file was replaced
    /// beside it) is applied only when it was written on top of this very file.
    static func verifyOwnership(of path: String) throws(StorageError) {
        guard hasLog(path), !isOpenElsewhere(path) else { return }
        // The file alone (immutable: SQLite ignores the log) and the file with its log (read-only: closing it
        // never folds the log in).
        guard let fileMark = try? lastMark(readingURI: uri(path, "immutable=1")),
            let logMarks = try? marks(readingURI: uri(path, "mode=ro"))
        else { return }  // a bucket older than lineages, or unreadable: opening it reports what is wrong
        // The log holds `commits` changes made on top of one state of the file; the file must be that state, or
        // one of those changes if SQLite had folded some of them in before the crash. An older copy of the same
        // bucket has an older mark (still in the list), and so does any other file.
        let commits = committedTransactions(inLogOf: path)
        let candidates = commits < logMarks.count ? Array(logMarks.suffix(commits + 1)) : logMarks
        if !candidates.contains(fileMark) {
            throw .internalError(
                "\(path)-wal was not written for \(path): the file was replaced (by a copy?) while a log of the old file was left beside it, so storesh will not apply it. The log holds \(MessageText.counted(commits, "committed change")) of that old file: to keep them, first copy all three aside (cp \(path) \(path)-wal \(path)-shm SOMEWHERE/). Then, if \(path) is the file you want, move \(path)-wal and \(path)-shm away and open it again. To put a bucket back safely another time, use storesh backup (see storesh backup --help)."
            )
        }
    }

    /// How many committed transactions SQLite would apply from the log beside `path`: its frames that carry the
    /// log's salts and a valid running checksum (the WAL file format), counting those that end a transaction.
    static func committedTransactions(inLogOf path: String) -> Int {
        // Read a frame at a time: a log can be as large as the biggest transaction (gigabytes).
        let descriptor = Foundation.open(path + "-wal", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { Foundation.close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 32)
        func load(_ offset: Int, _ count: Int) -> Bool {
            if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
            var filled = 0
            while filled < count {
                let read = buffer.withUnsafeMutableBytes {
                    pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset + filled))
                }
                if read < 0 && errno == EINTR { continue }
                guard read > 0 else { return false }
                filled += read
            }
            return true
        }
        func word(_ offset: Int, bigEndian: Bool = true) -> UInt32 {
            let value = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
            return bigEndian ? UInt32(bigEndian: value) : UInt32(littleEndian: value)
        }
        guard load(0, 32) else { return 0 }
        let magic = word(0)
        guard magic == 0x377f_0682 || magic == 0x377f_0683 else { return 0 }
        let checksumsBigEndian = magic == 0x377f_0683
        let pageSize = Int(word(8))
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else { return 0 }
        var sum = (UInt32(0), UInt32(0))
        func add(_ start: Int, _ count: Int) {
            var offset = start
            while offset < start + count {
                sum.0 = sum.0 &+ word(offset, bigEndian: checksumsBigEndian) &+ sum.1
                sum.1 = sum.1 &+ word(offset + 4, bigEndian: checksumsBigEndian) &+ sum.0
                offset += 8
            }
        }
        add(0, 24)
        guard sum == (word(24), word(28)) else { return 0 }
        let salts = (word(16), word(20))
        var commits = 0
        var offset = 32
        // Each frame: a 24-byte header (page number, commit size, salts, checksums), then the page.
        while load(offset, 24 + pageSize) {
            guard (word(8), word(12)) == salts else { break }
            add(0, 8)
            add(24, pageSize)
            guard sum == (word(16), word(20)) else { break }
            if word(4) != 0 { commits += 1 }
            offset += 24 + pageSize
        }
        return commits
    }

    private static func marks(readingURI uri: String) throws -> [String]? {
        let connection = try SQLiteConnection(path: uri, flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
        defer { connection.close() }
        return try lineage(connection)
    }

    /// The marks a bucket keeps, oldest first; nil for a bucket older than lineages.
    static func lineage(_ connection: SQLiteConnection) throws -> [String]? {
        try BucketSchema.readInfo(lineageKey, connection: connection)?.split(separator: " ").map(String.init)
    }

    private static func lastMark(readingURI uri: String) throws -> String? {
        try marks(readingURI: uri)?.last
    }

    /// A `file:` URI for SQLite, with the characters that URIs reserve escaped.
    static func uri(_ path: String, _ query: String? = nil) -> String {
        let escaped = path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "?", with: "%3f")
            .replacingOccurrences(of: "#", with: "%23")
        return "file:\(escaped)" + (query.map { "?" + $0 } ?? "")
    }

    /// A new file's name beside `path` (hidden, unique to this process): a bucket file is built there and then
    /// linked or renamed into place, so `path` is never half made.
    static func temporaryName(beside path: String, for purpose: String) -> String {
        let url = URL(fileURLWithPath: path)
        // A file name holds at most 255 bytes, and SQLite adds "-journal" to it: a long name (a bucket name may
        // be 222 characters) is shortened, whole characters at a time, to what leaves room for the rest.
        var base = ""
        for character in url.lastPathComponent {
            guard base.utf8.count + character.utf8.count <= Self.temporaryBaseBytes else { break }
            base.append(character)
        }
        return
            "\(url.deletingLastPathComponent().path)/.\(base).\(purpose)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The most bytes of a file's own name a temporary name beside it keeps.
    static let temporaryBaseBytes = 160

    /// Removes what a storesh that was killed left in `directory` of its own making: files named by
    /// `temporaryName` (`.NAME.creating-PID-N`, `.NAME.backup-PID-N`, and SQLite's files beside them) whose process
    /// is gone. Nothing else is touched: not a name of another form, not a live process's, not a link or a folder.
    public static func removeStaleTemporaries(in directory: String) {
        removeLeftovers(in: directory, folders: false, pidOf: stalePid(ofTemporary:))
    }

    /// Removes the entries of `directory` whose names `pidOf` reads a process number from (names of a temporary
    /// form that storesh makes, carrying its maker's number), when that process is gone: files, and with `folders`
    /// whole folders too. Links and every other name are left as they are.
    static func removeLeftovers(in directory: String, folders: Bool, pidOf: (String) -> Int32?) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for name in names {
            guard let pid = pidOf(name), !isRunning(pid) else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            var status = stat()
            guard lstat(path, &status) == 0 else { continue }
            switch status.st_mode & S_IFMT {
            case S_IFREG: unlink(path)
            case S_IFDIR where folders: try? FileManager.default.removeItem(atPath: path)
            default: continue
            }
        }
    }

    /// The process that made a file named by `temporaryName`, read from its name; nil for any other name.
    static func stalePid(ofTemporary name: String) -> Int32? {
        guard
            let match = name.wholeMatch(of: #/\..+\.(?:creating|backup)-(\d{1,10})-(\d{1,10})(?:-wal|-shm|-journal)?/#)
        else { return nil }
        return Int32(match.1)
    }

    /// Whether a process of that number runs (one of another user's counts as running: it is not ours to judge).
    public static func isRunning(_ pid: Int32) -> Bool { pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH }

    /// Removes a file and whatever SQLite kept beside it.
    static func removeWithSidecars(_ path: String) {
        for suffix in ["", "-wal", "-shm", "-journal"] { unlink(path + suffix) }
    }

    /// Makes `directory`'s entries durable (a new or renamed name must survive a crash).
    public static func synchronizeDirectory(of path: String) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let descriptor = Foundation.open(directory, O_RDONLY)
        if descriptor >= 0 {
            fsync(descriptor)
            Foundation.close(descriptor)
        }
    }
}

/// What a bucket's connections in this process know of its file's lineage: the newest mark known to be folded
/// into the file itself. Each commit keeps the marks from that one on (the file holds it or a later one), and every
/// `foldInterval` commits the log is folded in without waiting for anyone (a passive checkpoint); once all of it is
/// in the file, the mark just committed is the new floor. So the list stays short, and a log left by a crash
/// always carries the file's own mark, however many commits it holds.
final class LineageKeeper: @unchecked Sendable {
    static let foldInterval = 16
    private let lock = NSLock()
    private var foldedMark: String?
    private var commitsSinceFold = 0

    /// Appends a new mark to the lineage, inside the committing transaction; returns it.
    func advance(_ connection: SQLiteConnection) throws -> String {
        var marks = try BucketFileLog.lineage(connection) ?? []
        if let folded = lock.withLock({ foldedMark }), let floor = marks.lastIndex(of: folded) {
            marks.removeFirst(floor)
        }
        let mark = BucketFileLog.newMark()
        marks.append(mark)
        try BucketSchema.writeInfo(BucketFileLog.lineageKey, marks.joined(separator: " "), connection: connection)
        return mark
    }

    /// After `mark` is committed on `connection`.
    func committed(_ mark: String, on connection: SQLiteConnection) {
        let due = lock.withLock {
            commitsSinceFold += 1
            return commitsSinceFold >= Self.foldInterval
        }
        guard due else { return }
        // Readers of older states hold part of the log back: then try again after the next commit.
        if connection.foldLogPassively() {
            lock.withLock {
                foldedMark = mark
                commitsSinceFold = 0
            }
        }
    }
}

extension LocalBucket {
    /// Writes a consistent copy of the whole bucket (objects, snapshots, rules) to `destination`, made by
    /// SQLite's backup while other processes may go on writing. The copy is built beside `destination` and
    /// renamed into place, so `destination` is the old file or the whole copy, never half of it. An existing
    /// `destination` must be a storesh bucket that no process has open; its log, if any, goes with it.
    public func backup(to destination: String) throws(StorageError) {
        var target = stat()
        var source = stat()
        let exists = stat(destination, &target) == 0
        if exists {
            if stat(path, &source) == 0 && source.st_dev == target.st_dev && source.st_ino == target.st_ino {
                throw .invalidArgument("\(destination) is the bucket itself; give the path of the copy to write.")
            }
            if (target.st_mode & S_IFMT) == S_IFDIR {
                let folder = destination.hasSuffix("/") ? String(destination.dropLast()) : destination
                throw .invalidArgument(
                    "\(destination) is a directory; give the path of the copy to write, e.g. \(folder)/\(URL(fileURLWithPath: path).lastPathComponent)."
                )
            }
            let isBucket =
                (try? SQLiteConnection(
                    path: BucketFileLog.uri(destination, "immutable=1"), flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI))
                .flatMap { try? $0.integer("PRAGMA application_id") } == BucketSchema.applicationID
            guard isBucket else {
                throw .invalidArgument(
                    "\(destination) exists and is not a storesh bucket; storesh will not overwrite it.")
            }
            if BucketFileLog.isOpenElsewhere(destination) {
                throw .invalidArgument(
                    "\(destination) is open in another storesh (a shell, a script or a server); close it first, then copy over it."
                )
            }
        }
        var folder = stat()
        let directory = URL(fileURLWithPath: destination).deletingLastPathComponent().path
        guard stat(directory, &folder) == 0, (folder.st_mode & S_IFMT) == S_IFDIR else {
            throw .invalidArgument("Cannot write the copy \(destination): there is no directory \(directory).")
        }
        let temporary = BucketFileLog.temporaryName(beside: destination, for: "backup")
        defer { BucketFileLog.removeWithSidecars(temporary) }
        do {
            let copy = try SQLiteConnection(path: temporary, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            defer { copy.close() }
            try copy.execute("PRAGMA synchronous = FULL")
            try withConnection { source in try copy.copyAll(from: source) }
        } catch let error as SQLiteError {
            throw BucketFile.describe(error, path: destination, options: options)
        } catch let error as StorageError {
            throw error
        } catch {
            throw .internalError("\(error)")
        }
        for suffix in BucketFileLog.suffixes { unlink(destination + suffix) }
        guard rename(temporary, destination) == 0 else {
            throw .internalError("Cannot write \(destination): \(String(cString: strerror(errno))).")
        }
        BucketFileLog.synchronizeDirectory(of: destination)
    }
}
