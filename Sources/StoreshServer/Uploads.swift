import Foundation
import HTTPTypes
import StoreshCore
import StoreshWire
import Synchronization

/// A `multipart/related` body as uploads send it: the object's metadata (JSON) and then its content, read from
/// the spool the body was received into (the content stays there).
struct MultipartUpload {
    var metadata: Data
    var content: SpooledContent
    /// The content part's own `Content-Type`, which is the object's when the metadata names none.
    var contentType: String?

    /// The most bytes of headers a part may have.
    static let maximumPartHeaderBytes = 16 << 10

    init(spool: Spool, contentType header: String?, maximumMetadataBytes: Int) throws {
        guard let header, header.lowercased().hasPrefix("multipart/related") else {
            throw HTTPFailure.badRequest(
                "A multipart upload's Content-Type must be multipart/related with a boundary, not '\(header ?? "")'.")
        }
        guard let boundary = MediaTypes.parameter("boundary", of: header), !boundary.isEmpty, boundary.utf8.count <= 200
        else {
            throw HTTPFailure.badRequest("The multipart/related Content-Type names no boundary.")
        }
        let parts = try Self.parts(of: spool, boundary: boundary, atMost: 3)
        guard parts.count == 2 else {
            throw HTTPFailure.badRequest(
                "A multipart upload has exactly two parts, the metadata (JSON) and the content; this one has \(parts.count)."
            )
        }
        let metadataRange = parts[0].body
        guard metadataRange.count <= maximumMetadataBytes else {
            throw HTTPFailure(
                .contentTooLarge, reason: "uploadTooLarge",
                "The upload's metadata part is larger than \(maximumMetadataBytes) bytes, the limit of this server; nothing was changed."
            )
        }
        metadata = try spool.read(offset: metadataRange.lowerBound, length: metadataRange.count)
        content = try spool.content(parts[1].body)
        contentType = parts[1].headers["content-type"]
    }

    /// The parts of a multipart body (RFC 2046) in `spool`, each with its headers (names in lower case) and where its
    /// body is; at most `maximumParts` are read (a body with more is refused by its caller's count).
    static func parts(
        of spool: Spool, boundary: String, atMost maximumParts: Int
    ) throws -> [(headers: [String: String], body: Range<Int64>)] {
        let delimiter = Data(("--" + boundary).utf8)
        // Parts are delimited by CRLF--BOUNDARY; the first delimiter may open the body, and the last ends in --.
        guard let first = try spool.firstOffset(of: delimiter, from: 0), first <= 64,
            try spool.read(offset: 0, length: Int(first)).allSatisfy({ $0 == 0x0D || $0 == 0x0A })
        else {
            throw HTTPFailure.badRequest("The multipart body does not start with its boundary '--\(boundary)'.")
        }
        var parts: [(headers: [String: String], body: Range<Int64>)] = []
        var cursor = first + Int64(delimiter.count)
        // Lines end in CRLF (RFC 2046), or in LF alone as Python's email generator writes them (gsutil's uploads):
        // whichever follows the first boundary is the body's.
        let newline = try spool.read(offset: cursor, length: 1) == Data("\n".utf8) ? Data("\n".utf8) : Data("\r\n".utf8)
        let next = newline + delimiter
        // Bounded: each round moves the cursor past one delimiter, and at most `maximumParts` parts are read.
        while parts.count < maximumParts {
            let opening = try spool.read(offset: cursor, length: 2)
            if opening == Data("--".utf8) { break }  // the closing delimiter
            guard opening.starts(with: newline) else {
                throw HTTPFailure.badRequest(
                    "The multipart body is malformed: a boundary is not followed by a line break.")
            }
            cursor += Int64(newline.count)
            guard let end = try spool.firstOffset(of: next, from: cursor) else {
                throw HTTPFailure.badRequest(
                    "The multipart body is cut short: a part has no closing boundary '--\(boundary)--'.")
            }
            parts.append(try Self.part(spool, cursor..<end, newline: newline))
            cursor = end + Int64(next.count)
        }
        return parts
    }

