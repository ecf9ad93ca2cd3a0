import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StoreshCore
import StoreshLocal
import StoreshRules
import StoreshWire

/// The limits of one server: a request beyond them is a 4xx with a message, and changes nothing (rule V4).
package struct ServeLimits: Sendable {
    /// The largest object an upload may make (its bytes wait in a file beside the bucket until they land, never
    /// whole in memory).
    package var maximumObjectBytes: Int
    /// The largest JSON body (metadata, rules).
    package var maximumJSONBytes: Int
    /// Resumable uploads in progress at once.
    package var maximumUploadSessions: Int
    /// `--write-rate`, `--read-rate`: requests a second above which the server answers 429 (rule Q3).
    package var writesPerSecond: Int?
    package var readsPerSecond: Int?

    package init(maximumObjectBytes: Int = 256 << 20, maximumJSONBytes: Int = 2 << 20, maximumUploadSessions: Int = 256)
    {
        self.maximumObjectBytes = maximumObjectBytes
        self.maximumJSONBytes = maximumJSONBytes
        self.maximumUploadSessions = maximumUploadSessions
    }
}

/// One request as the handlers read it.
struct Exchange {
    var request: Request
    let endpoint: Endpoint
    /// The bucket the path names (the first one served, for paths that name none).
    let bucket: ServedBucket
    let query: QueryParameters
    /// `http://HOST:PORT` as the client reached the server, for the links and upload URLs it is given.
    let baseURL: String

    var method: HTTPRequest.Method { request.method }
    func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
}

/// The HTTP API of `storesh serve` over its buckets: the Cloud Storage JSON API, the Firebase v0 API and the
/// emulator's internal endpoints (rules V1–V4, V6). Storage semantics stay in the bucket; this layer reads requests,
/// decides who makes them, and writes answers in each API's shapes.
final class StorageAPI: Sendable {
    let buckets: ServedBuckets
    let uploads: UploadSessions
    /// The XML API's multipart uploads in progress.
    let multipartUploads: MultipartUploads
    let limits: ServeLimits
    /// The requests answered, for the page's request log.
    let journal = RequestJournal()
    /// This server's page token (`OriginPolicy.administrationRefusal`).
    let pageToken = OriginPolicy.newPageToken()
    /// The page's live event streams open now (`OriginPolicy.maximumEventStreams`).
    let eventStreams = StreamCount(limit: OriginPolicy.maximumEventStreams)

    /// Where spools make their files: beside the bucket.
    let spoolDirectory: String
    /// What signed URLs' signatures are checked against, when the server was given a key (`SignedURL`).
    let signingKey: SignedURLKey?
    /// The request rates the server plays (rule Q3).
    let rates: ServiceRates

    /// Whether a write on the JSON and XML APIs makes a bucket that does not exist (the v0 API's always do).
    let createsBucketsOnEveryWrite: Bool

    /// The storage semantics the routes ask of the buckets (compose, copy, move, restore).
    let storage: StorageService

    init(
        buckets: ServedBuckets, limits: ServeLimits, signingKey: SignedURLKey?, createsBucketsOnEveryWrite: Bool = false
    ) {
        self.createsBucketsOnEveryWrite = createsBucketsOnEveryWrite
        self.buckets = buckets
        self.signingKey = signingKey
        self.limits = limits
        uploads = UploadSessions(
            maximumSessions: limits.maximumUploadSessions, maximumObjectBytes: Int64(limits.maximumObjectBytes))
        multipartUploads = MultipartUploads(
            maximumUploads: limits.maximumUploadSessions, maximumObjectBytes: Int64(limits.maximumObjectBytes))
        rates = ServiceRates(writesPerSecond: limits.writesPerSecond, readsPerSecond: limits.readsPerSecond)
        let primary = buckets.primary.path
        spoolDirectory =
            (primary as NSString).deletingLastPathComponent.isEmpty
            ? "." : (primary as NSString).deletingLastPathComponent
        storage = StorageService(spoolDirectory: spoolDirectory, maximumObjectBytes: Int64(limits.maximumObjectBytes))
    }

