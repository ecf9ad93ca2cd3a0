import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StoreshCore
import StoreshLocal
import StoreshRules

/// The limits of one server: a request beyond them is a 4xx with a message, and changes nothing (rule V4).
public struct ServeLimits: Sendable {
    /// The largest object an upload may make; its content is held in memory until it lands.
    public var maximumObjectBytes: Int
    /// The largest JSON body (metadata, rules).
    public var maximumJSONBytes: Int
    /// Resumable uploads in progress at once.
    public var maximumUploadSessions: Int

    public init(maximumObjectBytes: Int = 256 << 20, maximumJSONBytes: Int = 2 << 20, maximumUploadSessions: Int = 256) {
        self.maximumObjectBytes = maximumObjectBytes
        self.maximumJSONBytes = maximumJSONBytes
        self.maximumUploadSessions = maximumUploadSessions
    }
}

/// One request as the handlers read it.
struct Exchange {
    var request: Request
    let endpoint: Endpoint
    let query: QueryParameters
    /// `http://HOST:PORT` as the client reached the server, for the links and upload URLs it is given.
    let baseURL: String

    var method: HTTPRequest.Method { request.method }
    func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
}

/// The HTTP API of `storesh serve` over one served bucket: the Cloud Storage JSON API, the Firebase v0 API and the
/// emulator's internal endpoints (rules V1–V4). Storage semantics stay in the bucket; this layer reads requests,
/// decides who makes them, and writes answers in each API's shapes.
final class StorageAPI: Sendable {
    let bucket: ServedBucket
    let uploads: UploadSessions
    let limits: ServeLimits

    init(bucket: ServedBucket, limits: ServeLimits) {
        self.bucket = bucket
        self.limits = limits
        uploads = UploadSessions(maximumSessions: limits.maximumUploadSessions)
    }

    func respond(to request: Request) async -> Answer {
        let firebase = request.uri.path.hasPrefix("/v0")
        var endpoint: Endpoint?
        do {
            guard let found = try Endpoint(path: request.uri.path) else {
                throw HTTPFailure.notFound("Not Found: storesh serve has no endpoint at \(request.uri.path).")
            }
            endpoint = found
            if let name = found.bucket, name != bucket.name {
                throw HTTPFailure(
                    .notFound, reason: "notFound",
                    "The specified bucket does not exist: this server serves gs://\(bucket.name) only, not gs://\(name).")
            }
            var exchange = Exchange(
                request: request, endpoint: found, query: try QueryParameters(request.uri.query),
                baseURL: "http://" + (request.head.authority ?? "127.0.0.1"))
            if found == .batch { return try await respondBatch(&exchange) }
            return found.isFirebase || found == .setRules || found == .reset
                ? try await respondFirebase(&exchange) : try await respondCloudStorage(&exchange)
        } catch let failure as HTTPFailure {
            return Reply.failure(failure, firebase: firebase)
        } catch let error as StorageError {
            return Reply.failure(
                HTTPFailure(error, bucket: bucket.name, object: endpoint?.objectName, firebase: firebase), firebase: firebase)
        } catch {
            return Reply.failure(HTTPFailure(.internalServerError, reason: "backendError", "\(error)"), firebase: firebase)
        }
    }

    // MARK: Request bodies

    /// The whole body, refused with 413 beyond `limit` (before it is read, when its length is declared).
    func body(_ exchange: inout Exchange, limit: Int, what: String) async throws -> Data {
        let tooLarge = HTTPFailure(
            .contentTooLarge, reason: "uploadTooLarge",
            "The \(what) is larger than \(limit) bytes, the limit of this server; nothing was changed.")
        if let declared = exchange.request.headers[.contentLength].flatMap(Int.init), declared > limit { throw tooLarge }
        do {
            let buffer = try await exchange.request.body.collect(upTo: limit)
            return Data(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            throw tooLarge
        }
    }

    func jsonBody(_ exchange: inout Exchange, what: String) async throws -> ObjectMetadataBody {
        try ObjectMetadataBody(json: try await body(&exchange, limit: limits.maximumJSONBytes, what: what), what: what)
    }

    /// The size an upload announces in the first of `headers` it has (nil when none), refused beyond the limit.
    func announcedSize(_ exchange: Exchange, headers: [String]) throws -> Int64? {
        guard let (header, text) = headers.lazy.compactMap({ name in exchange.header(name).map { (name, $0) } }).first else {
            return nil
        }
        guard let size = Int64(text), size >= 0 else {
            throw HTTPFailure.badRequest("Invalid \(header) '\(text)': it must be a whole number of bytes.")
        }
        guard size <= limits.maximumObjectBytes else { throw objectTooLarge(size) }
        return size
    }

    /// The refusal of an object over the limit (its size when known).
    func objectTooLarge(_ size: Int64? = nil) -> HTTPFailure {
        let what = size.map { "The object would be \($0) bytes, more than" } ?? "The object is larger than"
        return HTTPFailure(
            .contentTooLarge, reason: "uploadTooLarge",
            "\(what) \(limits.maximumObjectBytes) bytes, the limit of this server (storesh serve --max-object-size); nothing was changed.")
    }

    /// A name a request gives, checked by rule P5.
    func objectName(_ text: String?) throws -> ObjectName {
        guard let text else { throw HTTPFailure.required("Required parameter: name (the object's name).") }
        return try ObjectName(text)
    }

    // MARK: Reads shared by both APIs

    /// The object as it is, or a 404; `generation` pins a generation (this server keeps only the live one).
    func currentObject(_ name: ObjectName, generation: Int64?) throws -> ObjectMetadata {
        let object = try bucket.reader.currentMetadata(of: name)
        if let generation, generation != object.generation { throw StorageError.objectNotFound(name.rawValue) }
        return object
    }

    /// Writes an upload's content as its object, in one change: checksums are checked first, then the request's
    /// conditions and (on the v0 API) the rules, on the object as it is when the change runs.
    func finishUpload(_ upload: UploadRequest, content: Data) async throws -> ObjectMetadata {
        if let expected = upload.expectedCRC32C, expected != CRC32C.base64(of: content) {
            throw StorageError(
                .nonMatchingChecksum,
                "Provided CRC32C \"\(expected)\" doesn't match calculated CRC32C \"\(CRC32C.base64(of: content))\"; nothing was written.")
        }
        if let expected = upload.options.expectedMD5, expected != ContentHash.md5Base64(content) {
            throw StorageError(
                .nonMatchingChecksum,
                "Provided MD5 hash \"\(expected)\" doesn't match calculated MD5 hash \"\(ContentHash.md5Base64(content))\"; nothing was written.")
        }
        var options = upload.options
        if upload.firebase, options.customMetadata[downloadTokensKey] == nil {
            options.customMetadata[downloadTokensKey] = UUID().uuidString.lowercased()
        }
        let session = try rulesSession(for: upload.caller)
        let conditions = upload.conditions
        let name = upload.name
        return try await bucket.change { [options] transaction in
            let target = session?.guarding(transaction) ?? transaction
            var precondition = conditions.precondition
            if conditions.hasNotMatch {
                let existing = try await transaction.metadataIfPresent(of: name)
                precondition = try conditions.precondition(given: existing, name: name.rawValue)
            }
            return try await target.write(content, to: name, options: options, precondition: precondition)
        }
    }
}

