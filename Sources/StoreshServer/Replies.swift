import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore

/// An answer before it is a Hummingbird response: a batch carries its parts' answers in its own body.
struct Answer: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer
    /// Bytes of a spool sent a piece at a time instead of `body` (a download larger than a spool keeps in memory),
    /// so that no answer holds a whole large object.
    var streamed: (spool: Spool, range: Range<Int64>)?

    init(
        status: HTTPResponse.Status, headers: HTTPFields = [:], body: ByteBuffer = ByteBuffer(),
        streamed: (spool: Spool, range: Range<Int64>)? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.streamed = streamed
    }

    var response: Response {
        guard let streamed else {
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
        }
        let (spool, range) = streamed
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: range.count) { writer in
                // The spool's reads block (a file past a small size): on StorageWork's threads, as the answer's making.
                try await withTaskExecutorPreference(StorageWork.shared) {
                    var offset = range.lowerBound
                    // Bounded: each round sends at least one byte, up to the range's end.
                    while offset < range.upperBound {
                        let piece = try spool.read(
                            offset: offset, length: Int(min(Int64(Spool.pieceBytes), range.upperBound - offset)))
                        guard !piece.isEmpty else { break }
                        try await writer.write(ByteBuffer(bytes: piece))
                        offset += Int64(piece.count)
                    }
                    try await writer.finish(nil)
                }
            })
    }
}

/// How the server writes its answers.
enum Reply {
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Answer {
        var headers = headers
        headers[.contentType] = "application/json; charset=UTF-8"
        return Answer(status: status, headers: headers, body: ByteBuffer(string: value.serialized))
    }

    /// An XML API document.
    static func xml(_ document: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Answer {
        var headers = headers
        headers[.contentType] = "application/xml; charset=UTF-8"
        return Answer(status: status, headers: headers, body: ByteBuffer(string: document))
    }

    static func empty(_ status: HTTPResponse.Status = .noContent, headers: HTTPFields = [:]) -> Answer {
        var headers = headers
        if status != .noContent { headers[.contentLength] = "0" }
        return Answer(status: status, headers: headers)
    }

    static func failure(_ failure: HTTPFailure, firebase: Bool) -> Answer {
        if let xml = failure.xml {
            var headers = failure.headers
            headers[.contentType] = "application/xml; charset=UTF-8"
            return Answer(status: failure.status, headers: headers, body: ByteBuffer(string: xml))
        }
        return json(failure.body(firebase: firebase), status: failure.status, headers: failure.headers)
    }

    /// An object's content (`alt=media`), whole or the one range asked for, with the headers clients check: the
    /// hashes of the whole content (`X-Goog-Hash`), its generations and its stored size and encoding; served inert
    /// (`InertContent`) whatever it holds.
    /// `entityTag` is the API's: the JSON API's is the resource's etag, the XML API's the MD5 in hexadecimal, quoted.
    /// `partial`: `content` is those bytes of the object alone, read for the request's range
    /// (`StorageAPI.download`, which answers an unsatisfiable range itself); nil: `content` is the whole object.
    static func media(
        _ object: ObjectMetadata, content: SpooledContent, partial: Range<Int64>?, request: HTTPFields,
        entityTag: String
    ) throws -> Answer {
        var headers = InertContent.headers(
            contentType: object.contentType, storedDisposition: object.contentDisposition, request: request)
        headers[.contentType] = object.contentType ?? "application/octet-stream"
        headers[.acceptRanges] = "bytes"
        headers[.eTag] = entityTag
        headers[.lastModified] = object.updated.httpDate
        headers[HTTPField.Name("X-Goog-Generation")!] = String(object.generation)
        headers[HTTPField.Name("X-Goog-Metageneration")!] = String(object.metageneration)
        headers[HTTPField.Name("X-Goog-Stored-Content-Length")!] = String(object.size)
        headers[HTTPField.Name("X-Goog-Stored-Content-Encoding")!] = object.contentEncoding ?? "identity"
        headers[HTTPField.Name("X-Goog-Storage-Class")!] = "STANDARD"
        if let value = object.cacheControl { headers[.cacheControl] = value }
        if let value = object.contentLanguage { headers[.contentLanguage] = value }
        if let value = object.contentEncoding, value != "identity" { headers[.contentEncoding] = value }
        guard let partial else {
            headers[HTTPField.Name("X-Goog-Hash")!] = "crc32c=\(content.crc32cBase64),md5=\(object.md5Hash)"
            return try body(content, status: .ok, headers: headers)
        }
        headers[.contentRange] = "bytes \(partial.lowerBound)-\(partial.upperBound - 1)/\(object.size)"
        return try body(content, status: .partialContent, headers: headers)
    }

    /// `content`: in the answer when small, streamed from the spool when not.
    private static func body(
        _ content: SpooledContent, status: HTTPResponse.Status, headers: HTTPFields
    ) throws -> Answer {
        let bytes = content.range
        guard bytes.count > Int64(Spool.memoryBytes) else {
            return Answer(
                status: status, headers: headers,
                body: ByteBuffer(bytes: try content.spool.read(offset: bytes.lowerBound, length: Int(bytes.count))))
        }
        return Answer(status: status, headers: headers, streamed: (content.spool, bytes))
    }
}

/// The one range of a `Range: bytes=…` header (RFC 9110): nil for the whole content (no header, several ranges,
/// or a header this server does not read, which HTTP says to ignore); a 416 for a range past the end.
enum ByteRange {
    static func parse(_ header: String?, size: Int) throws -> Range<Int>? {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let unsatisfiable = HTTPFailure(
            .rangeNotSatisfiable, reason: "requestedRangeNotSatisfiable",
            "The requested range '\(header)' is not satisfiable: the object is \(size) bytes long.",
            headers: [.contentRange: "bytes */\(size)"])
        if parts[0].isEmpty {
            // A suffix: the last N bytes.
            guard let length = Int(parts[1]), length >= 0 else { return nil }
            guard length > 0, size > 0 else { throw unsatisfiable }
            return max(0, size - length)..<size
        }
        guard let first = Int(parts[0]), first >= 0 else { return nil }
        var end = size - 1
        if !parts[1].isEmpty {
            guard let last = Int(parts[1]), last >= first else { return nil }
            end = min(last, size - 1)
        }
        guard first < size else { throw unsatisfiable }
        return first..<(end + 1)
    }
}
