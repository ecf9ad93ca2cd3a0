import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore

/// The batch endpoint of the Cloud Storage JSON API (`POST /batch/storage/v1`): up to 1000 requests in one
/// `multipart/mixed` body, each part an `application/http` request, answered in one `multipart/mixed` body in the
/// same order. The parts run concurrently, so the changes among them land in shared commits: a bulk client's
/// thousand patches cost a few disk flushes, not a thousand.
extension StorageAPI {
    static let maximumBatchParts = 1000
    /// The most bytes of answers one batch holds (its parts' bodies together).
    static let maximumBatchAnswerBytes = 32 << 20
    /// Parts of one batch that run at once.
    static let batchParallelism = 32

    func respondBatch(_ exchange: inout Exchange) async throws -> Answer {
        guard exchange.method == .post else {
            throw HTTPFailure.methodNotAllowed(exchange.method, allowed: [.post], what: "the batch endpoint")
        }
        let contentType = exchange.request.headers[.contentType] ?? ""
        guard contentType.lowercased().hasPrefix("multipart/mixed"),
            let boundary = MultipartUpload.parameter("boundary", of: contentType), !boundary.isEmpty
        else {
            throw HTTPFailure.badRequest("A batch's Content-Type must be multipart/mixed with a boundary, not '\(contentType)'.")
        }
        let body = try await body(&exchange, limit: limits.maximumJSONBytes * 4, what: "batch")
        let parts = try BatchParts.split(body, boundary: boundary)
        guard !parts.isEmpty else { throw HTTPFailure.badRequest("The batch holds no requests.") }
        guard parts.count <= Self.maximumBatchParts else {
            throw HTTPFailure.badRequest("A batch holds at most \(Self.maximumBatchParts) requests; this one has \(parts.count).")
        }
        let authority = exchange.request.head.authority
        let answers = await withTaskGroup(of: (Int, Answer).self) { group in
            var answers = [Answer?](repeating: nil, count: parts.count)
            var total = 0
            // At most `batchParallelism` parts at once; answers are kept until the batch is answered whole, so their
            // bytes are counted, and parts past the bound are refused rather than held.
            var started = 0
            func record(_ index: Int, _ answer: Answer) {
                total += answer.body.readableBytes
                answers[index] = total <= Self.maximumBatchAnswerBytes ? answer : Reply.failure(
                    HTTPFailure(
                        .contentTooLarge, reason: "responseTooLarge",
                        "The batch's answers would exceed \(Self.maximumBatchAnswerBytes >> 20) MiB; this request was not answered. Send it in a smaller batch."),
                    firebase: false)
            }
            for (index, part) in parts.enumerated() {
                if started >= Self.batchParallelism, let (done, answer) = await group.next() { record(done, answer) }
                started += 1
                group.addTask {
                    do {
                        let request = try part.request(authority: authority)
                        try Self.refuseInBatch(request)
                        return (index, await self.respond(to: request))
                    } catch let failure as HTTPFailure {
                        return (index, Reply.failure(failure, firebase: false))
                    } catch {
                        return (index, Reply.failure(HTTPFailure.badRequest("\(error)"), firebase: false))
                    }
                }
            }
            for await (index, answer) in group { record(index, answer) }
            return answers.map { $0! }
        }
        let responseBoundary = "batch_storesh_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        var output = ByteBuffer()
        for (part, answer) in zip(parts, answers) {
            output.writeString("--\(responseBoundary)\r\nContent-Type: application/http\r\n")
            output.writeString("Content-ID: <response-\(part.contentID)>\r\n\r\n")
            output.writeString("HTTP/1.1 \(answer.status.code) \(answer.status.reasonPhrase.isEmpty ? "Status" : answer.status.reasonPhrase)\r\n")
            for field in answer.headers where field.name != .contentLength {
                output.writeString("\(field.name): \(field.value)\r\n")
            }
            output.writeString("Content-Length: \(answer.body.readableBytes)\r\n\r\n")
            var body = answer.body
            output.writeBuffer(&body)
            output.writeString("\r\n")
        }
        output.writeString("--\(responseBoundary)--\r\n")
        return Answer(status: .ok, headers: [.contentType: "multipart/mixed; boundary=\(responseBoundary)"], body: output)
    }
}