    func respond(to request: Request) async -> Answer {
        let firebase = request.uri.path.hasPrefix("/v0")
        var endpoint: Endpoint?
        do {
            // A body in a coding this server does not undo would be stored as it came (RFC 9112: 501).
            if let coding = request.headers[.transferEncoding],
                coding.lowercased().trimmingCharacters(in: .whitespaces) != "chunked"
            {
                throw HTTPFailure(
                    .notImplemented, reason: "notImplemented",
                    "Transfer-Encoding '\(coding)' is not supported: storesh serve takes bodies as they are or chunked; nothing was done."
                )
            }
            // A signed URL is on the XML API's path (/BUCKET/NAME), known by its query; so is every path that is not
            // one of the JSON or Firebase APIs' (rule V7).
            if SignedURL.isSigned(query: request.uri.query) { return try await respondXML(to: request) }
            guard var found = try Endpoint(path: request.uri.path) else {
                guard XMLPath.isXML(request.uri.path) else {
                    throw HTTPFailure.notFound("Not Found: storesh serve has no endpoint at \(request.uri.path).")
                }
                return try await respondXML(to: request)
            }
            if case .bucket(let name) = found, request.method == .get || request.method == .head,
                try QueryParameters(request.uri.query).flag("softDeleted")
            {
                found = .softDeletedBucket(name)
            }
            endpoint = found
            try rates.admit(request.method, found)
            let served: ServedBucket
            do {
                served =
                    try found.bucket.map { name in
                        // Rule V6: a write makes its bucket on the Firebase v0 API, as the emulator; on the JSON API, as
                        // on Cloud Storage, a bucket that does not exist is a 404 (unless --create-buckets-on-write).
                        try buckets.bucket(
                            named: name,
                            creating: found.writes(request.method) && (found.isFirebase || createsBucketsOnEveryWrite))
                    } ?? buckets.primary
            } catch let failure as HTTPFailure
                where failure.status == .notFound && found.isFirebase && request.method == .get
            {
                // The Firebase emulator lists a bucket no one has written to yet as empty, as an app's second
                // bucket is before its first upload; its objects are not found.
                if case .firebaseObjects = found {
                    return Reply.json(FirebaseWire.listDocument(ListPage(), bucket: found.bucket ?? ""))
                }
                throw failure
            }
            var exchange = Exchange(
                request: request, endpoint: found, bucket: served, query: try QueryParameters(request.uri.query),
                baseURL: "http://" + (request.head.authority ?? "127.0.0.1"))
            if found == .batch { return try await respondBatch(&exchange) }
            return found.isFirebase || found == .setRules || found == .reset
                ? try await respondFirebase(&exchange) : try await respondCloudStorage(&exchange)
        } catch let failure as HTTPFailure {
            return Reply.failure(failure, firebase: firebase)
        } catch let error as StorageError {
            return Reply.failure(
                HTTPFailure(
                    error, bucket: endpoint?.bucket ?? buckets.primary.name, object: endpoint?.objectName,
                    firebase: firebase),
                firebase: firebase)
        } catch {
            return Reply.failure(
                HTTPFailure(.internalServerError, reason: "backendError", "\(error)"), firebase: firebase)
        }
    }

    // MARK: Request bodies

    /// The whole body, refused with 413 beyond `limit` (before it is read, when its length is declared).
    func body(_ exchange: inout Exchange, limit: Int, what: String) async throws -> Data {
        let tooLarge = HTTPFailure(
            .contentTooLarge, reason: "uploadTooLarge",
            "The \(what) is larger than \(limit) bytes, the limit of this server; nothing was changed.")
        if let declared = exchange.request.headers[.contentLength].flatMap(Int.init), declared > limit {
            throw tooLarge
        }
        let buffer: ByteBuffer
        do {
            buffer = try await exchange.request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        } catch {
            throw Self.unreadableBody(error)
        }
        try Self.checkComplete(exchange, received: Int64(buffer.readableBytes))
        return Data(buffer.readableBytesView)
    }

