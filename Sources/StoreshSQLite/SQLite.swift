import CSQLite
import Foundation

/// SQLite's way of being told a text or blob must be copied before `bind` returns.
private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Where SQLite is to read `bytes` from: their own start or, when there are none (an empty buffer has no address),
/// another valid pointer, because SQLite takes a null pointer for NULL and an empty text or blob must stay one.
private func nonNullStart(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
    bytes.baseAddress ?? UnsafeRawPointer(("" as StaticString).utf8Start)
}

/// An SQLite failure, with the primary result code so the engine can say what it means for a bucket.
package struct SQLiteError: Error, CustomStringConvertible {
    package let code: Int32
    package let message: String

    package var primaryCode: Int32 { code & 0xFF }
    package var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }
    package var isDamage: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }
    package var isReadOnly: Bool { primaryCode == SQLITE_READONLY }
    package var isDiskFull: Bool { primaryCode == SQLITE_FULL }
    package var description: String { message }
}

/// One connection to one database file. Not thread-safe: its owner serialises access.
package final class SQLiteConnection {
    /// SQLite's own handle, for this module's types alone: everything above goes through the calls below.
    private(set) var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]
    private var functions: [String: SQLiteFunction] = [:]

    /// The process's SQLite set up once, before its first connection. (Sub-journals keep SQLite's own spill
    /// threshold: Debian's SQLite 3.40 fails a savepoint's large delete as "database or disk is full" when it is
    /// raised past 128 KiB, and raising it made no measurable difference to a bulk edit.)
    private static let configured: Void = { _ = storesh_sqlite_configure() }()

    /// The most bytes one text or blob may hold in this process's SQLite (SQLITE_LIMIT_LENGTH; 1,000,000,000 unless
    /// it was built otherwise): an object's content is one blob, so this is the largest object a bucket file holds.
    package static let largestValueBytes: Int64 = {
        guard
            let connection = try? SQLiteConnection(path: ":memory:", flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        else {
            return 1_000_000_000
        }
        defer { connection.close() }
        return Int64(sqlite3_limit(connection.handle, SQLITE_LIMIT_LENGTH, -1))
    }()

    package init(path: String, flags: Int32) throws(SQLiteError) {
        Self.configured
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, flags | SQLITE_OPEN_NOMUTEX, nil)
        self.handle = handle
        if status != SQLITE_OK {
            let error = SQLiteError(
                code: status, message: handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory")
            close()
            throw error
        }
        sqlite3_extended_result_codes(handle, 1)
    }

    deinit { close() }

    package func close() {
        statements.removeAll()  // finalised by their deinit, before the connection closes
        functions.removeAll()  // SQLite releases its own references as it closes
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    package func lastError(_ status: Int32) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs SQL that returns no rows (may hold several statements).
    package func execute(_ sql: String) throws(SQLiteError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        if status != SQLITE_OK { throw lastError(status) }
    }

    /// A prepared statement, cached for the life of the connection and reset here: a caller must finish
    /// with it before anything else asks for the same SQL.
    package func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard status == SQLITE_OK, let raw else { throw lastError(status) }
        let statement = SQLiteStatement(raw: raw, connection: self)
        statements[sql] = statement
        return statement
    }

    /// The first column of the first row of a query, as an integer.
    package func integer(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try statement(sql)
        defer { statement.reset() }
        return try statement.step() ? statement.int64(0) : nil
    }

    package var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// The row id of the last row this connection inserted.
    package var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// How many rows the last statement changed.
    package var changedRows: Int { Int(sqlite3_changes(handle)) }

    /// Whether the main database is open for reading only.
    package var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

    /// How long a statement waits for another connection's lock before it fails as busy.
    package func waitWhenBusy(milliseconds: Int32) { sqlite3_busy_timeout(handle, milliseconds) }

    /// Folds what it can of the write-ahead log into the database without waiting for anyone (a passive
    /// checkpoint): whether all of the log was folded (readers of older states hold the rest back).
    package func foldLogPassively() -> Bool {
        var logFrames: Int32 = 0
        var foldedFrames: Int32 = 0
        let status = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &foldedFrames)
        return status == SQLITE_OK && logFrames == foldedFrames
    }

    /// Copies every page of `source`'s main database into this connection's, in one step: one read transaction
    /// on the source, so the copy is one state of it (SQLite's online backup).
    package func copyAll(from source: SQLiteConnection) throws(SQLiteError) {
        guard let backup = sqlite3_backup_init(handle, "main", source.handle, "main") else {
            throw lastError(sqlite3_errcode(handle))
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        if stepped != SQLITE_DONE { throw lastError(stepped) }
        if finished != SQLITE_OK { throw lastError(finished) }
    }

    /// An SQL function of this connection, defined on first ask (`SQLiteFunction`). Prepare a statement that uses
    /// it after asking: before, SQLite does not know the name.
    package func function(_ name: String, arguments: Int32) throws(SQLiteError) -> SQLiteFunction {
        if let defined = functions[name] { return defined }
        let function = SQLiteFunction()
        // SQLITE_DIRECTONLY: only SQL this connection prepares may call it, never a trigger or view a bucket file
        // holds. SQLite owns one reference to the function, given back by the destructor (also when the definition
        // fails).
        let status = sqlite3_create_function_v2(
            handle, name, arguments, SQLITE_UTF8 | SQLITE_DIRECTONLY, Unmanaged.passRetained(function).toOpaque(),
            { context, count, values in
                // SQLite holds the function for as long as it can call it: no reference is taken per call.
                Unmanaged<SQLiteFunction>.fromOpaque(sqlite3_user_data(context))._withUnsafeGuaranteedRef {
                    $0.call(SQLiteFunctionCall(context: context, arguments: values))
                }
            }, nil, nil, { Unmanaged<SQLiteFunction>.fromOpaque($0!).release() })
        guard status == SQLITE_OK else { throw lastError(status) }
        functions[name] = function
        return function
    }
}

