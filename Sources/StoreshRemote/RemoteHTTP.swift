import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import StoreshCore
import StoreshWire
import Synchronization

/// When a failed request is sent again (rule G4): 408, 429, 5xx and broken connections, with exponential backoff
/// and jitter, until a total time is spent. A request that changes something is repeated only when the caller
/// says a repeat is harmless (a precondition makes it so).
package struct RetryPolicy: Sendable {
    /// The first wait, doubled at each retry.
    package var initialDelay: Double
    /// No wait is longer than this.
    package var maximumDelay: Double
    /// No retry starts once this much time has passed since the first attempt.
    package var giveUpAfter: Double

    package init(initialDelay: Double = 1, maximumDelay: Double = 32, giveUpAfter: Double = 120) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.giveUpAfter = giveUpAfter
    }

    /// Statuses that say "try again later", not "this request is wrong".
    package static func isRetryable(status: Int) -> Bool { [408, 429, 500, 502, 503, 504].contains(status) }

    /// Statuses by which a service says "slower" (rule Q1): 429, and 503 (S3's SlowDown; Cloud Storage's
    /// overloaded backend).
    package static func isPushback(status: Int) -> Bool { status == 429 || status == 503 }

    /// The wait before retry number `retry` (0 for the first): the doubled delay, capped, with full jitter
    /// between half of it and all of it, so that parallel requests refused together do not come back together.
    func delay(beforeRetry retry: Int, retryAfter: Double?) -> Double {
        let doubled = min(maximumDelay, initialDelay * pow(2, Double(min(retry, 30))))
        let jittered = doubled * Double.random(in: 0.5...1)
        guard let retryAfter else { return jittered }
        return min(max(jittered, retryAfter), maximumDelay)
    }
}

/// One request to a remote service.
package struct RemoteRequest: Sendable {
    package var method: HTTPMethod
    package var url: String
    package var headers: [(String, String)]
    package var body: Data?
    /// True when sending it twice does no harm: a read, or a change guarded by a precondition.
    package var repeatable: Bool
    /// How many writes it makes, as the service counts them against its rate (rule Q1): none for a read, one
    /// for a change, one per call for a batch.
    package var writes: Int
    /// What `--trace` adds after the URL (a batch's calls).
    package var traceNote: String?

    package init(
        method: HTTPMethod, url: String, headers: [(String, String)] = [], body: Data? = nil, repeatable: Bool,
        writes: Int? = nil,
        traceNote: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.repeatable = repeatable
        self.writes = writes ?? ([.GET, .HEAD].contains(method) ? 0 : 1)
        self.traceNote = traceNote
    }
}

/// A service's answer: its status, headers and whole body.
package struct RemoteResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: Data
    /// How many times the request was sent (1 when it was not retried).
    package var attempts: Int
    /// When the last attempt was let go by the write pacer (its clock), to tell it of calls of a batch pushed back.
    package var sentAt: Double?

    package func header(_ name: String) -> String? { headers.first(name: name) }
}

/// Where a request goes and what it says: a line for `--trace`, with every credential and token left out.
package protocol RequestTrace: Sendable {
    func sent(_ request: RemoteRequest, status: Int?, attempt: Int, milliseconds: Int)
    /// What a request's answer held beyond its status (a batch's answers to its calls).
    func answered(_ summary: String)
}