    /// Streams the body into `spool`, dropping its first `skipping` bytes (a chunk sent again overlaps what was
    /// kept), and refuses with `tooLarge` as soon as the spool would hold more than `limit` bytes — before reading
    /// when the declared length says so. Returns the body's length. On failure the spool is as it was.
    @discardableResult
    func receive(
        _ exchange: inout Exchange, into spool: Spool, limit: Int64, skipping: Int64 = 0,
        tooLarge: @autoclosure () -> HTTPFailure
    ) async throws -> Int64 {
        let start = spool.size
        // The declared length is the client's: compared with the room left rather than added to what is kept, so
        // that no length can overflow (each side is a difference of two numbers that are not negative).
        if let declared = exchange.request.headers[.contentLength].flatMap(Int64.init), declared >= 0, skipping >= 0,
            declared - skipping > limit - start
        {
            throw tooLarge()
        }
        var length: Int64 = 0
        do {
            for try await piece in exchange.request.body {
                let count = Int64(piece.readableBytes)
                let kept = max(0, min(count, length + count - skipping))
                length += count
                guard kept > 0 else { continue }
                guard spool.size + kept <= limit else { throw tooLarge() }
                try piece.withUnsafeReadableBytes { bytes in
                    try spool.append(UnsafeRawBufferPointer(rebasing: bytes[Int(count - kept)...]))
                }
            }
            try Self.checkComplete(exchange, received: length)
        } catch {
            try? spool.truncate(to: start)
            if error is HTTPFailure || error is StorageError { throw error }
            throw Self.unreadableBody(error)
        }
        return length
    }

    /// A resumable upload's chunk, received into its session's spool (as `receive` does) and then `check`ed by its
    /// count of bytes. On any failure the spool is as it was, and the session goes back to work, or ends when the
    /// chunk passed the object limit (the upload cannot succeed). Returns the chunk's length.
    @discardableResult
    func receiveChunk(
        _ exchange: inout Exchange, session id: String, into spool: Spool, limit: Int64, skipping: Int64,
        tooLarge: @autoclosure () -> HTTPFailure, check: (Int64) throws -> Void = { _ in }
    ) async throws -> Int64 {
        let sizeBefore = spool.size
        do {
            let length = try await receive(
                &exchange, into: spool, limit: limit, skipping: skipping, tooLarge: tooLarge())
            try check(length)
            return length
        } catch {
            try? spool.truncate(to: sizeBefore)
            let over = (error as? HTTPFailure)?.status == .contentTooLarge
            try? uploads.withSession(id) { $0.machine.chunkFailed(tooLarge: over) }
            throw error
        }
    }

    /// A body that ended before the length its request declared.
    static func checkComplete(_ exchange: Exchange, received: Int64) throws {
        if let declared = exchange.request.headers[.contentLength].flatMap(Int64.init), received < declared {
            throw HTTPFailure.badRequest(
                "The request's body was cut short: \(received) of the \(declared) bytes its Content-Length declares arrived; nothing was changed."
            )
        }
    }

    /// A body the server could not read (a malformed chunk size, a connection closed mid-body): the client's.
    static func unreadableBody(_ error: any Error) -> HTTPFailure {
        HTTPFailure.badRequest(
            "The request's body could not be read (\(error)): it is malformed or was cut short; nothing was changed.")
    }

    /// A request whose body is an object's whole content, received into a spool of its own.
    func receiveObject(_ exchange: inout Exchange) async throws -> SpooledContent {
        let spool = Spool(directory: spoolDirectory)
        try await receive(&exchange, into: spool, limit: Int64(limits.maximumObjectBytes), tooLarge: objectTooLarge())
        return try spool.content()
    }

    /// A `multipart/related` upload's body (metadata and content), received into a spool of its own.
    func receiveMultipart(_ exchange: inout Exchange) async throws -> MultipartUpload {
        let contentType = exchange.request.headers[.contentType]
        // Refused before any byte is read when it cannot be a multipart upload.
        guard contentType?.lowercased().hasPrefix("multipart/related") == true else {
            throw HTTPFailure.badRequest(
                "A multipart upload's Content-Type must be multipart/related with a boundary, not '\(contentType ?? "")'."
            )
        }
        let spool = Spool(directory: spoolDirectory)
        try await receive(
            &exchange, into: spool, limit: Int64(limits.maximumObjectBytes + limits.maximumJSONBytes) + 4096,
            tooLarge: objectTooLarge())
        let parts = try MultipartUpload(
            spool: spool, contentType: contentType, maximumMetadataBytes: limits.maximumJSONBytes)
        guard parts.content.size <= limits.maximumObjectBytes else { throw objectTooLarge(parts.content.size) }
        return parts
    }

