import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire
import Synchronization

/// The XML API's multipart uploads in progress (rule V7), as `transfer_manager.upload_chunks_concurrently` and S3
/// tools make them: parts sent in any order, each into a spool of its own, then put together in the order the
/// completion names, as one write, so a half upload is never visible; an abort, or an hour idle, lets the parts go.
/// Each upload's life is an `UploadMachine` of parts: a part that arrives while the upload completes is asked to
/// retry, and one that arrives after it ended is not kept.
final class MultipartUploads: Sendable {
    struct Upload: Sendable {
        var request: UploadRequest
        var parts: [Int: SpooledContent] = [:]
        var machine: UploadMachine
        var lastUsed: Date
    }

    /// The service's limit of parts per upload, numbered 1 to this.
    static let maximumParts = 10_000
    /// The least a part but the last may hold, as on the service.
    static let minimumPartBytes: Int64 = 5 << 20

    private let uploads = Mutex<[String: Upload]>([:])
    private let maximumUploads: Int
    private let maximumObjectBytes: Int64

    init(maximumUploads: Int, maximumObjectBytes: Int64) {
        self.maximumUploads = maximumUploads
        self.maximumObjectBytes = maximumObjectBytes
    }

    static let noSuchUpload = SignedURL.refusal(
        .notFound, code: "NoSuchUpload",
        "The specified multipart upload does not exist: it was completed, aborted, or idle for an hour.")

    static let busy = SignedURL.refusal(
        .serviceUnavailable, code: "ServiceUnavailable",
        "The multipart upload is being completed; ask again in a moment.")

    /// A refusal of the machine, in the XML API's words.
    static func failure(_ refusal: UploadMachine.Refusal) -> HTTPFailure {
        refusal == .busy ? busy : noSuchUpload
    }

    /// Starts an upload; its id.
    func start(_ request: UploadRequest) throws -> String {
        let now = Date()
        return try uploads.withLock { uploads in
            Self.forgetIdle(&uploads, now: now)
            guard uploads.count < maximumUploads else {
                throw SignedURL.refusal(
                    .tooManyRequests, code: "SlowDown",
                    "\(maximumUploads) multipart uploads are in progress; complete or abort one first (an upload idle for an hour ends by itself)."
                )
            }
            let id = UploadSessions.newID()
            uploads[id] = Upload(
                request: request, machine: UploadMachine(.parts, limit: maximumObjectBytes), lastUsed: now)
            return id
        }
    }

    /// Ends the uploads idle past the limit (but those a request is at work on), and lets their parts go.
    private static func forgetIdle(_ uploads: inout [String: Upload], now: Date) {
        for id in Array(uploads.keys) where now.timeIntervalSince(uploads[id]!.lastUsed) >= UploadSessions.idleLimit {
            uploads[id]!.machine.expire()
            if !uploads[id]!.machine.inProgress { uploads[id] = nil }
        }
    }

    /// Runs `event` on the machine of the upload `id` of `name` in `bucket`, under the lock; an upload that ended
    /// is let go.
    private func withUpload<T>(
        _ id: String, of name: ObjectName? = nil, in bucket: ServedBucket? = nil, _ event: (inout Upload) throws -> T
    ) throws -> T {
        try uploads.withLock { uploads in
            guard var upload = uploads[id], upload.machine.inProgress,
                bucket.map({ upload.request.bucket === $0 }) ?? true, name.map({ upload.request.name == $0 }) ?? true
            else { throw Self.noSuchUpload }
            upload.lastUsed = Date()
            defer { uploads[id] = upload.machine.inProgress ? upload : nil }
            do { return try event(&upload) } catch let refusal as UploadMachine.Refusal { throw Self.failure(refusal) }
        }
    }

    /// The upload's request, when `id` is an upload of `name` in `bucket` in progress.
    func request(_ id: String, of name: ObjectName, in bucket: ServedBucket) throws -> UploadRequest {
        try withUpload(id, of: name, in: bucket) { $0.request }
    }

    /// A part's bytes begin to arrive.
    func partBegins(_ id: String) throws {
        try withUpload(id) { upload in try upload.machine.partBegins() }
    }

    /// A part's bytes have arrived (`content`), or failed to (nil). A part that arrived is kept while the upload is
    /// open (a part sent again replaces the one before, as on the service); while it is being completed the client
    /// is asked to retry, and after it ended told there is no such upload.
    func partArrived(_ content: SpooledContent?, number: Int, of id: String) throws {
        try uploads.withLock { uploads in
            guard var upload = uploads[id] else { throw Self.noSuchUpload }
            defer { uploads[id] = upload }
            upload.lastUsed = Date()
            guard let content else { return upload.machine.partFailed() }
            do {
                try upload.machine.partArrived()
            } catch let refusal as UploadMachine.Refusal {
                throw Self.failure(refusal)
            }
            upload.parts[number] = content
        }
    }

