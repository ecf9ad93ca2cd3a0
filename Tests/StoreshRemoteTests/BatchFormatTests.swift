import Foundation
import StoreshCore
import StoreshWire
import Testing

/// Rule Q2's format, as Cloud Storage's batch documentation lays it out: a `multipart/mixed` body whose parts are
/// `application/http` with a `Content-ID`, each holding a whole HTTP/1.1 request; answered by parts holding whole
/// responses, each named `response-` and its call's ID.
@Suite("JSON API batches, written and read by one owner (StoreshWire)")
struct BatchFormatTests {
    static let patch = WireRequest(
        method: "PATCH", target: "/storage/v1/b/example-bucket/o/obj1?ifMetagenerationMatch=1",
        body: Data(#"{"metadata":{"type":"tabby"}}"#.utf8))
    static let delete = WireRequest(
        method: "DELETE", target: "/storage/v1/b/example-bucket/o/obj%2F2?ifGenerationMatch=7")

    @Test("a batch's body is the documented layout, CRLF line ends, and reads back as its calls")
    func writesCalls() throws {
        let calls = [
            CloudStorageBatch.Call(contentID: "b29c5de2+1", Self.patch),
            CloudStorageBatch.Call(contentID: "b29c5de2+2", Self.delete),
        ]
        let body = CloudStorageBatch.body(calls, boundary: "===============7330845974216740156==")
        let text = String(decoding: body, as: UTF8.self)
        #expect(
            text.hasPrefix(
                "--===============7330845974216740156==\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <b29c5de2+1>\r\n\r\nPATCH /storage/v1/b/example-bucket/o/obj1?ifMetagenerationMatch=1 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"metadata\":{\"type\":\"tabby\"}}\r\n"
            ))
        #expect(
            text.hasSuffix(
                "DELETE /storage/v1/b/example-bucket/o/obj%2F2?ifGenerationMatch=7 HTTP/1.1\r\n\r\n\r\n--===============7330845974216740156==--\r\n"
            ))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"), "every line ends in CRLF")
        let back = try CloudStorageBatch.calls(body, boundary: "===============7330845974216740156==", limit: 100)
        #expect(back.map(\.contentID) == ["b29c5de2+1", "b29c5de2+2"])
        #expect(
            back.map(\.method) == ["PATCH", "DELETE"] && back.map(\.target) == [Self.patch.target, Self.delete.target])
        #expect(back[0].body == Self.patch.body && back[1].body.isEmpty)
        #expect(
            back[0].headers == [CloudStorageBatch.Header("Content-Type", "application/json")],
            "Content-Length is the part's own")
    }

    @Test("an answer in the documented shape is read call by call: status, headers, body")
    func readsAnswers() throws {
        let answer = """
            --batch_pK7JBAk73-E=_AA5eFwv4m2Q=\r
            Content-Type: application/http\r
            Content-ID: <response-b29c5de2+2>\r
            \r
            HTTP/1.1 412 Precondition Failed\r
            Content-Type: application/json; charset=UTF-8\r
            Content-Length: 63\r
            \r
            {"error":{"code":412,"message":"Precondition Failed"}}\r
            --batch_pK7JBAk73-E=_AA5eFwv4m2Q=\r
            Content-Type: application/http\r
            Content-ID: <response-b29c5de2+1>\r
            \r
            HTTP/1.1 200 OK\r
            ETag: "lGaP-E0memYDumK16YuUDM_6Gf0/V43j6azD55CPRGb9b6uytDYl61Y"\r
            Content-Type: application/json; charset=UTF-8\r
            \r
            {"name":"obj1","metadata":{"type":"tabby"}}\r
            --batch_pK7JBAk73-E=_AA5eFwv4m2Q=--\r

            """
        let contentType = "multipart/mixed; boundary=batch_pK7JBAk73-E=_AA5eFwv4m2Q="
        let boundary = try #require(CloudStorageBatch.boundary(ofContentType: contentType))
        let answers = try CloudStorageBatch.answers(Data(answer.utf8), boundary: boundary, limit: 10)
        #expect(answers.map(\.status) == [412, 200] && answers[1].reason == "OK")
        #expect(answers[1].header("etag") == "\"lGaP-E0memYDumK16YuUDM_6Gf0/V43j6azD55CPRGb9b6uytDYl61Y\"")
        #expect(String(decoding: answers[1].body, as: UTF8.self) == #"{"name":"obj1","metadata":{"type":"tabby"}}"#)
        // Matched to the calls by ID, whatever the answers' order.
        let calls = [
            CloudStorageBatch.Call(contentID: "b29c5de2+1", Self.patch),
            CloudStorageBatch.Call(contentID: "b29c5de2+2", Self.delete),
        ]
        #expect(CloudStorageBatch.matched(answers, to: calls)?.map(\.status) == [200, 412])
    }

    @Test("answers written by storesh serve read back the same, and unnamed answers go by order")
    func roundTripsAnswers() throws {
        let written = [
            CloudStorageBatch.Answer(
                contentID: "response-1", status: 200, reason: "OK",
                headers: [.init("Content-Type", "application/json")], body: Data("{}".utf8)),
            CloudStorageBatch.Answer(
                contentID: "response-2", status: 429, reason: "Too Many Requests", headers: [.init("Retry-After", "1")]),
        ]
        let boundary = CloudStorageBatch.newBoundary()
        let back = try CloudStorageBatch.answers(
            CloudStorageBatch.answerBody(written, boundary: boundary), boundary: boundary, limit: 10)
        #expect(back == written)
        #expect(back[1].header("Retry-After") == "1")
        let calls = [
            CloudStorageBatch.Call(contentID: "x", Self.patch), CloudStorageBatch.Call(contentID: "y", Self.delete),
        ]
        #expect(
            CloudStorageBatch.matched(back, to: calls)?.map(\.status) == [200, 429], "no ID names a call: by order")
        #expect(CloudStorageBatch.matched(Array(back.prefix(1)), to: calls) == nil, "an answer missing: not matched")
    }

    @Test(
        "other servers' forms: LF line ends (the Python client), no empty line before the status (gcp-storage-emulator)"
    )
    func readsOtherForms() throws {
        let lf = "--B\nContent-Type: application/http\nContent-ID: <response-1>\n\nHTTP/1.1 204 No Content\n\n\n--B--\n"
        #expect(try CloudStorageBatch.answers(Data(lf.utf8), boundary: "B", limit: 10).map(\.status) == [204])
        let squeezed =
            "--B\r\nContent-Type: application/http\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n\r\n--B--"
        let answers = try CloudStorageBatch.answers(Data(squeezed.utf8), boundary: "B", limit: 10)
        #expect(answers.map(\.status) == [200])
        #expect(try JSONSerialization.jsonObject(with: answers[0].body) as? [String: Int] == ["a": 1])
    }

    @Test("a body cut short, a part that is not HTTP, or too many parts are refused with what is wrong")
    func refusesMalformed() {
        let cut = "--B\r\nContent-Type: application/http\r\n\r\nHTTP/1.1 200 OK\r\n\r\n{}"
        #expect(throws: CloudStorageBatch.Malformed.self) {
            try CloudStorageBatch.answers(Data(cut.utf8), boundary: "B", limit: 10)
        }
        let notHTTP = "--B\r\nContent-Type: application/http\r\n\r\nhello\r\n--B--\r\n"
        #expect(throws: CloudStorageBatch.Malformed.self) {
            try CloudStorageBatch.answers(Data(notHTTP.utf8), boundary: "B", limit: 10)
        }
        #expect(throws: CloudStorageBatch.Malformed.self) {
            try CloudStorageBatch.calls(Data(notHTTP.utf8), boundary: "B", limit: 10)
        }
        let three = CloudStorageBatch.body(
            (1...3).map { CloudStorageBatch.Call(contentID: "\($0)", Self.delete) }, boundary: "B")
        #expect(throws: CloudStorageBatch.Malformed.self) {
            try CloudStorageBatch.calls(three, boundary: "B", limit: 2)
        }
        #expect(throws: CloudStorageBatch.Malformed.self) {
            try CloudStorageBatch.calls(three, boundary: "other", limit: 10)
        }
        #expect(CloudStorageBatch.boundary(ofContentType: "multipart/related; boundary=B") == nil)
        #expect(CloudStorageBatch.boundary(ofContentType: "multipart/mixed; boundary=\"q b\"") == "q b")
    }
}