/// The HTTP client every remote bucket shares: one pool of kept-alive connections (HTTP/2 where the service
/// offers it over TLS), timeouts on every request, and the retry policy of G4.
package final class RemoteHTTP: Sendable {
    let client: HTTPClient
    let policy: RetryPolicy
    package let trace: (any RequestTrace)?
    /// Paces the requests that change something (rule Q1); nil sends them as they come.
    package let pacer: WritePacer?
    /// Checked between attempts and during waits: Ctrl-C ends a wait at once.
    let isCancelled: @Sendable () -> Bool
    private let closed = LockedFlag()

    /// The longest a request may take, headers and body; a stalled connection is a broken one.
    static let requestTimeout: TimeAmount = .seconds(120)
    /// The largest body read into memory.
    static let largestBody = 1 << 31

    package init(
        policy: RetryPolicy = RetryPolicy(), connectionsPerHost: Int = 16, trace: (any RequestTrace)? = nil,
        pacing: WriteRateLimits? = nil, isCancelled: @escaping @Sendable () -> Bool = { false }
    ) {
        var configuration = HTTPClient.Configuration(
            timeout: .init(connect: .seconds(15), read: .seconds(60)))
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(1, connectionsPerHost))
        configuration.httpVersion = .automatic
        configuration.decompression = .disabled
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.policy = policy
        self.trace = trace
        self.pacer = pacing.map(WritePacer.init)
        self.isCancelled = isCancelled
    }

    /// Sends `request` with `authorization` (asked anew for each attempt, so that a token refreshed meanwhile is
    /// used), retrying as the policy says; answers the service's last response, whatever its status.
    /// With `sink`, a successful answer's body goes into it a piece at a time (and the response's body is empty);
    /// a body that breaks off midway is an error, never retried (the sink holds part of it).
    package func send(
        _ request: RemoteRequest, into sink: (any ContentSink)? = nil,
        authorization: @Sendable () async throws -> String?
    ) async throws -> RemoteResponse {
        try await send(request, into: sink) { _ in try await authorization().map { [("Authorization", $0)] } ?? [] }
    }

    /// Sends `request` as above, with the headers `authorizing` gives for each attempt: a signature that covers the
    /// request and the time of the attempt (SigV4), or a bearer token.
    package func send(
        _ request: RemoteRequest, into sink: (any ContentSink)? = nil,
        authorizing: @Sendable (RemoteRequest) async throws -> [(String, String)]
    ) async throws -> RemoteResponse {
        let started = ContinuousClock.now
        var retry = 0
        while true {
            if isCancelled() { throw StorageError(.cancelled, "Interrupted before the request was sent.") }
            let paced = request.writes > 0 ? pacer : nil
            let sentAt = try await paced?.admit(weight: request.writes, isCancelled: isCancelled)
            let attemptStarted = ContinuousClock.now
            var retryAfter: Double?
            let failure: Error
            do {
                let (response, body) = try await attempt(
                    request, authorization: try await authorizing(request), timeout: Self.requestTimeout, sink: sink)
                let status = Int(response.status.code)
                trace?.sent(
                    request, status: status, attempt: retry + 1, milliseconds: Self.milliseconds(since: attemptStarted))
                if let paced, let sentAt {
                    if RetryPolicy.isPushback(status: status) { paced.pushedBack(sentAt: sentAt, withdrawn: 0) }
                    paced.ended(sentAt: sentAt, accepted: status < 400 ? request.writes : 0)
                }
                var answer = RemoteResponse(status: status, headers: response.headers, body: body, attempts: retry + 1)
                answer.sentAt = sentAt
                guard RetryPolicy.isRetryable(status: status), request.repeatable else { return answer }
                retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
                failure = RemoteFailure.status(answer)
            } catch let error as StorageError {
                if let paced, let sentAt { paced.ended(sentAt: sentAt, accepted: 0) }
                throw error
            } catch let error as StreamBroke {
                if let paced, let sentAt { paced.ended(sentAt: sentAt, accepted: 0) }
                throw Self.describe(error.cause, request)
            } catch {
                if let paced, let sentAt { paced.ended(sentAt: sentAt, accepted: 0) }
                trace?.sent(
                    request, status: nil, attempt: retry + 1, milliseconds: Self.milliseconds(since: attemptStarted))
                guard request.repeatable, Self.isBrokenConnection(error) else { throw Self.describe(error, request) }
                failure = error
            }
            guard try await waitBeforeRetry(retry, retryAfter: retryAfter, since: started) else {
                if case RemoteFailure.status(let answer) = failure { return answer }
                throw Self.describe(failure, request, gaveUpAfter: retry + 1)
            }
            retry += 1
        }
    }

    /// One attempt, with its own time limit and no retry (asking whether a service is there at all).
    package func sendOnce(_ request: RemoteRequest, timeout: TimeAmount) async throws -> RemoteResponse {
        let (response, body) = try await attempt(request, authorization: [], timeout: timeout)
        return RemoteResponse(status: Int(response.status.code), headers: response.headers, body: body, attempts: 1)
    }

    private func attempt(
        _ request: RemoteRequest, authorization: [(String, String)], timeout: TimeAmount, sink: (any ContentSink)? = nil
    ) async throws -> (HTTPClientResponse, Data) {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = request.method
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        for (name, value) in authorization { outgoing.headers.replaceOrAdd(name: name, value: value) }
        if let body = request.body {
            outgoing.body = .bytes(ByteBuffer(bytes: body))
        } else if [.POST, .PUT, .PATCH].contains(request.method) {
            outgoing.headers.replaceOrAdd(name: "Content-Length", value: "0")
        }
        let response = try await client.execute(outgoing, timeout: timeout)
        if let sink, (200..<300).contains(Int(response.status.code)) {
            do {
                for try await piece in response.body { try sink.write(Data(piece.readableBytesView)) }
            } catch let error as StorageError {
                throw error
            } catch {
                throw StreamBroke(cause: error)
            }
            return (response, Data())
        }
        let buffer = try await response.body.collect(upTo: Self.largestBody)
        return (response, Data(buffer.readableBytesView))
    }

    /// Waits before retry number `retry` (0 for the first) of something first sent at `started`, as the policy
    /// says; false, without waiting, when that would go past the policy's total time.
    package func waitBeforeRetry(
        _ retry: Int, retryAfter: Double?, since started: ContinuousClock.Instant
    ) async throws -> Bool {
        let wait = policy.delay(beforeRetry: retry, retryAfter: retryAfter)
        let spent = Double(Self.milliseconds(since: started)) / 1000
        guard spent + wait <= policy.giveUpAfter else { return false }
        try await pause(seconds: wait)
        return true
    }

    /// Waits, in short steps so that Ctrl-C is noticed at once.
    private func pause(seconds: Double) async throws {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            if isCancelled() { throw StorageError(.cancelled, "Interrupted while waiting to retry.") }
            try await Task.sleep(for: min(.milliseconds(50), end - ContinuousClock.now))
        }
    }

    /// Closes every connection; later requests fail. Closing twice does nothing.
    package func close() {
        guard closed.setOnce() else { return }
        try? client.syncShutdown()
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    /// A connection that broke or timed out, which a repeat may get past. A refused connection is not one: no
    /// service listens there, and saying so at once beats two minutes of retries; nor is anything else (a bad
    /// URL, TLS that does not verify), which would fail the same way again.
    static func isBrokenConnection(_ error: Error) -> Bool {
        if let error = error as? HTTPClientError {
            return [.remoteConnectionClosed, .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout].contains(
                error)
        }
        return error is IOError || error is ChannelError
    }

    /// A transport failure as a storage error that says which service could not be reached.
    static func describe(_ error: Error, _ request: RemoteRequest, gaveUpAfter attempts: Int? = nil) -> StorageError {
        let host =
            URLComponents(string: request.url).map {
                "\($0.scheme ?? "http")://\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")"
            } ?? "the service"
        let tries = attempts.map { " (gave up after \($0) attempts)" } ?? ""
        return StorageError(.unavailable, "Could not reach \(host): \(Self.plain(error))\(tries).")
    }

    static func plain(_ error: Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .connectTimeout: return "the connection timed out"
            case .readTimeout, .deadlineExceeded: return "the service did not answer in time"
            case .remoteConnectionClosed: return "the service closed the connection"
            default: return "\(error)"
            }
        }
        if let error = error as? NIOConnectionError {
            return "no connection could be made (\(error.connectionErrors.first.map { "\($0.error)" } ?? "\(error)"))"
        }
        return "\(error)"
    }
}