    func parts(of id: String) throws -> [Int: SpooledContent] {
        try withUpload(id) { $0.parts }
    }

    /// The uploads in progress of objects of `bucket` under `prefix`, by name (then by when they began, as their ids
    /// do not say).
    func inProgress(in bucket: ServedBucket, prefix: String) -> [(key: String, uploadID: String)] {
        let now = Date()
        return uploads.withLock { uploads in
            uploads.filter {
                $0.value.request.bucket === bucket
                    && now.timeIntervalSince($0.value.lastUsed) < UploadSessions.idleLimit
            }
            .filter { $0.value.machine.inProgress && $0.value.request.name.rawValue.utf8.starts(with: prefix.utf8) }
            .sorted { NameBytes.precedes($0.value.request.name.rawValue, $1.value.request.name.rawValue) }
            .map { (key: $0.value.request.name.rawValue, uploadID: $0.key) }
        }
    }

    /// The client completes the upload: its parts as they are, to land. Until `landed` or `landingFailed`, no
    /// second completion, abort or part is taken.
    func complete(_ id: String) throws -> Upload {
        try withUpload(id) { upload in
            try upload.machine.complete()
            return upload
        }
    }

    /// The completed upload's object landed: the upload ends and its parts go.
    func landed(_ id: String) {
        uploads.withLock { uploads in
            uploads[id]?.machine.landed(nil)
            if uploads[id]?.machine.inProgress == false { uploads[id] = nil }
        }
    }

    /// The completion failed: the upload goes back to work, for the client to complete again or abort.
    func landingFailed(_ id: String) {
        uploads.withLock { uploads in
            uploads[id]?.machine.landingFailed()
            uploads[id]?.lastUsed = Date()
        }
    }

    /// The client aborts the upload: its parts go.
    func abort(_ id: String) throws {
        try withUpload(id) { upload in _ = try upload.machine.cancel() }
    }
}

extension StorageAPI {
    /// `POST /BUCKET/OBJECT?uploads`: a multipart upload begins, with the object's metadata from the headers.
    func startMultipart(_ exchange: Exchange, name: ObjectName) throws -> Answer {
        let id = try multipartUploads.start(try xmlUpload(exchange, name: name))
        return Reply.xml(
            CloudStorageXML.initiateMultipartUploadResult(
                bucket: exchange.bucket.name, key: name.rawValue, uploadID: id))
    }

