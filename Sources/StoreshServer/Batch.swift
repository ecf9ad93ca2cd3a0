import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// The batch endpoint of the Cloud Storage JSON API (`POST /batch/storage/v1`, rule Q2; its format is
/// `CloudStorageBatch`): up to 1000 requests in one body, answered in one body in the same order. The parts run concurrently, so the changes among them land in shared commits: a bulk client's
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
        guard let boundary = CloudStorageBatch.boundary(ofContentType: contentType) else {
            throw HTTPFailure.badRequest(
                "A batch's Content-Type must be multipart/mixed with a boundary, not '\(contentType)'.")
        }
        let body = try await body(&exchange, limit: limits.maximumJSONBytes * 4, what: "batch")
        let parts: [CloudStorageBatch.Call]
        do {
            parts = try CloudStorageBatch.calls(body, boundary: boundary, limit: Self.maximumBatchParts)
        } catch {
            throw HTTPFailure.badRequest(error.message)
        }
        guard !parts.isEmpty else { throw HTTPFailure.badRequest("The batch holds no requests.") }
        let authority = exchange.request.head.authority
        let answers = await withTaskGroup(of: (Int, Answer).self) { group in
            var answers = [Answer?](repeating: nil, count: parts.count)
            var total = 0
            // At most `batchParallelism` parts at once; answers are kept until the batch is answered whole, so their
            // bytes are counted, and parts past the bound are refused rather than held.
            var started = 0
            func record(_ index: Int, _ answer: Answer) {
                total += answer.body.readableBytes
                answers[index] =
                    total <= Self.maximumBatchAnswerBytes
                    ? answer
                    : Reply.failure(
                        HTTPFailure(
                            .contentTooLarge, reason: "responseTooLarge",
                            "The batch's answers would exceed \(Self.maximumBatchAnswerBytes >> 20) MiB; this request was not answered. Send it in a smaller batch."
                        ),
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
        let answerBoundary = CloudStorageBatch.newBoundary()
        let written = zip(parts, answers).map { part, answer in
            CloudStorageBatch.Answer(
                contentID: CloudStorageBatch.answerID(of: part.contentID), status: answer.status.code,
                reason: answer.status.reasonPhrase,
                headers: answer.headers.map { CloudStorageBatch.Header($0.name.rawName, $0.value) },
                body: Data(answer.body.readableBytesView))
        }
        return Answer(
            status: .ok, headers: [.contentType: CloudStorageBatch.contentType(boundary: answerBoundary)],
            body: ByteBuffer(data: CloudStorageBatch.answerBody(written, boundary: answerBoundary)))
    }
}

extension StorageAPI {
    /// A batch carries metadata requests of the JSON API, as the service's does: no uploads or downloads of
    /// content (whose answers would all be held at once), no v0 or internal endpoint, no batch in a batch.
    static func refuseInBatch(_ request: Request) throws {
        let path = request.uri.path
        // A signed URL is the XML API's, and reads or writes content: never in a batch (it would run as itself).
        if SignedURL.isSigned(query: request.uri.query) {
            throw HTTPFailure.badRequest("A batch may not hold a signed URL's request: send \(path) on its own.")
        }
        let endpoint = try Endpoint(path: path)
        switch endpoint {
        case .buckets?, .bucket?, .objects?, .object?, .copy?, .compose?: break
        default: throw HTTPFailure.badRequest("A batch may hold JSON API metadata requests only, not \(path).")
        }
        if let query = request.uri.query, (try? QueryParameters(query))?["alt"] == "media" {
            throw HTTPFailure.badRequest("A batch may not download content (alt=media): download \(path) on its own.")
        }
    }
}

extension CloudStorageBatch.Call {
    /// The call as a request of its own, on the batch's server: an absolute URL keeps only its path and query.
    func request(authority: String?) throws -> Request {
        guard let path = pathAndQuery else {
            throw HTTPFailure.badRequest("A batch request's target must be a path or a URL, not '\(target)'.")
        }
        var fields = HTTPFields()
        for header in headers {
            guard let fieldName = HTTPField.Name(header.name) else {
                throw HTTPFailure.badRequest("A batch request has a malformed header name '\(header.name)'.")
            }
            fields.append(HTTPField(name: fieldName, value: header.value))
        }
        fields[.contentLength] = String(body.count)
        guard let method = HTTPRequest.Method(method) else {
            throw HTTPFailure.badRequest(
                "A batch request's method must be an HTTP method (GET, PATCH, …), not '\(MessageText.oneLine(method))'."
            )
        }
        let head = HTTPRequest(method: method, scheme: "http", authority: authority, path: path, headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: body)))
    }
}
