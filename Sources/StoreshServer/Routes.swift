import Foundation
import HTTPTypes
import Hummingbird

/// Percent-encoding as URLs carry it, decoded strictly: a `%` not followed by two hex digits, or bytes that are not
/// UTF-8, are a 400 naming what was wrong, never a guess (rule V4).
enum PercentEncoding {
    /// Decodes `text`; `plusIsSpace` for query strings, where `+` is a space as HTML forms write it.
    static func decode(_ text: Substring, plusIsSpace: Bool, what: @autoclosure () -> String) throws -> String {
        let utf8 = Array(text.utf8)
        guard utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < utf8.count, let high = hexValue(utf8[index + 1]), let low = hexValue(utf8[index + 2])
                else {
                    throw HTTPFailure.badRequest(
                        "Invalid percent-encoding in \(what()): '%' must be followed by two hexadecimal digits.")
                }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw HTTPFailure.badRequest("Invalid percent-encoding in \(what()): the decoded bytes are not UTF-8.")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A request's query parameters, decoded. A parameter given twice is refused: which one a server takes is not
/// something a client should have to guess.
struct QueryParameters: Sendable {
    private var values: [String: String] = [:]

    init(_ query: String?) throws {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentEncoding.decode(
                parts[0], plusIsSpace: true, what: "the query parameter name '\(parts[0])'")
            let value = try PercentEncoding.decode(
                parts.count > 1 ? parts[1] : "", plusIsSpace: true, what: "the query parameter '\(name)'")
            if values[name] != nil {
                throw HTTPFailure.badRequest("The query parameter '\(name)' is given more than once.")
            }
            values[name] = value
        }
    }

    /// The parameters of a query that was already answered, to describe it: none when it cannot be read.
    init(lenient query: String?) {
        self = (try? QueryParameters(query)) ?? QueryParameters()
    }

    private init() {}

    subscript(name: String) -> String? { values[name] }

    /// A parameter that must be a whole number when given.
    func integer(_ name: String) throws -> Int64? {
        guard let text = values[name] else { return nil }
        guard let number = Int64(text) else {
            throw HTTPFailure.badRequest(
                "Invalid value for the query parameter '\(name)': '\(text)' is not a whole number.")
        }
        return number
    }

    /// A generation a request names (`generation`, `sourceGeneration`): a whole number, never negative (a negative one
    /// is a malformed request, a 400, not an object that is not there).
    func generation(_ name: String = "generation") throws -> Int64? {
        guard let value = try integer(name) else { return nil }
        guard value >= 0 else {
            throw HTTPFailure.badRequest(
                "Invalid value for the query parameter '\(name)': \(value); generations are zero or more.")
        }
        return value
    }

    /// A true/false parameter; Python clients write `True` and `False`.
    func flag(_ name: String) throws -> Bool {
        switch values[name]?.lowercased() {
        case nil, "false": return false
        case "true", "": return true
        case let text?:
            throw HTTPFailure.badRequest(
                "Invalid value for the query parameter '\(name)': '\(text)' is neither true nor false.")
        }
    }
}

/// What a request's path names: the endpoints of the Cloud Storage JSON API (at `/storage/v1` and at `/`, plus its
/// upload, download and batch paths), of the Firebase v0 API, and of the emulator's internal API (rule V1).
enum Endpoint: Equatable, Sendable {
    /// `GET /storage/v1/b`, `POST /storage/v1/b`.
    case buckets
    case bucket(String)
    /// `GET /storage/v1/b/BUCKET/storageLayout`.
    case storageLayout(String)
    /// `POST /storage/v1/b/BUCKET/lockRetentionPolicy`.
    case lockRetentionPolicy(String)
    /// `GET /storage/v1/b/BUCKET?softDeleted=true&generation=G`: a soft-deleted bucket, which no live bucket
    /// resolves (rule B6).
    case softDeletedBucket(String)
    /// `POST /storage/v1/b/BUCKET/restore?generation=G`.
    case restoreBucket(String)
    /// `GET /storage/v1/b/BUCKET/managedFolders`: none (storesh keeps no managed folders; gcloud's `rm -r` asks).
    case managedFolders(String)
    case objects(bucket: String)
    case object(bucket: String, name: String)
    /// `POST …/o/SOURCE/copyTo/b/BUCKET/o/DESTINATION` (`rewriteTo` with `rewrite`).
    case copy(bucket: String, source: String, destinationBucket: String, destination: String, rewrite: Bool)
    case compose(bucket: String, destination: String)
    /// `…/b/BUCKET/acl`, `…/defaultObjectAcl` (`defaults`): a bucket's access control lists (rule B7).
    case bucketACL(bucket: String, defaults: Bool)
    /// `…/b/BUCKET/iam`: a bucket's IAM policy (rule B7).
    case bucketIAM(String)
    /// `…/o/NAME/acl`: an object's access control list (rule B7).
    case objectACL(bucket: String, name: String)
    /// `/storage/v1/projects/PROJECT/serviceAccount`: the project's Cloud Storage service agent.
    case serviceAccount(project: String)
    /// `POST …/o/NAME/restore?generation=G`: a soft-deleted generation brought back (rule B6).
    case restore(bucket: String, name: String)
    /// `POST …/o/SOURCE/moveTo/o/DESTINATION`: an object renamed in its bucket, atomically.
    case move(bucket: String, source: String, destination: String)
    case upload(bucket: String)
    case download(bucket: String, name: String)