    /// The content of an object, through a spool (in memory when small, else in a file): the whole object, checked
    /// against its MD5, or only the one range the request's `Range` asks for (`partial`), read alone, so that a range
    /// costs its own size and not the object's (issue 55).
    func download(
        _ name: ObjectName, generation: Int64? = nil, in bucket: ServedBucket, request: HTTPFields
    ) throws -> Download {
        // The range is read from the size the read finds, in the same state of the bucket; one past the end is
        // answered 416 after a read of nothing.
        let header = request[.range]
        var unsatisfiable: HTTPFailure?
        let bytes = { (size: Int64) -> Range<Int64>? in
            do {
                return try ByteRange.parse(header, size: Int(size)).map { Int64($0.lowerBound)..<Int64($0.upperBound) }
            } catch let failure as HTTPFailure {
                unsatisfiable = failure
                return 0..<0
            } catch {
                return nil
            }
        }
        let read = try storage.read(name, generation: generation, in: bucket, range: bytes)
        if let unsatisfiable { throw unsatisfiable }
        return Download(object: read.object, content: read.content, partial: read.partial)
    }

    /// What a download read: the object, and its content whole or, with `partial`, those bytes of it.
    struct Download {
        var object: ObjectMetadata
        var content: SpooledContent
        var partial: Range<Int64>?
    }

    func jsonBody(_ exchange: inout Exchange, what: String) async throws -> ObjectMetadataBody {
        try ObjectMetadataBody(json: try await body(&exchange, limit: limits.maximumJSONBytes, what: what), what: what)
    }

    /// The size an upload announces in the first of `headers` it has (nil when none), refused beyond the limit.
    func announcedSize(_ exchange: Exchange, headers: [String]) throws -> Int64? {
        guard let (header, text) = headers.lazy.compactMap({ name in exchange.header(name).map { (name, $0) } }).first
        else {
            return nil
        }
        guard let size = Int64(text), size >= 0 else {
            throw HTTPFailure.badRequest("Invalid \(header) '\(text)': it must be a whole number of bytes.")
        }
        guard size <= limits.maximumObjectBytes else { throw objectTooLarge(size) }
        return size
    }

    /// The refusal of an object over the limit (its size when known and over the limit).
    func objectTooLarge(_ size: Int64? = nil) -> HTTPFailure {
        let what =
            size.flatMap { $0 > limits.maximumObjectBytes ? "The object would be \($0) bytes, more than" : nil }
            ?? "The object is larger than"
        return HTTPFailure(
            .contentTooLarge, reason: "uploadTooLarge",
            "\(what) \(limits.maximumObjectBytes) bytes, the limit of this server (storesh serve --max-object-size); nothing was changed."
        )
    }

    /// A name a request gives, checked by rule P5.
    func objectName(_ text: String?) throws -> ObjectName {
        guard let text else { throw HTTPFailure.required("Required parameter: name (the object's name).") }
        return try ObjectName(text)
    }

    // MARK: Reads shared by both APIs

    /// Writes an upload's content as its object, in one change: checksums are checked first, then the request's
    /// conditions and (on the v0 API) the rules, on the object as it is when the change runs.
    func finishUpload(_ upload: UploadRequest, content: SpooledContent) async throws -> ObjectMetadata {
        for expected in [upload.expectedCRC32C, upload.lastRequestCRC32C].compactMap({ $0 })
        where expected != content.crc32cBase64 {
            throw StorageError(
                .nonMatchingChecksum,
                "Provided CRC32C \"\(expected)\" doesn't match calculated CRC32C \"\(content.crc32cBase64)\"; nothing was written."
            )
        }
        if let expected = upload.options.expectedMD5, expected != content.md5Base64 {
            throw StorageError(
                .nonMatchingChecksum,
                "Provided MD5 hash \"\(expected)\" doesn't match calculated MD5 hash \"\(content.md5Base64)\"; nothing was written."
            )
        }
        var options = upload.options
        if upload.firebase, options.customMetadata[downloadTokensKey] == nil {
            options.customMetadata[downloadTokensKey] = UUID().uuidString.lowercased()
        }
        let session = try rulesSession(for: upload.caller, in: upload.bucket)
        let conditions = upload.conditions
        let name = upload.name
        return try await upload.bucket.change { [options] transaction in
            let target = session?.guarding(transaction) ?? transaction
            var precondition = conditions.precondition
            if conditions.hasNotMatch {
                let existing = try await transaction.metadataIfPresent(of: name)
                precondition = try conditions.precondition(given: existing, name: name.rawValue)
            }
            return try await target.write(from: content, to: name, options: options, precondition: precondition)
        }
    }