    /// A request on a multipart upload: `PUT ?partNumber=N` sends a part, `POST` completes, `DELETE` aborts, `GET` lists
    /// the parts received.
    func multipartStep(_ exchange: inout Exchange, name: ObjectName, uploadID: String) async throws -> Answer {
        let request = try multipartUploads.request(uploadID, of: name, in: exchange.bucket)
        switch exchange.method {
        case .put:
            guard let number = try exchange.query.integer("partNumber"),
                (1...Int64(MultipartUploads.maximumParts)).contains(number)
            else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "partNumber must be 1 to \(MultipartUploads.maximumParts).")
            }
            try multipartUploads.partBegins(uploadID)
            let content: SpooledContent
            do {
                content = try await receiveObject(&exchange)
            } catch {
                try? multipartUploads.partArrived(nil, number: Int(number), of: uploadID)
                throw error
            }
            // The part's hashes as the client gives them (Content-MD5, x-goog-hash), each checked: a part damaged on
            // the way is refused, the upload kept.
            let hashes = Self.declaredHashes(exchange.request.headers)
            for (kind, declared, actual) in [
                ("MD5", hashes.md5, content.md5Base64), ("CRC32C", hashes.crc32c, content.crc32cBase64),
            ] {
                if let declared, declared != actual {
                    try? multipartUploads.partArrived(nil, number: Int(number), of: uploadID)
                    throw SignedURL.refusal(
                        .badRequest, code: "BadDigest", "The part's \(kind) is not the one given.",
                        details: "Provided \(kind) \(declared) does not match calculated \(kind) \(actual).")
                }
            }
            try multipartUploads.partArrived(content, number: Int(number), of: uploadID)
            return Reply.empty(
                .ok,
                headers: [
                    .eTag: CloudStorageXML.entityTag(md5Base64: content.md5Base64),
                    HTTPField.Name("X-Goog-Hash")!: "crc32c=\(content.crc32cBase64),md5=\(content.md5Base64)",
                ])
        case .get, .head:
            // A page of at most `max-parts` (1,000 at most, as on the service), the parts after `part-number-marker`.
            let largest = Int64(CloudStorageXML.largestPartsPage)
            let asked = try exchange.query.integer("max-parts") ?? largest
            guard asked >= 0 else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "max-parts must be a whole number from 0 to \(largest).")
            }
            let marker = try exchange.query.integer("part-number-marker") ?? 0
            guard marker >= 0 else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "part-number-marker must be a part number, 0 or more.")
            }
            let after = try multipartUploads.parts(of: uploadID).filter { Int64($0.key) > marker }.sorted {
                $0.key < $1.key
            }
            let limit = Int(min(asked, largest))
            let parts = after.prefix(limit).map { number, content in
                CloudStorageXML.UploadedPart(
                    number: number, entityTag: CloudStorageXML.entityTag(md5Base64: content.md5Base64),
                    size: content.size)
            }
            let page = CloudStorageXML.PartsPage(marker: Int(marker), maximum: limit, truncated: after.count > limit)
            return Reply.xml(
                CloudStorageXML.listPartsResult(
                    bucket: exchange.bucket.name, key: name.rawValue, uploadID: uploadID, parts: parts, page: page))
        case .delete:
            try multipartUploads.abort(uploadID)
            return Reply.empty(.noContent)
        case .post:
            let named = try CloudStorageXML.completedParts(
                try await body(&exchange, limit: limits.maximumJSONBytes, what: "CompleteMultipartUpload document"))
            let upload = try multipartUploads.complete(uploadID)
            do {
                let object = try await completeMultipart(upload, parts: named, request: request)
                multipartUploads.landed(uploadID)
                let location = "\(exchange.baseURL)/\(exchange.bucket.name)/\(NameBytes.percentEncoded(name.rawValue))"
                return Reply.xml(
                    CloudStorageXML.completeMultipartUploadResult(
                        location: location, bucket: exchange.bucket.name, key: name.rawValue,
                        entityTag: CloudStorageXML.entityTag(md5Base64: object.md5Hash)),
                    headers: [HTTPField.Name("X-Goog-Generation")!: String(object.generation)])
            } catch {
                multipartUploads.landingFailed(uploadID)
                throw error
            }
        default:
            throw SignedURL.refusal(
                .methodNotAllowed, code: "MethodNotAllowed", "A multipart upload takes PUT, POST, GET or DELETE.")
        }
    }

    /// The parts named, in ascending order, each as the ETag the client was given says, put together in one spool a
    /// piece at a time and written as the object.
    private func completeMultipart(
        _ upload: MultipartUploads.Upload, parts named: [(number: Int, entityTag: String)], request: UploadRequest
    ) async throws -> ObjectMetadata {
        let whole = Spool(directory: spoolDirectory)
        var previous = 0
        for (index, (number, tag)) in named.enumerated() {
            guard (1...MultipartUploads.maximumParts).contains(number) else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument",
                    "PartNumber \(number) is not a part number (1 to \(MultipartUploads.maximumParts)).")
            }
            guard number > previous else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidPartOrder",
                    "The parts must be listed in ascending order of PartNumber (\(number) follows \(previous)).")
            }
            previous = number
            guard let part = upload.parts[number],
                Self.sameEntityTag(tag, CloudStorageXML.entityTag(md5Base64: part.md5Base64))
            else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidPart", "Part \(number) was not received, or its ETag is not \(tag).")
            }
            guard part.size <= Int64(limits.maximumObjectBytes) - whole.size else {
                throw objectTooLarge(whole.size + part.size)
            }
            guard index == named.count - 1 || part.size >= MultipartUploads.minimumPartBytes else {
                throw SignedURL.refusal(
                    .badRequest, code: "EntityTooSmall",
                    "Part \(number) holds \(part.size) bytes: every part but the last holds at least \(MultipartUploads.minimumPartBytes) bytes (5 MiB)."
                )
            }
            var offset: Int64 = 0
            // Bounded: each round copies at least one byte, up to the part's end.
            while offset < part.size {
                let piece = try part.read(offset: offset, length: Spool.pieceBytes)
                guard !piece.isEmpty else { break }
                try whole.append(piece)
                offset += Int64(piece.count)
            }
        }
        return try await finishUpload(request, content: try whole.content())
    }

    /// Whether two ETags name the same content, quoted or not.
    private static func sameEntityTag(_ given: String, _ expected: String) -> Bool {
        func bare(_ tag: String) -> String { tag.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        return bare(given).lowercased() == bare(expected).lowercased()
    }
}