    /// One part: its headers up to an empty line, then its body.
    private static func part(
        _ spool: Spool, _ range: Range<Int64>, newline: Data
    ) throws -> (headers: [String: String], body: Range<Int64>) {
        let start = try spool.read(
            offset: range.lowerBound, length: Int(min(Int64(maximumPartHeaderBytes), Int64(range.count))))
        guard let split = start.range(of: newline + newline) else {
            if start.starts(with: newline) { return ([:], range.lowerBound + Int64(newline.count)..<range.upperBound) }
            throw HTTPFailure.badRequest(
                "The multipart body is malformed: a part's headers do not end with an empty line within \(maximumPartHeaderBytes) bytes."
            )
        }
        var headers: [String: String] = [:]
        let text = String(decoding: start[start.startIndex..<split.lowerBound], as: UTF8.self)
        // Split by bytes: "\r\n" is one Character to Swift.
        let lines = text.utf8.split(separator: UInt8(ascii: "\n")).map { bytes in
            Substring(bytes.last == UInt8(ascii: "\r") ? bytes.dropLast() : bytes)
        }
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                throw HTTPFailure.badRequest(
                    "The multipart body is malformed: '\(line.prefix(80))' is not a header line.")
            }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] = line[
                line.index(after: colon)...
            ].trimmingCharacters(in: .whitespaces)
        }
        return (headers, range.lowerBound + Int64(split.upperBound - start.startIndex)..<range.upperBound)
    }
}

/// What every upload needs to make its object, whatever its protocol.
struct UploadRequest: Sendable {
    /// The bucket the object goes to.
    var bucket: ServedBucket
    var name: ObjectName
    var options: WriteOptions
    /// A CRC32C the content must have (base64), checked before anything is written.
    var expectedCRC32C: String?
    /// The CRC32C a resumable upload's last request gives (`X-Goog-Hash`): checked too, never in place of the one
    /// given when the upload started (a wrong declared CRC32C was once overridden by the client's correct one).
    var lastRequestCRC32C: String?
    var conditions: Conditions
    /// The Firebase v0 API: the object gets a download token.
    var firebase: Bool
    /// Who makes it: on the v0 API the rules decide for anyone but the administrator.
    var caller = Caller.administrator
}

/// Resumable uploads in progress, each an `UploadMachine` and the spool its bytes wait in (a file beside the bucket
/// past a small size): they land in the bucket only when the last byte has arrived, in one change, so a half upload
/// is never visible and one that a crash interrupts leaves nothing behind. A session ends when its upload lands or
/// fails for good, is cancelled, or idles out; only sessions in progress count against the limit, and an ended one
/// is remembered a while (without its bytes) to answer a client that asks again.
final class UploadSessions: Sendable {
    struct Session: Sendable {
        var request: UploadRequest
        /// The bytes received so far; nil once the session has ended.
        private(set) var spool: Spool?
        var machine: UploadMachine
        var lastUsed: Date

        init(request: UploadRequest, spool: Spool, machine: UploadMachine, lastUsed: Date) {
            self.request = request
            self.spool = spool
            self.machine = machine
            self.lastUsed = lastUsed
        }

        /// Lets the bytes go once the upload has ended.
        mutating func settle() {
            if !machine.inProgress { spool = nil }
        }
    }

    /// The answer to a request on an upload whose bytes are arriving or whose object is being written.
    static let busy = HTTPFailure(
        .serviceUnavailable, reason: "backendError",
        "Another request of this upload is in progress; ask again in a moment.",
        headers: [.retryAfter: "1"])

    /// Sessions in progress left idle this long end, and their bytes go.
    static let idleLimit: TimeInterval = 3600
    /// Ended sessions are remembered this long, and at most this many.
    static let endedMemory: TimeInterval = 600
    static let maximumEnded = 4096

    private let sessions = Mutex<[String: Session]>([:])
    private let maximumSessions: Int
    /// The most bytes an object may have.
    private let maximumObjectBytes: Int64

    init(maximumSessions: Int, maximumObjectBytes: Int64) {
        self.maximumSessions = maximumSessions
        self.maximumObjectBytes = maximumObjectBytes
    }

    func start(_ request: UploadRequest, declaredSize: Int64?, spool: Spool) throws -> String {
        let id = Self.newID()
        let now = Date()
        let machine = UploadMachine(.chunks, limit: maximumObjectBytes, declaredSize: declaredSize)
        try sessions.withLock { sessions in
            Self.forgetStale(&sessions, now: now)
            let inProgress = sessions.values.count { $0.machine.inProgress }
            guard inProgress < maximumSessions else {
                throw HTTPFailure(
                    .tooManyRequests, reason: "rateLimitExceeded",
                    "\(maximumSessions) resumable uploads are in progress; finish or cancel one first (an upload idle for \(Int(Self.idleLimit / 60)) minutes ends by itself)."
                )
            }
            sessions[id] = Session(request: request, spool: spool, machine: machine, lastUsed: now)
        }
        return id
    }

