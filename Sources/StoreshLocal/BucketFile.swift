import CSQLite
import Foundation
import StoreshCore
import StoreshSQLite

/// How a local bucket is opened.
public struct LocalBucketOptions: Sendable {
    /// Where "now" comes from for each change (contract `--clock`).
    public var clock: any StorageClock
    /// How long a change waits for another process that is changing the bucket before it gives up.
    public var busyTimeoutMilliseconds: Int32
    /// Create an empty bucket when the file does not exist.
    public var createIfMissing: Bool
    /// The bucket name for a newly created file; by default derived from the file name.
    public var nameForNewBucket: String?
    /// Testing aid: the process kills itself (SIGKILL) just before a commit, to prove that an interrupted
    /// change leaves the old state. Set by the `STORESH_FAULT=crash-before-commit` environment variable.
    public var crashBeforeCommit: Bool
    /// Testing aid: the process kills itself just after a commit, leaving the log of a change that landed
    /// (`STORESH_FAULT=crash-after-commit`), as a crash or a power loss would.
    public var crashAfterCommit = false
    /// How much of the file its reads take through a memory map (SQLite's `mmap_size`; at most SQLite's own limit,
    /// 2 GiB by default); 0, the default: none. A large object's content is a chain of 4 KiB pages that a read from
    /// an offset walks from its start: through the map that walk costs no copy of each page (a ranged read of 8 MiB
    /// at 200 MB into a 256 MiB object made 50,937 reads of a page without it). The price is SQLite's: an I/O error
    /// under the map is a signal, not an error; so only `storesh serve`'s reading connections ask for it.
    public var mappedReadBytes: Int64 = 0

    public init(
        clock: any StorageClock = SystemClock(), busyTimeoutMilliseconds: Int32 = 5000, createIfMissing: Bool = true,
        nameForNewBucket: String? = nil, crashBeforeCommit: Bool = false
    ) {
        self.clock = clock
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.createIfMissing = createIfMissing
        self.nameForNewBucket = nameForNewBucket
        self.crashBeforeCommit = crashBeforeCommit
    }
}

/// A bucket file as a file: where it is, which bucket it holds, what its format stores, and how a connection to it
/// is made. Opening identifies the file before anything could write to it (and brings an older format up to date
/// where it may write); creating builds a new file beside its place and links it in; an SQLite failure is described
/// here for the user of the file. Its lineage (the marks a log beside it must carry) is shared by every connection
/// this process has to it.
///
/// Nothing here reads or writes objects: that is the row store's (`RowStore`), over one connection made here.
struct BucketFile: Sendable {
    /// The bucket file.
    let path: String
    /// The bucket's name, as the file stores it.
    let name: String
    let options: LocalBucketOptions
    /// False only for a version-2 file opened where it cannot be written (so not upgraded): its contents have
    /// no stored CRC-32C, and its objects' metadata then has none.
    let storesContentChecksums: Bool
    /// False only for a file of format 4 or older opened where it cannot be written (so not upgraded): it has no
    /// table of noncurrent generations, and so none of them.
    let storesNoncurrent: Bool
    /// The lineage as this process's connections to the file know it.
    let lineage: LineageKeeper

    /// Identifies the existing file at `path` and opens its first connection: a file that is not a storesh bucket,
    /// is damaged, or was made by a newer storesh is an error and is left untouched.
    static func open(
        at path: String, options: LocalBucketOptions
    ) throws(StorageError) -> (BucketFile, SQLiteConnection) {
        // A log beside the file is applied on open: first make sure it was written for this file.
        try BucketFileLog.verifyOwnership(of: path)
        // stat, not FileManager's attributes: those look up the owner's name, which costs an NSS lookup on
        // every open.
        var status = stat()
        let statted = stat(path, &status) == 0
        if statted && (status.st_mode & S_IFMT) == S_IFDIR {
            throw .internalError("\(path) is a directory, not a bucket file.")
        }
        if statted && status.st_size == 0 {
            // SQLite would take an empty file for an empty database and start writing to it.
            throw .internalError("\(path) is an empty file, not a storesh bucket; storesh will not change it.")
        }
        let connection = try connect(path, options: options, exists: statted)
        do {
            // Identify the file before anything could write to it.
            guard try connection.integer("PRAGMA application_id") == BucketSchema.applicationID else {
                throw StorageError.internalError(
                    "\(path) is an SQLite database, but not a storesh bucket; storesh will not change it.")
            }
            let version = try connection.integer("PRAGMA user_version") ?? 0
            guard version <= BucketSchema.version else {
                throw StorageError.internalError(
                    "\(path) was made by a newer storesh (bucket format \(version); this one reads up to \(BucketSchema.version))."
                )
            }
            try setUp(connection, options: options)
            if version == 1 { try BucketSchema.upgradeFromVersion1(connection) }
            let writable = !connection.isReadOnly
            if version == 2 && writable { try BucketSchema.upgradeFromVersion2(connection) }
            if (version == 3 || version == 4) && writable {
                try BucketSchema.upgradeAddingNoncurrent(connection, from: version)
            }
            let name = try BucketSchema.readInfo("name", connection: connection)
            guard let name else {
                throw StorageError.internalError("\(path) is damaged: it has no bucket name.")
            }
            let file = BucketFile(
                path: path, name: name, options: options, storesContentChecksums: version != 2 || writable,
                storesNoncurrent: version >= 5 || writable, lineage: LineageKeeper())
            return (file, connection)
        } catch {
            connection.close()
            throw failure(error, path: path, options: options)
        }
    }