    case firebaseRoot
    case firebaseBucket(String)
    case firebaseObjects(bucket: String)
    case firebaseObject(bucket: String, name: String)

    /// `POST /batch/storage/v1`: several JSON API requests in one `multipart/mixed` body.
    case batch

    case setRules
    case reset

    /// The endpoint of a raw (still percent-encoded) path; nil when nothing is there.
    init?(path rawPath: String) throws {
        var path = Substring(rawPath)
        func strip(_ prefix: String) -> Bool {
            guard path.hasPrefix(prefix) else { return false }
            path = path.dropFirst(prefix.count)
            return true
        }
        if path == "/internal/setRules" {
            self = .setRules
            return
        }
        if path == "/internal/reset" {
            self = .reset
            return
        }
        if path == "/batch/storage/v1" || path == "/batch" {
            self = .batch
            return
        }
        if path == "/v0" || path == "/v0/" {
            self = .firebaseRoot
            return
        }
        if strip("/v0/b/") {
            guard let endpoint = try Self.bucketPath(path, firebase: true) else { return nil }
            self = endpoint
            return
        }
        if path.hasPrefix("/storage/v1/projects/"), path.hasSuffix("/serviceAccount") {
            let project = path.dropFirst("/storage/v1/projects/".count).dropLast("/serviceAccount".count)
            guard !project.isEmpty, !project.contains("/") else { return nil }
            self = .serviceAccount(
                project: try PercentEncoding.decode(project, plusIsSpace: false, what: "the project"))
            return
        }
        var kind = "json"
        // `/resumable/upload/…` is where the API's discovery document starts resumable uploads (gsutil, apitools).
        if strip("/upload/storage/v1/b/") || strip("/resumable/upload/storage/v1/b/") {
            kind = "upload"
        } else if strip("/download/storage/v1/b/") {
            kind = "download"
        } else if strip("/storage/v1/b") || strip("/b") {
            if path.isEmpty || path == "/" {
                self = .buckets
                return
            }
            guard path.hasPrefix("/") else { return nil }
            path = path.dropFirst()
        } else {
            return nil
        }
        guard let endpoint = try Self.bucketPath(path, firebase: false) else { return nil }
        switch (kind, endpoint) {
        case ("json", _): self = endpoint
        case ("upload", .objects(let bucket)): self = .upload(bucket: bucket)
        case ("download", .object(let bucket, let name)): self = .download(bucket: bucket, name: name)
        default: return nil
        }
    }

