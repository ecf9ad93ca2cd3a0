import Foundation
import StoreshCore
import StoreshWire
import Testing

@testable import StoreshServer

/// How `storesh serve` reads the parts of a request: every malformed one is a 4xx naming it (rule V4).
@Suite("Reading requests (rules V1, V4)")
struct RequestParsingTests {
    @Test("percent-decoding is strict: a bad escape or bytes that are not UTF-8 are refused")
    func percentDecoding() throws {
        #expect(try PercentEncoding.decode("a%2Fb%20c", plusIsSpace: false, what: "x") == "a/b c")
        #expect(try PercentEncoding.decode("a+b", plusIsSpace: true, what: "x") == "a b")
        #expect(try PercentEncoding.decode("a+b", plusIsSpace: false, what: "x") == "a+b")
        #expect(try PercentEncoding.decode("%C3%A9", plusIsSpace: false, what: "x") == "é")
        for bad in ["%zz", "%4", "%", "%FF", "%C3"] {
            #expect(throws: HTTPFailure.self) {
                try PercentEncoding.decode(Substring(bad), plusIsSpace: false, what: "x")
            }
        }
        #expect(NameBytes.percentEncoded("dir/a b+é~") == "dir%2Fa%20b%2B%C3%A9~")
    }

    @Test("query parameters: decoded, and one given twice is refused")
    func query() throws {
        let query = try QueryParameters("prefix=a%2F&delimiter=/&versions=False&maxResults=10")
        #expect(query["prefix"] == "a/" && query["delimiter"] == "/")
        #expect(try query.flag("versions") == false)
        #expect(try query.integer("maxResults") == 10)
        #expect(throws: HTTPFailure.self) { try QueryParameters("a=1&a=2") }
        #expect(throws: HTTPFailure.self) { try QueryParameters("maxResults=ten").integer("maxResults") }
    }

    @Test("rule V1: the paths of both APIs, names escaped whole or not")
    func endpoints() throws {
        #expect(try Endpoint(path: "/storage/v1/b") == .buckets)
        #expect(try Endpoint(path: "/storage/v1/b/bkt") == .bucket("bkt"))
        #expect(try Endpoint(path: "/b/bkt/o") == .objects(bucket: "bkt"))
        #expect(try Endpoint(path: "/storage/v1/b/bkt/o/a%2Fb.txt") == .object(bucket: "bkt", name: "a/b.txt"))
        #expect(try Endpoint(path: "/storage/v1/b/bkt/o/a/b.txt") == .object(bucket: "bkt", name: "a/b.txt"))
        #expect(
            try Endpoint(path: "/storage/v1/b/bkt/o/a%2Fb/copyTo/b/bkt/o/c%2Fd")
                == .copy(
                    bucket: "bkt", source: "a/b", destinationBucket: "bkt", destination: "c/d", rewrite: false))
        #expect(try Endpoint(path: "/upload/storage/v1/b/bkt/o") == .upload(bucket: "bkt"))
        #expect(try Endpoint(path: "/download/storage/v1/b/bkt/o/x%20y") == .download(bucket: "bkt", name: "x y"))
        #expect(try Endpoint(path: "/v0/b/bkt/o") == .firebaseObjects(bucket: "bkt"))
        #expect(
            try Endpoint(path: "/v0/b/bkt/o/users%2Fada%2Fa.txt")
                == .firebaseObject(bucket: "bkt", name: "users/ada/a.txt"))
        #expect(try Endpoint(path: "/batch/storage/v1") == .batch)
        #expect(try Endpoint(path: "/internal/setRules") == .setRules)
        #expect(try Endpoint(path: "/nothing/here") == nil)
        #expect(try Endpoint(path: "/upload/storage/v1/b/bkt/o/name") == nil)
        #expect(throws: HTTPFailure.self) { try Endpoint(path: "/storage/v1/b/bkt/o/a%zz") }
    }

    @Test("Content-Range of resumable chunks: the three forms, and a length that disagrees with the body")
    func contentRange() throws {
        let middle = try ContentRange("bytes 0-262143/*", bodyLength: 262144)
        #expect(middle.first == 0 && middle.total == nil)
        let last = try ContentRange("bytes 262144-300000/300001", bodyLength: 37857)
        #expect(last.first == 262144 && last.total == 300001)
        let query = try ContentRange("bytes */300001", bodyLength: 0)
        #expect(query.first == nil && query.total == 300001)
        let whole = try ContentRange(nil, bodyLength: 5)
        #expect(whole.first == 0 && whole.whole && whole.total == nil)
        for (header, length) in [
            ("bytes 0-9/10", 5), ("0-9/10", 10), ("bytes 5-1/10", 5), ("bytes */10", 3), ("bytes 0-9/5", 10),
        ] {
            #expect(throws: HTTPFailure.self) { try ContentRange(header, bodyLength: Int64(length)) }
        }
        // A chunked body has no length before it arrives: the range is checked once its bytes are counted.
        let unknown = try ContentRange("bytes 0-9/*", bodyLength: nil)
        #expect(unknown.end == 10)
        #expect(throws: HTTPFailure.self) { try unknown.check(bodyLength: 9, header: "bytes 0-9/*") }
        try unknown.check(bodyLength: 10, header: "bytes 0-9/*")
    }

    @Test("multipart/related uploads: metadata then content, with a quoted boundary and binary content")
    func multipart() throws {
        let content = Data([0, 13, 10, 45, 45, 255])  // bytes that look like line breaks and dashes
        var body = Data(
            "--==b==\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{\"name\":\"x\"}\r\n--==b==\r\ncontent-type: image/png\r\n\r\n"
                .utf8)
        body += content + Data("\r\n--==b==--".utf8)
        func parse(_ body: Data, _ type: String) throws -> MultipartUpload {
            let spool = Spool(directory: NSTemporaryDirectory())
            try spool.append(body)
            return try MultipartUpload(spool: spool, contentType: type, maximumMetadataBytes: 1 << 20)
        }
        let upload = try parse(body, "multipart/related; boundary=\"==b==\"")
        #expect(upload.metadata == Data("{\"name\":\"x\"}".utf8))
        #expect(try upload.content.readAll() == content && upload.contentType == "image/png")
        #expect(
            upload.content.md5Base64 == ContentHash.md5Base64(content)
                && upload.content.crc32cBase64 == CRC32C.base64(of: content))
        #expect(throws: HTTPFailure.self) { try parse(body, "multipart/related") }
        #expect(throws: HTTPFailure.self) { try parse(body.prefix(40), "multipart/related; boundary=\"==b==\"") }
    }

    @Test("a spool moves to a file past its memory size, and finds a pattern that straddles two of its pieces")
    func spoolInAFile() throws {
        let spool = Spool(directory: NSTemporaryDirectory())
        var bytes =
            Data(repeating: 7, count: Spool.pieceBytes - 3) + Data("\r\n--edge".utf8)
            + Data(repeating: 9, count: Spool.memoryBytes)
        try spool.append(bytes.prefix(10))
        try spool.append(bytes.dropFirst(10))
        #expect(spool.size == Int64(bytes.count))
        #expect(try spool.firstOffset(of: Data("\r\n--edge".utf8), from: 0) == Int64(Spool.pieceBytes - 3))
        #expect(try spool.firstOffset(of: Data("absent".utf8), from: 0) == nil)
        #expect(try spool.read(offset: Int64(bytes.count) - 4, length: 100) == Data(repeating: 9, count: 4))
        try spool.truncate(to: 5)
        bytes = bytes.prefix(5)
        #expect(try spool.content().readAll() == bytes)
        // The file was unlinked when it was made: nothing of the spool is left in the directory.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).filter {
            $0.hasPrefix(".storesh-spool")
        }
        #expect(leftovers.isEmpty)
    }

    @Test("batch bodies with LF line ends, as the Python client writes them")
    func batch() throws {
        let body = Data(
            """
            --B
            Content-Type: application/http
            MIME-Version: 1.0

            DELETE http://127.0.0.1:1/storage/v1/b/bkt/o/a?prettyPrint=false HTTP/1.1
            Accept-Encoding: gzip


            --B
            Content-Type: application/http
            Content-ID: <7>

            PATCH /storage/v1/b/bkt/o/b HTTP/1.1
            Content-Type: application/json

            {"metadata": {"k": "v"}}
            --B--

            """.utf8)
        let parts = try CloudStorageBatch.calls(body, boundary: "B", limit: 10)
        #expect(parts.count == 2)
        #expect(parts[0].method == "DELETE" && parts[0].body.isEmpty && parts[0].contentID == "1")
        #expect(parts[1].method == "PATCH" && parts[1].contentID == "7")
        #expect(String(decoding: parts[1].body, as: UTF8.self) == "{\"metadata\": {\"k\": \"v\"}}")
        let request = try parts[0].request(authority: "127.0.0.1:9199")
        #expect(request.uri.path == "/storage/v1/b/bkt/o/a" && request.uri.query == "prettyPrint=false")
    }

    @Test("rule V3: emulator ID tokens give the uid and claims; garbled ones are refused")
    func tokens() throws {
        func encode(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
                of: "/", with: "_"
            )
            .replacingOccurrences(of: "=", with: "")
        }
        let token =
            encode("{\"alg\":\"none\"}") + "."
            + encode(
                "{\"sub\":\"s\",\"user_id\":\"ada\",\"email_verified\":true,\"age\":7,\"admin\":\"true\",\"role\":\"7\",\"score\":1.5}"
            ) + "."
        let identity = try EmulatorToken.identity(token)
        #expect(
            identity.uid == "ada" && identity.claims["email_verified"] == .bool(true)
                && identity.claims["age"] == .integer(7))
        // A claim keeps its token's type: a string that reads as a bool or a number stays a string.
        #expect(
            identity.claims["admin"] == .string("true") && identity.claims["role"] == .string("7")
                && identity.claims["score"] == .float(1.5))
        for bad in [
            "abc", "a.b", encode("{}") + "." + encode("[1]") + ".", encode("{}") + "." + encode("{\"sub\":1}") + ".",
        ] {
            #expect(throws: HTTPFailure.self) { try EmulatorToken.identity(bad) }
        }
    }
}

@Suite("The served request log")
struct ServedRequestLogTests {
    @Test(
        "it leaves out the values that grant access, as a client's --trace does: tokens, upload sessions, signatures, any case"
    )
    func redaction() {
        #expect(
            ServedRequest.loggable(path: "/v0/b/b/o/a", query: "alt=media&token=abc-123")
                == "/v0/b/b/o/a?alt=media&token=…")
        #expect(
            ServedRequest.loggable(path: "/upload/storage/v1/b/b/o", query: "uploadType=resumable&upload_id=XYZ")
                == "/upload/storage/v1/b/b/o?uploadType=resumable&upload_id=…")
        // A signed URL, or an API key, sent to the emulator: its log shows neither.
        #expect(
            ServedRequest.loggable(path: "/b/o", query: "X-Goog-Signature=f00&Key=k1&Token=t")
                == "/b/o?X-Goog-Signature=…&Key=…&Token=…")
        #expect(ServedRequest.loggable(path: "/storage/v1/b/b/o", query: nil) == "/storage/v1/b/b/o")
        // Names as people read them (issue 52).
        #expect(
            ServedRequest.loggable(path: "/storage/v1/b/b/o", query: "prefix=a%2F") == "/storage/v1/b/b/o?prefix=a/")
    }
}