/// An application-defined SQL function that answers only while a caller lends it a body
/// (`answering(_:while:)`): a statement hands Swift values to SQLite row by row this way (a bulk edit's rewritten
/// columns), without a statement per row. Called at any other time, it fails the statement that called it.
package final class SQLiteFunction {
    private var body: ((SQLiteFunctionCall) -> Void)?

    fileprivate init() {}

    /// Runs `work` with `body` answering the function's calls.
    package func answering<Value, Failure>(
        _ body: @escaping (SQLiteFunctionCall) -> Void, while work: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        self.body = body
        defer { self.body = nil }
        return try work()
    }

    fileprivate func call(_ call: SQLiteFunctionCall) {
        guard let body else { return call.fail("storesh's SQL functions answer only the statements that use them") }
        body(call)
    }
}

/// One call of an `SQLiteFunction`: its arguments (0-based) and its result.
package struct SQLiteFunctionCall: SQLiteRow {
    @usableFromInline let context: OpaquePointer?
    @usableFromInline let arguments: UnsafeMutablePointer<OpaquePointer?>?

    // Inlinable, as a statement's columns are: a bulk edit hands a function every column of a million rows.
    @inlinable package func int64(_ argument: Int32) -> Int64 { sqlite3_value_int64(arguments![Int(argument)]) }

    @inlinable package func isNull(_ argument: Int32) -> Bool {
        sqlite3_value_type(arguments![Int(argument)]) == SQLITE_NULL
    }

    package func string(_ argument: Int32) -> String? {
        guard let text = sqlite3_value_text(arguments![Int(argument)]) else { return nil }
        let count = Int(sqlite3_value_bytes(arguments![Int(argument)]))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    @inlinable package func bytes(_ argument: Int32) -> UnsafeRawBufferPointer? {
        let value = arguments![Int(argument)]
        guard sqlite3_value_type(value) != SQLITE_NULL else { return nil }
        // As a statement's `bytes`: a text's UTF-8 as stored; the pointer is nil when it is empty.
        let start = sqlite3_value_blob(value)
        return UnsafeRawBufferPointer(start: start, count: Int(sqlite3_value_bytes(value)))
    }

    package func data(_ argument: Int32) -> Data {
        let value = arguments![Int(argument)]
        let count = Int(sqlite3_value_bytes(value))
        guard count > 0, let bytes = sqlite3_value_blob(value) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    package func result(_ value: Int64) { sqlite3_result_int64(context, value) }

    /// A blob result (nil: NULL), copied by SQLite.
    package func result(blob value: UnsafeRawBufferPointer?) {
        guard let value else { return sqlite3_result_null(context) }
        sqlite3_result_blob64(context, nonNullStart(value), sqlite3_uint64(value.count), SQLITE_TRANSIENT)
    }

    /// Fails the statement with `message`.
    package func fail(_ message: String) { sqlite3_result_error(context, message, -1) }
}

/// The values of one row, by 0-based position: a statement's columns, or a function's arguments (which a
/// statement hands it from a row it visits). Code that reads rows reads either.
package protocol SQLiteRow {
    func int64(_ column: Int32) -> Int64
    func isNull(_ column: Int32) -> Bool
    func string(_ column: Int32) -> String?
    /// A text's UTF-8 or a blob's bytes as SQLite holds them, nil for NULL, without a copy: valid until the row
    /// is left.
    func bytes(_ column: Int32) -> UnsafeRawBufferPointer?
    func data(_ column: Int32) -> Data
}

/// A prepared statement. Columns and parameters are 0-based and 1-based, as in SQLite.
package final class SQLiteStatement: SQLiteRow {
    package let raw: OpaquePointer
    package unowned let connection: SQLiteConnection

    package init(raw: OpaquePointer, connection: SQLiteConnection) {
        self.raw = raw
        self.connection = connection
    }

    deinit { sqlite3_finalize(raw) }

    package func reset() {
        sqlite3_reset(raw)
        sqlite3_clear_bindings(raw)
    }

    package func bind(_ index: Int32, _ value: String?) {
        guard let value else {
            sqlite3_bind_null(raw, index)
            return
        }
        var text = value
        text.withUTF8 { buffer in
            _ = sqlite3_bind_text(
                raw, index, nonNullStart(UnsafeRawBufferPointer(buffer)).assumingMemoryBound(to: CChar.self),
                Int32(buffer.count), SQLITE_TRANSIENT)
        }
    }

    package func bind(_ index: Int32, _ value: Int64?) {
        guard let value else {
            sqlite3_bind_null(raw, index)
            return
        }
        sqlite3_bind_int64(raw, index, value)
    }

    package func bind(_ index: Int32, _ value: Data?) { bindBlob(index, value) }

    /// Binds bytes as a blob, without first copying them into a `Data`.
    package func bind(_ index: Int32, bytes value: [UInt8]?) { bindBlob(index, value) }

    private func bindBlob(_ index: Int32, _ value: (some ContiguousBytes)?) {
        guard let value else { return bind(index, blob: nil) }
        value.withUnsafeBytes { bind(index, blob: $0) }
    }

    /// Advances to the next row: true when there is one, false when done.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(raw)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.lastError(status)
            sqlite3_reset(raw)
            throw error
        }
    }

    // Inlinable, as `bytes` is: a bulk edit reads eighteen columns of each of a million rows.
    @inlinable package func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(raw, column) }

    package func isNull(_ column: Int32) -> Bool { sqlite3_column_type(raw, column) == SQLITE_NULL }

    package func string(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(raw, column) else { return nil }
        let count = Int(sqlite3_column_bytes(raw, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// A column's bytes as SQLite holds them (text as its UTF-8, a blob as it is), nil for NULL, without a copy:
    /// valid until the statement steps or resets. For reading many rows without building a value of each.
    @inlinable package func bytes(_ column: Int32) -> UnsafeRawBufferPointer? {
        guard sqlite3_column_type(raw, column) != SQLITE_NULL else { return nil }
        // For a text column this is its UTF-8 as stored (no conversion); the pointer is nil when it is empty.
        let start = sqlite3_column_blob(raw, column)
        return UnsafeRawBufferPointer(start: start, count: Int(sqlite3_column_bytes(raw, column)))
    }

    /// Binds bytes as a blob (nil: NULL), copied by SQLite.
    package func bind(_ index: Int32, blob value: UnsafeRawBufferPointer?) {
        guard let value else {
            sqlite3_bind_null(raw, index)
            return
        }
        _ = sqlite3_bind_blob64(raw, index, nonNullStart(value), sqlite3_uint64(value.count), SQLITE_TRANSIENT)
    }

    package func data(_ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(raw, column))
        guard count > 0, let bytes = sqlite3_column_blob(raw, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }
}

/// One blob opened for incremental I/O (`sqlite3_blob_*`), so that large content is written and read a piece at
/// a time rather than bound or fetched whole. Valid while its row is unchanged; closed by its owner.
package final class SQLiteBlob {
    private var raw: OpaquePointer?
    private let connection: SQLiteConnection
    package let size: Int

    package init(
        _ connection: SQLiteConnection, table: String, column: String, row: Int64, writable: Bool
    ) throws(SQLiteError) {
        self.connection = connection
        var raw: OpaquePointer?
        let status = sqlite3_blob_open(connection.handle, "main", table, column, row, writable ? 1 : 0, &raw)
        guard status == SQLITE_OK, let raw else { throw connection.lastError(status) }
        self.raw = raw
        size = Int(sqlite3_blob_bytes(raw))
    }

    deinit { close() }

    package func close() {
        if let raw { sqlite3_blob_close(raw) }
        raw = nil
    }

    package func write(_ bytes: Data, at offset: Int) throws(SQLiteError) {
        let status = bytes.withUnsafeBytes { buffer in
            sqlite3_blob_write(raw, buffer.baseAddress, Int32(buffer.count), Int32(offset))
        }
        if status != SQLITE_OK { throw connection.lastError(status) }
    }

    package func read(at offset: Int, count: Int) throws(SQLiteError) -> Data {
        var data = Data(count: count)
        let status = data.withUnsafeMutableBytes { buffer in
            sqlite3_blob_read(raw, buffer.baseAddress, Int32(count), Int32(offset))
        }
        if status != SQLITE_OK { throw connection.lastError(status) }
        return data
    }

    /// The bytes of `range` (the whole blob when nil), in order, a piece of at most `pieceBytes` at a time: never
    /// all in memory at once.
    package func forEachPiece(of pieceBytes: Int, in range: Range<Int>? = nil, _ body: (Data) throws -> Void) throws {
        let end = range?.upperBound ?? size
        var offset = range?.lowerBound ?? 0
        // Bounded: each round reads at least one byte, up to the range's end.
        while offset < end {
            let piece = try read(at: offset, count: min(pieceBytes, end - offset))
            try body(piece)
            offset += piece.count
        }
    }
}
