import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// A path of the Cloud Storage XML API: `/BUCKET` or `/BUCKET/OBJECT` (the object's name is the rest of the path,
/// `/` and all), as clients address it path-style (rule V7).
struct XMLPath: Sendable {
    let bucket: String
    let name: String?

    /// The first segments of the other APIs' paths: a path under one of them is never the XML API's (a bucket of
    /// such a name is reached by its JSON API path).
    static let otherAPIs: Set<Substring> = [
        "storage", "upload", "download", "resumable", "batch", "v0", "internal", "_storesh", "b",
    ]

    /// Whether a path that no other API has is the XML API's: not under another API's first segment.
    static func isXML(_ rawPath: String) -> Bool {
        guard let first = rawPath.dropFirst().split(separator: "/", omittingEmptySubsequences: false).first,
            !first.isEmpty
        else { return false }
        return !otherAPIs.contains(first)
    }

    /// Nil when the path names no bucket.
    init?(_ rawPath: String) throws {
        let path = rawPath.dropFirst()
        let slash = path.firstIndex(of: "/") ?? path.endIndex
        guard slash > path.startIndex else { return nil }
        bucket = try PercentEncoding.decode(path[..<slash], plusIsSpace: false, what: "the bucket name")
        let rest = slash < path.endIndex ? path[path.index(after: slash)...] : ""
        name = rest.isEmpty ? nil : try PercentEncoding.decode(rest, plusIsSpace: false, what: "the object name")
    }
}

/// The Cloud Storage XML API (rule V7), path-style, as clients use it beside the JSON API: objects read (`GET`,
/// `HEAD`, with `response-content-type` and `response-content-disposition`), written (`PUT`, its metadata in headers),
/// deleted (`DELETE`, 204); a bucket listed (`GET /BUCKET`, versions 1 and 2 of the listing); resumable uploads
/// started (`POST` with `x-goog-resumable: start`, 201 and the session's `Location`); multipart uploads (initiate,
/// parts, complete, abort, list parts); HTML form uploads under a V4 POST policy. A request by signed URL is checked
/// first (`SignedURL`); one without a signature is the administrator's, as every JSON API request here is. Answers
/// and refusals are the XML API's documents.
extension StorageAPI {
    func respondXML(to request: Request) async throws -> Answer {
        guard let path = try XMLPath(request.uri.path) else {
            throw SignedURL.refusal(.badRequest, code: "InvalidURI", "An XML API path is /BUCKET or /BUCKET/OBJECT.")
        }
        // Signed URLs are dated and expire by the server's clock: `--clock` moves it, so that a test can try expiry.
        if SignedURL.isSigned(query: request.uri.query) {
            try SignedURL.check(request, key: signingKey, now: buckets.primary.clock.now().date)
        }
        do {
            return try await respondXML(to: request, path)
        } catch let failure as HTTPFailure where failure.xml == nil {
            // The XML API answers in XML, naming the URL's own bucket and object; the headers (Retry-After) stay.
            var refusal = SignedURL.refusal(
                failure.status, code: failure.status == .notFound ? "NoSuchBucket" : Self.xmlCode(failure),
                failure.message)
            refusal.headers = failure.headers
            throw refusal
        } catch let error as StorageError {
            switch error.code {
            case .objectNotFound:
                throw SignedURL.refusal(
                    .notFound, code: "NoSuchKey", "The specified key does not exist.",
                    details: "No such object: \(path.bucket)/\(path.name ?? "")")
            case .bucketNotFound:
                throw SignedURL.refusal(
                    .notFound, code: "NoSuchBucket", "The specified bucket does not exist.", details: path.bucket)
            default:
                let failure = HTTPFailure(error, bucket: path.bucket, object: path.name, firebase: false)
                throw SignedURL.refusal(failure.status, code: Self.xmlCode(failure), failure.message)
            }
        }
    }

    /// The XML API's code for a refusal the JSON API would name by its reason.
    static func xmlCode(_ failure: HTTPFailure) -> String {
        switch failure.status {
        case .forbidden: "AccessDenied"
        case .preconditionFailed: "PreconditionFailed"
        case .badRequest: "InvalidArgument"
        case .conflict: "Conflict"
        case .tooManyRequests: "SlowDown"
        default: failure.reason
        }
    }