    /// A connection to an existing bucket file, for reading and writing, or for reading only when the file
    /// cannot be written.
    private static func connect(
        _ path: String, options: LocalBucketOptions, exists: Bool
    ) throws(StorageError) -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, flags: SQLITE_OPEN_READWRITE)
            connection.waitWhenBusy(milliseconds: options.busyTimeoutMilliseconds)
            _ = try connection.integer("PRAGMA application_id")
            return connection
        } catch let error where [SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_PERM].contains(error.primaryCode) && exists {
            // A bucket on read-only media (or in a directory storesh may not write, where SQLite cannot make
            // its shared-memory file) can still be read; a change then fails as read-only.
            do {
                let connection = try SQLiteConnection(
                    path: readOnlyLocation(path), flags: SQLITE_OPEN_READONLY | SQLITE_OPEN_URI)
                connection.waitWhenBusy(milliseconds: options.busyTimeoutMilliseconds)
                return connection
            } catch {
                throw describe(error, path: path, options: options)
            }
        } catch {
            throw describe(error, path: path, options: options)
        }
    }

    /// Another connection to this (already identified) file, set up as the first.
    func connect() throws(StorageError) -> SQLiteConnection {
        let connection = try Self.connect(path, options: options, exists: true)
        do {
            try Self.setUp(connection, options: options)
        } catch {
            connection.close()
            throw failure(error)
        }
        return connection
    }

    /// Sets up a connection to a bucket file, the first and every other: each commit durable, the log cut back to
    /// 4 MiB once folded in, so that a big transaction (an import, a bulk edit) leaves no log for later processes to
    /// read; and the file read through a memory map where `options.mappedReadBytes` asks for one.
    private static func setUp(_ connection: SQLiteConnection, options: LocalBucketOptions) throws {
        try connection.execute("PRAGMA synchronous = FULL; PRAGMA journal_size_limit = \(4 << 20)")
        guard options.mappedReadBytes > 0 else { return }
        try connection.execute("PRAGMA mmap_size = \(options.mappedReadBytes)")
    }

    /// Where to open a bucket that cannot be opened for writing. On a read-only file system SQLite cannot
    /// make the shared-memory file a WAL database needs, so the file is opened as immutable, which is
    /// true there, unless its log holds changes not yet folded in (the log must then be read, normally).
    private static func readOnlyLocation(_ path: String) -> String {
        var fileSystem = statvfs()
        var log = stat()
        let readOnlyFileSystem = statvfs(path, &fileSystem) == 0 && (fileSystem.f_flag & UInt(ST_RDONLY)) != 0
        let logIsEmpty = stat(path + "-wal", &log) != 0 || log.st_size == 0
        return BucketFileLog.uri(path, readOnlyFileSystem && logIsEmpty ? "immutable=1" : nil)
    }

    /// Builds a new bucket file named `name` under a temporary name beside `path`, has `seed` fill it (given the
    /// temporary name; an empty bucket when nil), and links it into place, so a crash never leaves a half-made bucket;
    /// answers whether it was linked (false: a file of that name was there first, and is kept).
    static func create(
        at path: String, name: String, options: LocalBucketOptions, seed: ((String) throws(StorageError) -> Void)?
    ) throws(StorageError) -> Bool {
        // What a killed creation left beside it (its own temporary names, of processes that are gone) goes first.
        let directory = (path as NSString).deletingLastPathComponent
        BucketFileLog.removeStaleTemporaries(in: directory.isEmpty ? "." : directory)
        let temporary = BucketFileLog.temporaryName(beside: path, for: "creating")
        defer { BucketFileLog.removeWithSidecars(temporary) }
        do {
            let connection = try SQLiteConnection(path: temporary, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            defer { connection.close() }
            try connection.execute(
                "PRAGMA journal_mode = WAL; PRAGMA application_id = \(BucketSchema.applicationID); BEGIN")
            try BucketSchema.create(connection, name: name)
            try connection.execute("COMMIT")
        } catch {
            throw describe(error, path: path, options: options)
        }
        try seed?(temporary)
        // The linked name must be the whole bucket: nothing may be left in the temporary name's WAL.
        var log = stat()
        if stat(temporary + "-wal", &log) == 0, log.st_size > 0 {
            throw .internalError("Cannot create the bucket file \(path): its log was not folded into the file.")
        }
        // A log and index left by an earlier file of that name (deleted while open, or by a crash) would be
        // applied to the new file: they go first.
        if access(path, F_OK) != 0 { try BucketFileLog.removeOrphans(of: path) }
        if link(temporary, path) != 0 {
            guard errno == EEXIST else {
                throw .internalError("Cannot create the bucket file \(path): \(String(cString: strerror(errno))).")
            }
            return false
        }
        BucketFileLog.synchronizeDirectory(of: path)  // the new name itself must survive a crash
        return true
    }

    // MARK: Failures

    /// What a failure met while working on the file means for its user: a storage error as it is, an SQLite failure
    /// or a damaged row described.
    func failure(_ error: any Error) -> StorageError {
        Self.failure(error, path: path, options: options)
    }

    static func failure(_ error: any Error, path: String, options: LocalBucketOptions) -> StorageError {
        switch error {
        case let error as StorageError: error
        case let error as SQLiteError: describe(error, path: path, options: options)
        case let error as ChecksumMismatch: damaged(error, path: path)
        default: .internalError("\(error)")
        }
    }

    /// What a failed row checksum means for the user of this bucket file.
    static func damaged(_ mismatch: ChecksumMismatch, path: String) -> StorageError {
        .internalError(
            "The bucket \(path) is damaged: the stored \(mismatch.what) does not match its checksum. storesh will not write to it; `storesh check` lists what is damaged; restore a copy (storesh backup --bucket COPY \(path)), or export what can still be read."
        )
    }

    /// What an SQLite failure means for the user of this bucket file.
    static func describe(_ error: SQLiteError, path: String, options: LocalBucketOptions) -> StorageError {
        if error.isBusy {
            let seconds = Double(options.busyTimeoutMilliseconds) / 1000
            return StorageError(
                .unavailable,
                "The bucket \(path) is busy: another process is changing it (waited \(seconds.formatted()) s). Nothing was changed; try again when it has finished."
            )
        }
        if error.primaryCode == SQLITE_NOTADB {
            return .internalError(
                "\(path) is not a storesh bucket (SQLite: \(error.message)); storesh will not change it.")
        }
        if error.isDamage {
            return .internalError(
                "The bucket \(path) is damaged (SQLite: \(error.message)). storesh will not write to it; restore a copy (storesh backup --bucket COPY \(path)), or export what can still be read."
            )
        }
        if error.isReadOnly || error.primaryCode == SQLITE_PERM {
            return .internalError("The bucket \(path) is read-only (\(error.message)); nothing was changed.")
        }
        if error.isDiskFull || (error.primaryCode == SQLITE_IOERR && hasNoFreeSpace(path)) {
            return .internalError("The disk holding \(path) is full; nothing was changed.")
        }
        if error.primaryCode == SQLITE_CANTOPEN {
            return .internalError("Cannot open the bucket \(path): \(error.message).")
        }
        return .internalError("Storage engine error on \(path): \(error.message).")
    }

    /// Whether the file system holding `path` is full: SQLite reports a full disk as an I/O error when it
    /// cannot make its shared-memory file.
    private static func hasNoFreeSpace(_ path: String) -> Bool {
        var fileSystem = statvfs()
        return statvfs(path, &fileSystem) == 0 && fileSystem.f_bavail == 0
    }
}
