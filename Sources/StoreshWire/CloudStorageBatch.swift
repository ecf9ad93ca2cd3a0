import Foundation
import StoreshCore

/// The batch format of the Cloud Storage JSON API (rule Q2), both directions: the `gs://` backend writes batches
/// and reads their answers; `storesh serve` reads batches and writes the answers.
///
/// A batch is `POST /batch/storage/v1` with a `multipart/mixed` body. Each part has the MIME headers
/// `Content-Type: application/http` and `Content-ID: <id>`, an empty line, then one whole HTTP/1.1 request: request
/// line, headers, empty line, body. The answer is a `multipart/mixed` body with a part per call, in the same
/// order; each holds one whole HTTP response, and its `Content-ID` is the call's prefixed with `response-`.
/// Lines end in CRLF; the Python client writes LF, which is read too.
package enum CloudStorageBatch {
    /// The batch endpoint's path.
    package static let path = "/batch/storage/v1"
    /// The most calls Cloud Storage takes in one batch.
    package static let largestBatch = 100

    /// One call of a batch: an HTTP request without its host.
    package struct Call: Sendable, Equatable {
        /// What names the call in its answer (the part's `Content-ID`, without `<>`).
        package var contentID: String
        package var method: String
        /// The path and query (a client may write an absolute URL; `pathAndQuery` drops its scheme and host).
        package var target: String
        package var headers: [Header]
        package var body: Data

        package init(contentID: String, method: String, target: String, headers: [Header] = [], body: Data = Data()) {
            self.contentID = contentID
            self.method = method
            self.target = target
            self.headers = headers
            self.body = body
        }

        /// A request of the JSON API as a call (its body, when it has one, is JSON).
        package init(contentID: String, _ request: WireRequest) {
            self.init(
                contentID: contentID, method: request.method, target: request.target,
                headers: request.body == nil ? [] : [Header("Content-Type", "application/json")],
                body: request.body ?? Data())
        }

        /// The target without the scheme and host of an absolute URL; nil when it is neither a path nor a URL.
        package var pathAndQuery: String? {
            var path = target
            if let scheme = path.range(of: "://") {
                let rest = path[scheme.upperBound...]
                path = rest.firstIndex(of: "/").map { String(rest[$0...]) } ?? "/"
            }
            return path.hasPrefix("/") ? path : nil
        }
    }

    /// One answer of a batch: an HTTP response.
    package struct Answer: Sendable, Equatable {
        /// The call's `Content-ID`, as the answer names it (`response-` and the call's).
        package var contentID: String
        package var status: Int
        package var reason: String
        package var headers: [Header]
        package var body: Data

        package init(contentID: String, status: Int, reason: String = "", headers: [Header] = [], body: Data = Data()) {
            self.contentID = contentID
            self.status = status
            self.reason = reason
            self.headers = headers
            self.body = body
        }

        /// The first header of that name (any case).
        package func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// A header line of a part.
    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String

        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// What is wrong with a batch body, for a 400 or a client's error.
    package struct Malformed: Error, Sendable, Equatable {
        package var message: String
    }

    /// A new boundary: long and random, so no body holds it.
    package static func newBoundary() -> String {
        "batch_storesh_" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
    }

    /// The `Content-Type` of a batch or its answer with `boundary`.
    package static func contentType(boundary: String) -> String { "multipart/mixed; boundary=\(boundary)" }

    /// The boundary a `multipart/mixed` content type names, quoted or not; nil when it is another type or names none.
    package static func boundary(ofContentType contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/mixed"),
            let boundary = MediaTypes.parameter("boundary", of: contentType),
            !boundary.isEmpty
        else { return nil }
        return boundary
    }

    // MARK: Writing

    /// A batch's body: each call as a part.
    package static func body(_ calls: [Call], boundary: String) -> Data {
        var body = Data()
        for call in calls {
            body += Data(
                "--\(boundary)\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n".utf8)
            body += Data("Content-ID: <\(call.contentID)>\r\n\r\n".utf8)
            body += Data("\(call.method) \(call.target) HTTP/1.1\r\n".utf8)
            for header in call.headers where header.name.lowercased() != "content-length" {
                body += Data("\(header.name): \(header.value)\r\n".utf8)
            }
            if !call.body.isEmpty { body += Data("Content-Length: \(call.body.count)\r\n".utf8) }
            body += Data("\r\n".utf8)
            body += call.body
            body += Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return body
    }

    /// An answer's body: each answer as a part, in the calls' order.
    package static func answerBody(_ answers: [Answer], boundary: String) -> Data {
        var body = Data()
        for answer in answers {
            body += Data(
                "--\(boundary)\r\nContent-Type: application/http\r\nContent-ID: <\(answer.contentID)>\r\n\r\n".utf8)
            body += Data("HTTP/1.1 \(answer.status) \(answer.reason.isEmpty ? "Status" : answer.reason)\r\n".utf8)
            for header in answer.headers where header.name.lowercased() != "content-length" {
                body += Data("\(header.name): \(header.value)\r\n".utf8)
            }
            body += Data("Content-Length: \(answer.body.count)\r\n\r\n".utf8)
            body += answer.body
            body += Data("\r\n".utf8)
        }
        body += Data("--\(boundary)--\r\n".utf8)
        return body
    }

    /// The `Content-ID` a call's answer carries.
    package static func answerID(of callID: String) -> String { "response-" + callID }

    // MARK: Reading

    /// The calls of a batch body. A part without a `Content-ID` is named by its place (1, 2, …). At most `limit`
    /// parts are read; more is an error.
    package static func calls(_ body: Data, boundary: String, limit: Int) throws(Malformed) -> [Call] {
        var calls: [Call] = []
        for (index, part) in try parts(body, boundary: boundary, limit: limit).enumerated() {
            var reader = LineReader(part)
            let contentID = mimeHeaders(&reader).contentID ?? String(index + 1)
            // The answer names the call by its Content-ID, in a header of its own: a control character (a bare CR)
            // would be written into the answer's headers.
            if contentID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw Malformed(
                    message:
                        "Batch part \(index + 1) has a Content-ID with a control character; a Content-ID is printable text."
                )
            }
            guard let requestLine = reader.line() else {
                throw Malformed(message: "Batch part \(index + 1) holds no request.")
            }
            let words = requestLine.split(separator: " ")
            guard words.count == 3, words[2].hasPrefix("HTTP/") else {
                throw Malformed(
                    message:
                        "Batch part \(index + 1) does not start with a request line (METHOD TARGET HTTP/1.1): '\(requestLine.prefix(80))'."
                )
            }
            let headers = try httpHeaders(&reader, part: index + 1)
            calls.append(
                Call(
                    contentID: contentID, method: String(words[0]), target: String(words[1]), headers: headers,
                    body: reader.rest))
        }
        return calls
    }

    /// The answers of a batch's answer body, in its order.
    package static func answers(_ body: Data, boundary: String, limit: Int) throws(Malformed) -> [Answer] {
        var answers: [Answer] = []
        for (index, part) in try parts(body, boundary: boundary, limit: limit).enumerated() {
            var reader = LineReader(part)
            let mime = mimeHeaders(&reader)
            let contentID = mime.contentID ?? ""
            guard let statusLine = mime.statusLine ?? reader.line() else {
                throw Malformed(message: "Batch answer \(index + 1) holds no response.")
            }
            let words = statusLine.split(separator: " ", maxSplits: 2)
            guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]),
                (100...599).contains(status)
            else {
                throw Malformed(
                    message:
                        "Batch answer \(index + 1) does not start with a status line (HTTP/1.1 CODE REASON): '\(statusLine.prefix(80))'."
                )
            }
            let headers = try httpHeaders(&reader, part: index + 1)
            answers.append(
                Answer(
                    contentID: contentID, status: status, reason: words.count > 2 ? String(words[2]) : "",
                    headers: headers, body: reader.rest))
        }
        return answers
    }

    /// Which call an answer is for: by its `Content-ID` when every answer names a call of the batch once, else
    /// by order (a server may leave the IDs out); nil when neither holds.
    package static func matched(_ answers: [Answer], to calls: [Call]) -> [Answer]? {
        var byID: [String: Answer] = [:]
        for answer in answers {
            let id =
                answer.contentID.hasPrefix("response-")
                ? String(answer.contentID.dropFirst("response-".count)) : answer.contentID
            guard byID.updateValue(answer, forKey: id) == nil else {
                byID = [:]
                break
            }
        }
        if byID.count == calls.count, calls.allSatisfy({ byID[$0.contentID] != nil }) {
            return calls.map { byID[$0.contentID]! }
        }
        return answers.count == calls.count ? answers : nil
    }

    /// The bytes between the delimiters, each without the line end before its next delimiter.
    private static func parts(_ body: Data, boundary: String, limit: Int) throws(Malformed) -> [Data] {
        let delimiter = Data(("--" + boundary).utf8)
        guard let first = body.range(of: delimiter) else {
            throw Malformed(message: "The batch body does not hold its boundary '--\(boundary)'.")
        }
        var parts: [Data] = []
        var cursor = first.upperBound
        // Bounded: each round moves past one delimiter.
        while cursor < body.endIndex {
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }  // the closing delimiter
            guard parts.count < limit else {
                throw Malformed(message: "A batch holds at most \(limit) parts; this one has more.")
            }
            guard let next = body.range(of: Data("\n".utf8) + delimiter, in: cursor..<body.endIndex) else {
                throw Malformed(
                    message: "The batch body is cut short: a part has no closing boundary '--\(boundary)--'.")
            }
            var end = next.lowerBound
            if end > cursor, body[end - 1] == 0x0D { end -= 1 }
            var part = Data(body[cursor..<end])
            // The rest of the delimiter's line (a transport padding, then the line end).
            if let lineEnd = part.firstIndex(of: 0x0A) { part = Data(part[(lineEnd + 1)...]) } else { part = Data() }
            parts.append(part)
            cursor = next.upperBound
        }
        throw Malformed(message: "The batch body is cut short: it has no closing boundary '--\(boundary)--'.")
    }

    /// A part's MIME headers, up to the empty line; the `Content-ID` without its `<>`. An answer's status line
    /// met before the empty line ends them (gcp-storage-emulator writes none between the two).
    private static func mimeHeaders(_ reader: inout LineReader) -> (contentID: String?, statusLine: String?) {
        var contentID: String?
        while let line = reader.line(), !line.isEmpty {
            if line.hasPrefix("HTTP/") { return (contentID, line) }
            if line.lowercased().hasPrefix("content-id:") {
                contentID = line.dropFirst("content-id:".count).trimmingCharacters(in: .whitespaces)
                    .trimmingCharacters(in: CharacterSet(charactersIn: "<>"))
            }
        }
        return (contentID, nil)
    }

    /// The headers of the request or response a part holds, up to the empty line before its body. Its
    /// `Content-Length` is left out: the part's own bytes say how long the body is.
    private static func httpHeaders(_ reader: inout LineReader, part: Int) throws(Malformed) -> [Header] {
        var headers: [Header] = []
        while let line = reader.line(), !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw Malformed(message: "Batch part \(part) has a malformed header line '\(line.prefix(80))'.")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            if name.lowercased() == "content-length" { continue }
            headers.append(Header(name, line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        return headers
    }
}

/// Parameters of a header's media type.
package enum MediaTypes {
    /// A parameter of a header value (`boundary=…`), quoted or not.
    package static func parameter(_ name: String, of header: String) -> String? {
        for piece in header.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == name else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            // Quoted as RFC 2045 says (`"…"`), or as Python's `%r` writes it (`'…'`, gsutil's uploads).
            for quote in ["\"", "'"] where value.count >= 2 && value.hasPrefix(quote) && value.hasSuffix(quote) {
                value = String(value.dropFirst().dropLast())
                break
            }
            return value
        }
        return nil
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