    /// Ends idle sessions in progress, and forgets ended ones past their memory.
    private static func forgetStale(_ sessions: inout [String: Session], now: Date) {
        var ended = 0
        for id in Array(sessions.keys) {
            guard var session = sessions[id] else { continue }
            let idle = now.timeIntervalSince(session.lastUsed)
            if session.machine.inProgress {
                if idle >= Self.idleLimit {
                    session.machine.expire()
                    session.settle()
                    sessions[id] = session
                }
            } else if idle >= Self.endedMemory {
                sessions[id] = nil
            } else {
                ended += 1
            }
        }
        if ended > Self.maximumEnded {
            let oldest = sessions.filter { !$0.value.machine.inProgress }.sorted {
                $0.value.lastUsed < $1.value.lastUsed
            }
            for (id, _) in oldest.prefix(ended - Self.maximumEnded) { sessions[id] = nil }
        }
    }

    /// Runs `body` on the session `id` (a 404 when there is none), under the lock: requests on one session are
    /// serialised, as their chunks must be. Its machine takes the events; once it has ended, its bytes go.
    func withSession<T: Sendable>(_ id: String, _ body: (inout Session) throws -> T) throws -> T {
        try sessions.withLock { sessions in
            guard var session = sessions[id] else {
                throw HTTPFailure.notFound(
                    "No such upload: '\(id)'. It finished, was cancelled, was never started here, or the server restarted since."
                )
            }
            session.lastUsed = Date()
            defer {
                session.settle()
                sessions[id] = session
            }
            return try body(&session)
        }
    }

    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(generator.next() as UInt64, radix: 16).leftPadded16 }.joined()
    }
}

extension String {
    fileprivate var leftPadded16: String { String(repeating: "0", count: max(0, 16 - count)) + self }
}

/// The preconditions a request gives in its query (rule G5): `ifGenerationMatch` (0: must not exist),
/// `ifMetagenerationMatch`, and their `NotMatch` forms.
struct Conditions: Sendable {
    var generationMatch: Int64?
    var metagenerationMatch: Int64?
    var generationNotMatch: Int64?
    var metagenerationNotMatch: Int64?

    init(_ query: QueryParameters, prefix: String = "if") throws {
        // Generations are never negative: a negative condition is a malformed request, not one that fails.
        func number(_ name: String) throws -> Int64? {
            guard let value = try query.integer(name) else { return nil }
            guard value >= 0 else {
                throw HTTPFailure.badRequest(
                    "Invalid value for the query parameter '\(name)': \(value); generations are zero or more.")
            }
            return value
        }
        generationMatch = try number(prefix + "GenerationMatch")
        metagenerationMatch = try number(prefix + "MetagenerationMatch")
        generationNotMatch = try number(prefix + "GenerationNotMatch")
        // The Python client spells it `ifMetaGenerationNotMatch` on uploads.
        let spelledByPython = try number(prefix + "MetaGenerationNotMatch")
        metagenerationNotMatch = try number(prefix + "MetagenerationNotMatch") ?? spelledByPython
    }

    init() {}

    var precondition: Precondition { Precondition(generation: generationMatch, metageneration: metagenerationMatch) }

    var hasNotMatch: Bool { generationNotMatch != nil || metagenerationNotMatch != nil }

    /// Whether `object` (nil: absent) passes every condition.
    func hold(for object: ObjectMetadata?) -> Bool {
        guard precondition.isSatisfied(by: object) else { return false }
        if let object {
            if generationNotMatch == object.generation || metagenerationNotMatch == object.metageneration {
                return false
            }
        } else if metagenerationNotMatch != nil {
            return false
        }
        return true
    }

    /// The precondition a change carries: the object's exact state when a `NotMatch` form needed it read.
    func precondition(given object: ObjectMetadata?, name: String) throws -> Precondition {
        guard hasNotMatch else { return precondition }
        guard hold(for: object) else {
            throw StorageError(
                .preconditionFailed, "Object \(name) does not meet the request's conditions. Nothing was changed.")
        }
        return object.map(Precondition.matches) ?? .doesNotExist
    }
}
