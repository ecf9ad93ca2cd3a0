import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import StoreshCore
import StoreshLocal
import Synchronization
import Testing

@testable import StoreshServer

/// `storesh serve`'s routes and middlewares in process, in Hummingbird's router test mode: no socket, the same
/// router the server runs (rules V1, V3, V4).
@Suite("The server's routes and middlewares, in process")
struct RouterTests {
    /// A served bucket in a temporary file, its server with `configuration`, and what its log received.
    final class Served: Sendable {
        let directory = NSTemporaryDirectory() + "storesh-router-" + UUID().uuidString
        let server: StorageServer
        let logged = Mutex<[ServedRequest]>([])

        init(_ configuration: ServeConfiguration = ServeConfiguration(port: 0)) throws {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let options = LocalBucketOptions(nameForNewBucket: "demo-app.appspot.com")
            let bucket = try LocalBucket.open(at: directory + "/served.bucket", options: options)
            server = try StorageServer(
                bucket: bucket, otherBuckets: directory, options: options, configuration: configuration)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }

        func test(_ body: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
            let app = Application(router: server.router { request in self.logged.withLock { $0.append(request) } })
            try await app.test(.router, body)
        }
    }

    @Test("both APIs answer at their paths, names with / in them included; an unknown path is a 404 in the API's shape")
    func routes() async throws {
        let served = try Served()
        try await served.test { client in
            try await client.execute(uri: "/v0/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("\"emulator\""))
            }
            try await client.execute(
                uri: "/upload/storage/v1/b/demo-app.appspot.com/o?uploadType=media&name=photos%2Fa%20b.txt",
                method: .post,
                headers: [.contentType: "text/plain"], body: ByteBuffer(string: "hello")
            ) { response in #expect(response.status == .ok) }
            try await client.execute(uri: "/storage/v1/b/demo-app.appspot.com/o/photos%2Fa%20b.txt", method: .get) {
                response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body).contains("\"size\":\"5\""))
            }
            try await client.execute(uri: "/v0/b/demo-app.appspot.com/o/photos%2Fa%20b.txt?alt=media", method: .get) {
                response in
                #expect(String(buffer: response.body) == "hello")
            }
            // The root is the bucket in a browser; other methods there are the APIs' (no endpoint).
            try await client.execute(uri: "/?path=photos/", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "text/html; charset=utf-8")
                #expect(String(buffer: response.body).contains("a b.txt"))
            }
            try await client.execute(uri: "/", method: .delete) { response in #expect(response.status == .notFound) }
            // Under another API's path, a path it does not have is that API's 404; any other path is the XML API's.
            try await client.execute(uri: "/storage/v2/nowhere", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("\"reason\":\"notFound\""))
            }
            try await client.execute(uri: "/nowhere/at/all", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("<Code>NoSuchBucket</Code>"))
            }
        }
    }

    @Test(
        "HEAD answers as GET without the body; a preflight from a local page is allowed, one from another page refused")
    func headAndOrigins() async throws {
        let served = try Served()
        try await served.test { client in
            try await client.execute(uri: "/v0/", method: .head) { response in
                #expect(response.status == .ok)
                #expect(response.body.readableBytes == 0)
            }
            let preflight: HTTPFields = [.origin: "http://localhost:5173", .accessControlRequestMethod: "PATCH"]
            try await client.execute(uri: "/v0/b/demo-app.appspot.com/o/x", method: .options, headers: preflight) {
                response in
                #expect(response.status == .noContent)
                #expect(response.headers[.accessControlAllowOrigin] == "http://localhost:5173")
            }
            try await client.execute(
                uri: "/v0/b/demo-app.appspot.com/o", method: .get, headers: [.origin: "https://evil.example"]
            ) {
                response in
                #expect(response.status == .forbidden)
                #expect(response.headers[.accessControlAllowOrigin] == nil)
            }
        }
    }

    @Test("the log has every request with its status, and none of the values that grant access")
    func log() async throws {
        let served = try Served()
        try await served.test { client in
            try await client.execute(
                uri: "/v0/b/demo-app.appspot.com/o/secret.txt?alt=media&token=abc123", method: .get
            ) { response in
                #expect(response.status == .notFound)
            }
            try await client.execute(uri: "/v0/", method: .get) { _ in }
        }
        let logged = served.logged.withLock { $0 }
        #expect(logged.map(\.status) == [404, 200])
        #expect(logged.first?.path.contains("abc123") == false)
        #expect(logged.first?.path.contains("token=") == true)
    }

    @Test("--latency delays each answer by the time asked for")
    func latency() async throws {
        var configuration = ServeConfiguration(port: 0)
        configuration.latency = .milliseconds(40)
        let served = try Served(configuration)
        try await served.test { client in
            try await client.execute(uri: "/v0/", method: .get) { _ in }
        }
        // The log's own measure: a lower bound, never a timing of the machine.
        #expect(try #require(served.logged.withLock { $0.first }).seconds >= 0.040)
    }
}