    /// `BUCKET`, `BUCKET/o`, `BUCKET/o/NAME…` (the rest of the path is the name: clients that do not escape `/`
    /// in names are served too), and the copy forms.
    private static func bucketPath(_ path: Substring, firebase: Bool) throws -> Endpoint? {
        let bucketEnd = path.firstIndex(of: "/") ?? path.endIndex
        let bucket = try PercentEncoding.decode(path[..<bucketEnd], plusIsSpace: false, what: "the bucket name")
        if bucket.isEmpty { return nil }
        var rest = path[bucketEnd...]
        if rest.isEmpty || rest == "/" { return firebase ? .firebaseBucket(bucket) : .bucket(bucket) }
        if !firebase, rest == "/storageLayout" { return .storageLayout(bucket) }
        if !firebase, rest == "/lockRetentionPolicy" { return .lockRetentionPolicy(bucket) }
        if !firebase, rest == "/restore" { return .restoreBucket(bucket) }
        if !firebase, rest == "/managedFolders" || rest == "/managedFolders/" { return .managedFolders(bucket) }
        if !firebase, rest == "/acl" || rest == "/defaultObjectAcl" {
            return .bucketACL(bucket: bucket, defaults: rest == "/defaultObjectAcl")
        }
        if !firebase, rest == "/iam" { return .bucketIAM(bucket) }
        guard rest.hasPrefix("/o") else { return nil }
        rest = rest.dropFirst(2)
        if rest.isEmpty || rest == "/" { return firebase ? .firebaseObjects(bucket: bucket) : .objects(bucket: bucket) }
        guard rest.hasPrefix("/") else { return nil }
        rest = rest.dropFirst()
        if !firebase {
            let segments = rest.split(separator: "/", omittingEmptySubsequences: false)
            if segments.count == 6, segments[1] == "copyTo" || segments[1] == "rewriteTo", segments[2] == "b",
                segments[4] == "o"
            {
                return .copy(
                    bucket: bucket, source: try decodeName(segments[0]),
                    destinationBucket: try PercentEncoding.decode(
                        segments[3], plusIsSpace: false, what: "the destination bucket name"),
                    destination: try decodeName(segments[5]), rewrite: segments[1] == "rewriteTo")
            }
            if segments.count == 4, segments[1] == "moveTo", segments[2] == "o" {
                return .move(
                    bucket: bucket, source: try decodeName(segments[0]), destination: try decodeName(segments[3]))
            }
            if segments.count == 2, segments[1] == "acl" {
                return .objectACL(bucket: bucket, name: try decodeName(segments[0]))
            }
            if segments.count == 2, segments[1] == "restore" {
                return .restore(bucket: bucket, name: try decodeName(segments[0]))
            }
            if segments.count == 2, segments[1] == "compose" {
                return .compose(bucket: bucket, destination: try decodeName(segments[0]))
            }
        }
        let name = try decodeName(rest)
        return firebase ? .firebaseObject(bucket: bucket, name: name) : .object(bucket: bucket, name: name)
    }

    private static func decodeName(_ text: Substring) throws -> String {
        try PercentEncoding.decode(text, plusIsSpace: false, what: "the object name")
    }

    /// The bucket a request is about, when it names one.
    var bucket: String? {
        switch self {
        case .bucket(let bucket), .storageLayout(let bucket), .lockRetentionPolicy(let bucket),
            .managedFolders(let bucket), .objects(let bucket), .object(let bucket, _), .copy(let bucket, _, _, _, _),
            .compose(let bucket, _), .move(let bucket, _, _), .restore(let bucket, _), .bucketACL(let bucket, _),
            .bucketIAM(let bucket),
            .objectACL(let bucket, _), .upload(let bucket), .download(let bucket, _), .firebaseBucket(let bucket),
            .firebaseObjects(let bucket), .firebaseObject(let bucket, _):
            bucket
        // A soft-deleted bucket is no live bucket: the request names one only to find it among the kept.
        case .buckets, .firebaseRoot, .setRules, .reset, .batch, .serviceAccount, .softDeletedBucket, .restoreBucket:
            nil
        }
    }

    /// Whether a request of `method` here may make an object, and so the bucket it names when there is none yet
    /// (an upload, a compose; a copy's destination is made where it is written).
    func writes(_ method: HTTPRequest.Method) -> Bool {
        switch self {
        case .upload, .compose: true
        case .firebaseObjects, .firebaseObject: method == .post || method == .put
        default: false
        }
    }

    /// Whether the Firebase v0 API's shapes and rules apply.
    var isFirebase: Bool {
        switch self {
        case .firebaseRoot, .firebaseBucket, .firebaseObjects, .firebaseObject: true
        default: false
        }
    }

    /// The object a request names, for messages.
    var objectName: String? {
        switch self {
        case .object(_, let name), .download(_, let name), .firebaseObject(_, let name), .compose(_, let name): name
        case .copy(_, let source, _, _, _), .move(_, let source, _), .restore(_, let source), .objectACL(_, let source):
            source
        default: nil
        }
    }
}