    private func respondXML(to request: Request, _ path: XMLPath) async throws -> Answer {
        let query = try QueryParameters(request.uri.query)
        // Reads and writes by the XML API are requests like any other: the rates count them (rule Q3).
        let endpoint: Endpoint =
            path.name.map { .object(bucket: path.bucket, name: $0) } ?? .objects(bucket: path.bucket)
        try rates.admit(request.method, endpoint)
        let writes = request.method == .put || request.method == .post
        let bucket = try buckets.bucket(named: path.bucket, creating: writes && createsBucketsOnEveryWrite)
        var exchange = Exchange(
            request: request, endpoint: endpoint, bucket: bucket, query: query,
            baseURL: "http://" + (request.head.authority ?? "127.0.0.1"))
        guard let rawName = path.name else {
            switch request.method {
            case .get, .head:
                if query["uploads"] != nil {
                    let uploads = multipartUploads.inProgress(in: bucket, prefix: query["prefix"] ?? "")
                    return Reply.xml(CloudStorageXML.listMultipartUploadsResult(bucket: bucket.name, uploads: uploads))
                }
                return try listXML(exchange)
            case .post: return try await postPolicyUpload(&exchange)
            default:
                throw SignedURL.refusal(
                    .methodNotAllowed, code: "MethodNotAllowed",
                    "A bucket's XML path takes GET (a listing) or POST (a form upload).")
            }
        }
        let name = try ObjectName(rawName)
        if let id = query["upload_id"] { return try await resumableChunk(&exchange, id: id) }
        if let id = query["uploadId"] { return try await multipartStep(&exchange, name: name, uploadID: id) }
        switch request.method {
        case .get, .head:
            let generation = try query.generation()
            let read = try download(name, generation: generation, in: bucket, request: request.headers)
            try CustomerKey.check(try CustomerKey(request.headers), reading: read.object)
            var object = read.object
            // A signed URL may ask for the answer's type and disposition (the stored object is not changed).
            if let type = query["response-content-type"] { object.contentType = type }
            if let disposition = query["response-content-disposition"] { object.contentDisposition = disposition }
            var answer = try Reply.media(
                object, content: read.content, partial: read.partial, request: request.headers,
                entityTag: CloudStorageXML.entityTag(md5Base64: object.md5Hash))
            // The custom metadata in headers, as the XML API gives it (a key is a header name: one that cannot be is left out).
            for (key, value) in object.customMetadata.sortedByKeyBytes {
                if let name = HTTPField.Name("x-goog-meta-" + key), !value.contains(where: \.isNewline) {
                    answer.headers[name] = value
                }
            }
            return answer
        case .put:
            let upload = try xmlUpload(exchange, name: name)
            let content = try await receiveObject(&exchange)
            let object = try await finishUpload(upload, content: content)
            return Reply.empty(.ok, headers: Self.xmlObjectHeaders(object))
        case .post:
            if query["uploads"] != nil { return try startMultipart(exchange, name: name) }
            guard exchange.header("x-goog-resumable")?.lowercased() == "start" else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument",
                    "A POST to an object's XML path starts a resumable upload (x-goog-resumable: start) or a multipart upload (?uploads)."
                )
            }
            let upload = try xmlUpload(exchange, name: name)
            let id = try uploads.start(upload, declaredSize: nil, spool: Spool(directory: spoolDirectory))
            return Reply.empty(.created, headers: [.location: "\(exchange.baseURL)\(request.uri.path)?upload_id=\(id)"])
        case .delete:
            let conditions = try Conditions(xmlHeaders: request.headers)
            let generation = try query.generation()
            try await bucket.change { transaction -> Void in
                if let generation, let versions = try StorageService.objectVersions(transaction, generation: generation)
                {
                    return try await versions.delete(
                        name, generation: generation, precondition: conditions.precondition)
                }
                try await transaction.delete(name, precondition: conditions.precondition)
            }
            return Reply.empty(.noContent)
        default:
            throw SignedURL.refusal(
                .methodNotAllowed, code: "MethodNotAllowed",
                "An object's XML path takes GET, HEAD, PUT, POST or DELETE.")
        }
    }

    /// The headers an XML write answers with: the object's ETag (its MD5 in hexadecimal) and generation.
    static func xmlObjectHeaders(_ object: ObjectMetadata) -> HTTPFields {
        var headers: HTTPFields = [
            .eTag: CloudStorageXML.entityTag(md5Base64: object.md5Hash),
            HTTPField.Name("X-Goog-Generation")!: String(object.generation),
            HTTPField.Name("X-Goog-Metageneration")!: String(object.metageneration),
        ]
        headers[HTTPField.Name("X-Goog-Hash")!] =
            (object.crc32c.map { "crc32c=\($0)," } ?? "") + "md5=\(object.md5Hash)"
        return headers
    }

    /// An object's metadata as the XML API gives it with a write: `Content-Type`, `Cache-Control`,
    /// `Content-Disposition`, `Content-Encoding`, `Content-Language`, `x-goog-meta-*`; `Content-MD5` and `x-goog-hash`
    /// checked; `x-goog-if-generation-match` and `x-goog-if-metageneration-match` as conditions.
    func xmlUpload(_ exchange: Exchange, name: ObjectName) throws -> UploadRequest {
        let headers = exchange.request.headers
        var options = WriteOptions()
        for property in WritableProperty.allCases {
            if let value = headers[HTTPField.Name(property.httpHeader)!] { options.properties[property] = value }
        }
        for field in headers {
            let header = field.name.canonicalName.lowercased()
            guard header.hasPrefix("x-goog-meta-") else { continue }
            options.customMetadata[String(header.dropFirst("x-goog-meta-".count))] = field.value
        }
        try CustomMetadataLimits.validate(options.customMetadata)
        // Cloud Storage's own fields (rule M9) in their XML headers.
        if let text = headers[HTTPField.Name("x-goog-custom-time")!] {
            guard let time = Timestamp(rfc3339: text) else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "x-goog-custom-time must be an RFC 3339 time, not '\(text)'.")
            }
            options.cloudStorage.customTime = time
        }
        if let text = headers[HTTPField.Name("x-goog-storage-class")!] {
            guard StorageClasses.cloudStorage.contains(text.uppercased()) else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidStorageClass", "x-goog-storage-class '\(text)' is not a storage class.")
            }
            options.cloudStorage.storageClass = text.uppercased()
        }
        let hashes = Self.declaredHashes(headers)
        options.expectedMD5 = hashes.md5
        options.cloudStorage.customerKeySHA256 = try CustomerKey(headers)?.sha256
        return UploadRequest(
            bucket: exchange.bucket, name: name, options: options, expectedCRC32C: hashes.crc32c,
            conditions: try Conditions(xmlHeaders: headers), firebase: false)
    }

    /// The hashes a write declares (base64): `Content-MD5`, and `x-goog-hash: crc32c=…,md5=…` (which wins).
    static func declaredHashes(_ headers: HTTPFields) -> (md5: String?, crc32c: String?) {
        var md5 = headers[.contentMD5]
        var crc32c: String?
        for hash in headers[values: HTTPField.Name("x-goog-hash")!].flatMap({ $0.split(separator: ",") }) {
            let pair = hash.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            switch pair[0].lowercased() {
            case "md5": md5 = String(pair[1])
            case "crc32c": crc32c = String(pair[1])
            default: break
            }
        }
        return (md5, crc32c)
    }

    // MARK: Listing

    /// `GET /BUCKET`: a page of the bucket's objects. Version 1 resumes after `marker` (a name, or the `NextMarker`
    /// this server gave); version 2 (`list-type=2`) from `continuation-token`, or after `start-after`.
    private func listXML(_ exchange: Exchange) throws -> Answer {
        let query = exchange.query
        let delimiter = query["delimiter"].flatMap { $0.isEmpty ? nil : $0 }
        guard delimiter == nil || delimiter == "/" else {
            throw SignedURL.refusal(
                .badRequest, code: "InvalidArgument",
                "storesh serve lists with the delimiter '/' only, not '\(delimiter!)'.")
        }
        var maxKeys = ListOptions.maximumResults
        if let given = try query.integer("max-keys") {
            guard given > 0 else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "max-keys must be positive, not \(given).")
            }
            maxKeys = Int(min(given, Int64(ListOptions.maximumResults)))
        }
        guard [nil, "1", "2"].contains(query["list-type"]) else {
            throw SignedURL.refusal(
                .badRequest, code: "InvalidArgument", "list-type is 1 or 2, not '\(query["list-type"]!)'.")
        }
        let listType2 = query["list-type"] == "2"
        let prefix = query["prefix"] ?? ""
        var options = ListOptions(maxResults: maxKeys, includeMetadata: true)
        let resumeAt = listType2 ? query["continuation-token"] : query["marker"]
        let bucket = try exchange.bucket.reader()
        if let resumeAt, !resumeAt.isEmpty {
            if (try? bucket.pageTokens.position(decoding: resumeAt, bucket: bucket.name, prefix: prefix)) != nil {
                options.pageToken = resumeAt
            } else if listType2 {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument", "The continuation-token is not one this listing gave.")
            } else {
                options.startOffset = resumeAt + "\u{0}"  // after the name: the smallest name that follows it
            }
        }
        if listType2, options.pageToken == nil, let after = query["start-after"], !after.isEmpty {
            options.startOffset = after + "\u{0}"
        }
        // `?versions` lists every generation (rule B5), each `Contents` with its `Generation`.
        let page =
            query["versions"] != nil
            ? try bucket.listGenerations(prefix: prefix, delimited: delimiter != nil, options: options)
            : try bucket.listStoredNames(prefix: prefix, delimited: delimiter != nil, options: options)
        let stored = StoredListingPage(
            prefixes: page.prefixes.map { $0 + "/" }, items: page.itemMetadata ?? [], continuation: page.nextPageToken)
        let document = CloudStorageXML.listBucketResult(
            bucket: bucket.name, prefix: prefix, delimiter: delimiter, maxKeys: maxKeys, page: stored, marker: resumeAt,
            listType2: listType2,
            continuationToken: resumeAt)
        return Reply.xml(document)
    }
}

extension Conditions {
    /// The XML API's conditions on a write or delete: `x-goog-if-generation-match`, `x-goog-if-metageneration-match`.
    init(xmlHeaders headers: HTTPFields) throws {
        self.init()
        func number(_ name: String) throws -> Int64? {
            guard let text = headers[HTTPField.Name(name)!] else { return nil }
            guard let value = Int64(text), value >= 0 else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument",
                    "The header \(name) must be a generation (zero or more), not '\(text)'.")
            }
            return value
        }
        generationMatch = try number("x-goog-if-generation-match")
        metagenerationMatch = try number("x-goog-if-metageneration-match")
    }
}

extension HTTPField.Name {
    /// `Content-MD5` (RFC 1864), which the XML API checks a write against.
    static let contentMD5 = HTTPField.Name("Content-MD5")!
}