/// A download that broke off after part of it was written: not retried.
struct StreamBroke: Error {
    var cause: Error
}

/// A failure that a retry might get past.
enum RemoteFailure: Error {
    case status(RemoteResponse)
}

/// A flag set once.
final class LockedFlag: Sendable {
    private let value = Atomic(false)

    /// True the first time only.
    func setOnce() -> Bool {
        !value.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// `--trace`: one line per request sent, on standard error, as it is answered. Headers and bodies are not shown,
/// and the query parameters that grant access by themselves (a download token, an upload session, a presigned
/// signature) are left out, so a trace can be pasted into a bug report or shown to a class.
package struct RequestLog: RequestTrace {
    package init() {}

    package func sent(_ request: RemoteRequest, status: Int?, attempt: Int, milliseconds: Int) {
        let outcome = status.map { "\($0)" } ?? "no answer"
        let repeated = attempt > 1 ? " (attempt \(attempt))" : ""
        let note = request.traceNote.map { " (\($0))" } ?? ""
        write(
            "\(request.method.rawValue) \(SecretParameters.redacted(request.url))\(note) → \(outcome) in \(milliseconds) ms\(repeated)"
        )
    }

    package func answered(_ summary: String) { write("  " + summary) }

    private func write(_ text: String) {
        // A closed standard error loses the trace, not the run (the non-throwing `write` would trap).
        try? FileHandle.standardError.write(contentsOf: Data("storesh: trace: \(text)\n".utf8))
    }

}