    /// Lands a resumable upload whose last byte has arrived (its session `id`'s machine is landing), on any API, with one
    /// policy: the object is written and its resource (`resource`) is the session's final answer; a failure that
    /// sending again cannot mend (a condition, a checksum, the rules, a name or size refused) is its final answer
    /// too, kept for a client that asks again; a busy or failing disk (or any unforeseen error) puts the session
    /// back to work, so that the client may finish it again, and is thrown.
    func landUpload(
        session id: String, _ upload: UploadRequest, spool: Spool, firebase: Bool,
        resource: (ObjectMetadata) -> JSONValue
    ) async throws -> (status: HTTPResponse.Status, body: JSONValue) {
        let answer: (status: HTTPResponse.Status, body: JSONValue)
        do {
            answer = (.ok, resource(try await finishUpload(upload, content: try spool.content())))
        } catch let error as StorageError where error.code != .unavailable && error.code != .internalError {
            let failure = HTTPFailure(
                error, bucket: upload.bucket.name, object: upload.name.rawValue, firebase: firebase)
            answer = (failure.status, failure.body(firebase: firebase))
        } catch {
            try? uploads.withSession(id) { $0.machine.landingFailed() }
            throw error
        }
        try? uploads.withSession(id) {
            $0.machine.landed(UploadMachine.Final(status: Int(answer.status.code), body: answer.body))
        }
        return answer
    }

    /// A resumable upload's refusal, in the words of its protocol.
    func failure(_ refusal: UploadMachine.Refusal, upload id: String, firebase: Bool) -> HTTPFailure {
        switch refusal {
        case .busy:
            return UploadSessions.busy
        case .cancelled:
            if firebase { return HTTPFailure.badRequest("The upload \(id) was cancelled.") }
            return HTTPFailure(
                HTTPResponse.Status(code: 499, reasonPhrase: "Client Closed Request"), reason: "cancelled",
                "The upload \(id) was cancelled.")
        case .ended:
            return HTTPFailure.badRequest("The upload \(id) has ended: ask for its object.")
        case .startsPastReceived(let first, let received):
            let start = firebase ? "X-Goog-Upload-Offset is \(first)" : "Content-Range starts at byte \(first)"
            return HTTPFailure.badRequest("\(start), but only \(received) bytes of the upload have been received.")
        case .sizeChanged(let declared, let given):
            return HTTPFailure.badRequest(
                "Content-Range gives the object's size as \(given) bytes, but the upload was started for \(declared).")
        case .tooLarge(let size):
            return objectTooLarge(size)
        case .pastDeclaredSize(let declared):
            if firebase {
                return HTTPFailure.badRequest(
                    "The upload would have more than the \(declared) bytes announced at its start.")
            }
            return HTTPFailure.badRequest("Content-Range ends past the object's size of \(declared) bytes.")
        case .incomplete(let received, let declared):
            if firebase {
                return HTTPFailure.badRequest(
                    "The upload cannot be finalized: \(received) of the \(declared) bytes announced have been received."
                )
            }
            return HTTPFailure.badRequest(
                "The upload was started for \(declared) bytes, but has \(received) and its last request gave no Content-Range."
            )
        }
    }

    /// Decides at an upload's start what its end will be decided on (the service checks a resumable upload's
    /// rules when it starts, so a refused client sends no bytes): `create` of the object as announced.
    func authorizeUploadStart(_ upload: UploadRequest, declaredSize: Int64?) async throws {
        // A size over the limit is refused as too large before the rules see it (their arithmetic on it too).
        if let declaredSize, declaredSize > limits.maximumObjectBytes { throw objectTooLarge(declaredSize) }
        guard let session = try rulesSession(for: upload.caller, in: upload.bucket) else { return }
        let existing = try await upload.bucket.reader().metadataIfPresent(of: upload.name)
        try session.authorizeCreate(
            of: upload.name, in: upload.bucket.name, size: declaredSize ?? 0, options: upload.options,
            existing: existing)
    }
}