extension StorageAPI {
    /// A batch carries metadata requests of the JSON API, as the service's does: no uploads or downloads of
    /// content (whose answers would all be held at once), no v0 or internal endpoint, no batch in a batch.
    static func refuseInBatch(_ request: Request) throws {
        let path = request.uri.path
        let endpoint = try Endpoint(path: path)
        switch endpoint {
        case .buckets?, .bucket?, .objects?, .object?, .copy?, .compose?, nil: break
        default: throw HTTPFailure.badRequest("A batch may hold JSON API metadata requests only, not \(path).")
        }
        if let query = request.uri.query, (try? QueryParameters(query))?["alt"] == "media" {
            throw HTTPFailure.badRequest("A batch may not download content (alt=media): download \(path) on its own.")
        }
    }
}

/// One request of a batch, as its part carries it.
struct BatchPart: Sendable {
    var contentID: String
    var method: String
    var target: String
    var headers: [(String, String)]
    var body: Data

    /// The part as a request of its own, on the batch's server: an absolute URL keeps only its path and query.
    func request(authority: String?) throws -> Request {
        var path = target
        if let scheme = path.range(of: "://") {
            let rest = path[scheme.upperBound...]
            path = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
        }
        guard path.hasPrefix("/") else { throw HTTPFailure.badRequest("A batch request's target must be a path or a URL, not '\(target)'.") }
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { throw HTTPFailure.badRequest("A batch request has a malformed header name '\(name)'.") }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        fields[.contentLength] = String(body.count)
        let head = HTTPRequest(method: HTTPRequest.Method(method) ?? .get, scheme: "http", authority: authority, path: path, headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: body)))
    }
}

enum BatchParts {
    /// The parts of a `multipart/mixed` batch body, whose lines may end in LF (the Python client) or CRLF.
    static func split(_ body: Data, boundary: String) throws -> [BatchPart] {
        let delimiter = Data(("--" + boundary).utf8)
        guard let first = body.range(of: delimiter) else {
            throw HTTPFailure.badRequest("The batch body does not hold its boundary '--\(boundary)'.")
        }
        var parts: [BatchPart] = []
        var cursor = first.upperBound
        // Bounded: each round moves past one delimiter.
        while cursor < body.endIndex, parts.count <= StorageAPI.maximumBatchParts {
            if body[cursor...].starts(with: Data("--".utf8)) { break }  // the closing delimiter
            guard let next = body.range(of: Data("\n".utf8) + delimiter, in: cursor..<body.endIndex) else {
                throw HTTPFailure.badRequest("The batch body is cut short: a part has no closing boundary '--\(boundary)--'.")
            }
            var end = next.lowerBound
            if end > cursor, body[end - 1] == 0x0D { end -= 1 }
            parts.append(try part(body[cursor..<end], index: parts.count))
            cursor = next.upperBound
        }
        return parts
    }

    /// A part: its MIME headers, an empty line, then an HTTP request (request line, headers, empty line, body).
    private static func part(_ bytes: Data, index: Int) throws -> BatchPart {
        var reader = LineReader(bytes)
        _ = reader.line()  // the rest of the delimiter's line
        var contentID = String(index + 1)
        while let line = reader.line(), !line.isEmpty {
            if line.lowercased().hasPrefix("content-id:") {
                contentID = line.dropFirst("content-id:".count).trimmingCharacters(in: .whitespaces)
                    .trimmingCharacters(in: CharacterSet(charactersIn: "<>"))
            }
        }
        guard let requestLine = reader.line() else { throw HTTPFailure.badRequest("Batch part \(index + 1) holds no request.") }
        let words = requestLine.split(separator: " ")
        guard words.count == 3, words[2].hasPrefix("HTTP/") else {
            throw HTTPFailure.badRequest("Batch part \(index + 1) does not start with a request line (METHOD TARGET HTTP/1.1): '\(requestLine.prefix(80))'.")
        }
        var headers: [(String, String)] = []
        while let line = reader.line(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw HTTPFailure.badRequest("Batch part \(index + 1) has a malformed header line '\(line.prefix(80))'.")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            if name.lowercased() == "content-length" { continue }  // the part's own bytes say how long its body is
            headers.append((name, line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return BatchPart(contentID: contentID, method: String(words[0]), target: String(words[1]), headers: headers, body: reader.rest)
    }
}

/// Lines of a byte string ending in LF or CRLF, and what follows them.
private struct LineReader {
    private let bytes: Data
    private var position: Data.Index

    init(_ bytes: Data) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    mutating func line() -> String? {
        guard position < bytes.endIndex else { return nil }
        let end = bytes[position...].firstIndex(of: 0x0A) ?? bytes.endIndex
        var lineEnd = end
        if lineEnd > position, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        let text = String(decoding: bytes[position..<lineEnd], as: UTF8.self)
        position = end < bytes.endIndex ? end + 1 : end
        return text
    }

    var rest: Data { Data(bytes[position...]) }
}
