import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import StoreshCore
import StoreshLocal
import StoreshWire

/// How `storesh serve` runs.
package struct ServeConfiguration: Sendable {
    package var host: String
    /// 0 picks a free port (the one bound is given to `onListening`).
    package var port: Int
    package var limits: ServeLimits
    /// Connections that read the bucket in parallel, beside the one that writes.
    package var readerCount: Int
    /// Added before every answer, as a distant service's round trip would be: an app's loading states, or a
    /// client's parallelism, can then be tried on loopback. The wait holds no thread.
    package var latency: Duration
    /// Which pages and host names the server answers (`--cors`, `--allow-host`).
    package var originPolicy: OriginPolicy
    /// A connection that sends nothing this long (a request's header or body stalled, or idle between requests)
    /// is closed, so that half-open connections cannot pile up (rule V4: clients never hang the server).
    package var idleTimeout: Duration = .seconds(60)
    /// Connections served at once; more wait to be accepted until one closes.
    package var maximumConnections = 1024
    /// The service account key V4 signed URLs are checked against (`--signing-key`); without one, their form and
    /// time are checked but not their signature.
    package var signingKey: SignedURLKey?
    /// Whether a write to a bucket that does not exist makes it on every API (`--create-buckets-on-write`, as the
    /// Firebase emulator does), not only on the Firebase v0 API: on the JSON and XML APIs it is otherwise a 404, as on
    /// Cloud Storage (rule V6).
    package var createsBucketsOnEveryWrite = false

    package init(
        host: String = "127.0.0.1", port: Int = 9199, limits: ServeLimits = ServeLimits(), readerCount: Int = 4,
        latency: Duration = .zero, originPolicy: OriginPolicy = OriginPolicy()
    ) {
        self.host = host
        self.port = port
        self.limits = limits
        self.readerCount = readerCount
        self.latency = latency
        self.originPolicy = originPolicy
    }
}

/// One request served, for the log line a terminal shows.
package struct ServedRequest: Sendable {
    package var method: String
    /// The path and query as people read them (`MessageText.readableTarget`: names decoded), with the values that
    /// grant access elided.
    package var path: String
    package var status: Int
    package var seconds: Double
}

extension ServedRequest {
    /// The path and query, with the values that grant access elided (as a client's trace elides them), and the
    /// names in them decoded, as people read them (issue 52: `photos%2Fver%C3%A3o.jpg` is `photos/verão.jpg`).
    static func loggable(path: String, query: String?) -> String {
        guard let query, !query.isEmpty else { return MessageText.readableTarget(path) }
        return MessageText.readableTarget(SecretParameters.redacted(path + "?" + query))
    }
}

/// A local bucket served over HTTP with the API of the Firebase Storage emulator (rules V1–V5).
package final class StorageServer: Sendable {
    private let api: StorageAPI
    private let configuration: ServeConfiguration

    /// Serves `bucket` (open; the server closes it when it stops) and every other bucket a client names, each from
    /// `NAME.bucket` in `otherBuckets` (rule V6); `onCreate` is told each bucket file the server makes.
    package init(
        bucket: LocalBucket, otherBuckets: String, options: LocalBucketOptions, configuration: ServeConfiguration,
        onCreate: @escaping @Sendable (_ bucket: String, _ path: String) -> Void = { _, _ in }
    ) throws {
        self.configuration = configuration
        let primary = try ServedBucket(bucket, options: options, readerCount: configuration.readerCount)
        api = StorageAPI(
            buckets: ServedBuckets(
                primary: primary, directory: otherBuckets, options: options, readerCount: configuration.readerCount,
                onCreate: onCreate),
            limits: configuration.limits, signingKey: configuration.signingKey,
            createsBucketsOnEveryWrite: configuration.createsBucketsOnEveryWrite)
    }

    /// Why the first bucket's stored security rules cannot be used, when they cannot (every v0 request they would
    /// decide is then denied until rules are loaded).
    package var rulesProblem: String? { try? api.buckets.primary.rulesSession(as: nil).problem }

    /// Checks `source` (an error names `origin`:LINE:COLUMN), then keeps it as the rules of `bucket` (opened, and
    /// made if there is none), or with nil of every bucket, and puts it in force for the requests that follow.
    package func loadRules(source: String, origin: String, bucket: String? = nil) async throws {
        try await api.buckets.setRules(ServedBuckets.ProjectRules(source: source, origin: origin), for: bucket)
    }

    /// The name and file of every bucket served (the first, then the others by name), for an export; read after
    /// the server stopped too.
    package var servedBuckets: [(name: String, path: String)] { api.buckets.files() }

    /// Serves until SIGINT or SIGTERM, then stops accepting, lets the requests in progress finish (each change is
    /// durable before it is answered), and closes the bucket. `onListening` is told the address bound.
    /// Returns how many changes landed, in how many commits.
    @discardableResult
    package func run(
        onListening: @escaping @Sendable (_ host: String, _ port: Int) -> Void,
        log: (@Sendable (ServedRequest) -> Void)? = nil
    ) async throws -> (changes: Int, commits: Int) {
        let router = self.router(log: log)
        var logger = Logger(label: "storesh-serve")
        logger.logLevel = .error
        let host = configuration.host
        // Half of the descriptors are kept for the buckets (`OpenBucketBudget`): twice the connections, and some.
        Self.raiseDescriptorLimit(toAtLeast: 2 * configuration.maximumConnections + 256)
        let connections = Self.connectionBound(configuration.maximumConnections)
        let app = Application(
            router: router,
            server: .http1(
                configuration: HTTP1Channel.Configuration(
                    additionalChannelHandlers: [ParseErrorAnswer(), ClosingAnswer()],
                    idleTimeout: TimeAmount(configuration.idleTimeout))),
            configuration: ApplicationConfiguration(
                address: .hostname(host, port: configuration.port), serverName: "storesh",
                availableConnectionsDelegate: MaximumAvailableConnections(connections)),
            onServerRunning: { channel in onListening(host, channel.localAddress?.port ?? 0) },
            logger: logger)
        defer {
            api.journal.close()
            api.buckets.close()
        }
        do {
            try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
        } catch let error as IOError {
            throw ServeError(listening: error, host: host, port: configuration.port)
        } catch is SocketAddressError.UnknownHost {
            throw ServeError(description: "Cannot listen on \(host): no such host or address (--host).")
        }
        return (api.buckets.committedChanges, api.buckets.commits)
    }
}

extension StorageServer {
    /// How often a live page's stream carries a comment, and how long a stream lasts before the page opens another.
    static let eventKeepAlive: Duration = .seconds(15)
    static let eventStreamLifetime: Duration = .seconds(300)

    /// Binds `configuration`'s address and lets it go at once, so that a port another process holds (or a host that
    /// is no address of this machine) is found before `storesh serve` writes anything: an import or the project's
    /// rules land only once the server can start. Port 0 (any free port) cannot be taken.
    package static func checkAddress(of configuration: ServeConfiguration) async throws {
        guard configuration.port != 0 else { return }
        do {
            let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: configuration.host, port: configuration.port).get()
            try await channel.close()
        } catch let error as IOError {
            throw ServeError(listening: error, host: configuration.host, port: configuration.port)
        } catch is SocketAddressError.UnknownHost {
            throw ServeError(description: "Cannot listen on \(configuration.host): no such host or address (--host).")
        }
    }

    /// Each connection, each spool file and the bucket's connections take a descriptor: the soft limit (often
    /// 1,024) is raised toward the hard one so that the connection bound, not the descriptor limit, is met first.
    /// The connections served at once: as many as asked, within the descriptors kept for them
    /// (`OpenBucketBudget.keptForConnections`, less some for the spools and logs of their requests), so that
    /// connections never take the descriptors the buckets need (300 idle connections at `ulimit -n 256` once took
    /// every one). More wait to be accepted until one closes.
    static func connectionBound(_ asked: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return asked }
        let soft = Int(min(limit.rlim_cur, 1 << 20))
        return max(16, min(asked, OpenBucketBudget.keptForConnections(soft) - 32))
    }

    static func raiseDescriptorLimit(toAtLeast wanted: Int) {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(wanted)
        else { return }
        limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// Why the server could not start, in words a user can act on.
package struct ServeError: Error, CustomStringConvertible {
    package let description: String

    init(description: String) {
        self.description = description
    }

    init(listening error: IOError, host: String, port: Int) {
        let address = "\(host):\(port)"
        switch error.errnoCode {
        case EADDRINUSE:
            description =
                "Cannot listen on \(address): the port is in use (another storesh serve, or the Firebase emulator?). Choose another with --port, or --port 0 for a free one."
        case EACCES:
            description = "Cannot listen on \(address): ports below 1024 need privileges. Choose another with --port."
        case EADDRNOTAVAIL:
            description = "Cannot listen on \(address): no network interface of this machine has that address (--host)."
        default:
            description = "Cannot listen on \(address): \(String(cString: strerror(error.errnoCode)))."
        }
    }
}

extension StorageServer {
    /// The methods the APIs answer (any other is refused by the router).
    static let methods: [HTTPRequest.Method] = [.get, .head, .post, .put, .patch, .delete, .options]

    /// The routes of `storesh serve`, each through the middlewares (the page's request log, and a line per request
    /// to `log` when it is given; the latency asked for, the origin policy, HEAD as GET): the root is the bucket in a browser (`BucketPage`), and
    /// every other path goes to `StorageAPI`, which reads it strictly (`Endpoint`: percent-decoding, names with `/`
    /// in them, the batch's inner requests) and answers in each API's shapes, a 404 included.
    func router(log: (@Sendable (ServedRequest) -> Void)?) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: RequestLogMiddleware(log: log, journal: api.journal))
        router.add(middleware: LatencyMiddleware(latency: configuration.latency))
        router.add(
            middleware: OriginPolicyMiddleware(
                policy: configuration.originPolicy, listening: configuration.host, pageToken: api.pageToken))
        router.add(middleware: HeadMiddleware())
        let api = self.api
        // The bucket in a browser, at the root (no API has a path there).
        let page = CallbackResponder<BasicRequestContext> { request, _ in
            var shown = api.buckets.primary.name
            do {
                let query = try QueryParameters(request.uri.query)
                shown = query["bucket"] ?? shown
                let bucket = try api.buckets.bucket(named: shown, creating: false)
                return try await withTaskExecutorPreference(StorageWork.shared) {
                    try await BucketPage.answer(
                        bucket, among: api.buckets.all().map(\.name), journal: api.journal, query: query,
                        pageToken: api.pageToken)
                }.response
            } catch let failure as HTTPFailure {
                return Reply.failure(failure, firebase: false).response
            } catch {
                let failure = error as? StorageError ?? StorageError.internalError("\(error)")
                return Reply.failure(HTTPFailure(failure, bucket: shown, object: nil, firebase: false), firebase: false)
                    .response
            }
        }
        // The page, its assets and its live updates carry the page's security headers, from one middleware.
        let pageRoutes = router.group().add(middleware: PageSecurityMiddleware())
        for method: HTTPRequest.Method in [.get, .head] {
            pageRoutes.on("/", method: method, responder: page)
            for asset in PageAssets.all {
                pageRoutes.on(
                    RouterPath(asset.path), method: method,
                    responder: CallbackResponder { _, _ in PageAssets.answer(asset) })
            }
        }
        // The page's live updates: an event each time the bucket file changes, by anyone, and each time the APIs
        // answer a request, until the page closes or the server stops.
        let events = CallbackResponder<BasicRequestContext> { request, _ in
            // The changes of the bucket the page shows.
            let watched =
                (try? QueryParameters(request.uri.query))?["bucket"].flatMap {
                    try? api.buckets.bucket(named: $0, creating: false)
                }
                ?? api.buckets.primary
            // Streams count against a limit of their own, below the connections': past it, try again later.
            guard let slot = api.eventStreams.enter() else {
                var failure = HTTPFailure(
                    .serviceUnavailable, reason: "serviceUnavailable",
                    "storesh serve has \(OriginPolicy.maximumEventStreams) live pages open, as many as it keeps; try again shortly (reload, or close a tab)."
                )
                failure.headers[.retryAfter] = "5"
                // And the connection goes with it: a refused page must not hold one of the connections either.
                failure.headers[.connection] = "close"
                return Reply.failure(failure, firebase: false).response
            }
            // Listening before the answer's head goes out: a change made, or a request answered, once the page has
            // heard back is never missed.
            // A pending bucket is not found here (until its first change lands it has no file to watch); a bucket
            // that cannot be opened now is answered why.
            let watch: BucketWatch
            do {
                guard let found = try watched.watch() else { throw ServedBuckets.noSuchBucket(watched.name) }
                watch = found
            } catch {
                slot.release()
                let failure =
                    error as? HTTPFailure
                    ?? HTTPFailure(
                        error as? StorageError ?? .internalError("\(error)"), bucket: watched.name, object: nil,
                        firebase: false)
                return Reply.failure(failure, firebase: false).response
            }
            let (changes, endChanges) = watch.changes()
            let (arrivals, endArrivals) = api.journal.arrivals()
            // Both streams in one, an event name per element; a change and a request close together may come as one.
            let (events, merged) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(2))
            let forwarders = [
                Task {
                    for await _ in changes { merged.yield("change") }
                    merged.finish()
                },
                Task {
                    for await _ in arrivals { merged.yield("request") }
                    merged.finish()
                },
                // A comment now and then: a page that is gone shows as a write that fails, and the stream ends.
                Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: Self.eventKeepAlive)
                        merged.yield("keep-alive")
                    }
                },
                // A stream lasts a while, then ends; the browser's EventSource opens a new one at once (retry: 1000),
                // so a stream whose reader vanished without a word is gone within this time.
                Task {
                    try? await Task.sleep(for: Self.eventStreamLifetime)
                    merged.finish()
                },
            ]
            let end: @Sendable () -> Void = {
                endChanges()
                endArrivals()
                merged.finish()
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream"
            headers[.cacheControl] = "no-store"
            // Whatever becomes of the answer (written, or dropped with its connection before), its tasks end and its
            // place is given back once nothing holds it.
            slot.onRelease {
                end()
                for forwarder in forwarders { forwarder.cancel() }
            }
            return Response(
                status: .ok, headers: headers,
                body: ResponseBody { writer in
                    defer { slot.release() }
                    try await withGracefulShutdownHandler {
                        try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
                        for await event in events {
                            try await writer.write(
                                ByteBuffer(
                                    string: event == "keep-alive"
                                        ? ": keep-alive\n\n" : "event: \(event)\ndata: \(event)\n\n"))
                        }
                    } onGracefulShutdown: {
                        end()
                    }
                    try await writer.finish(nil)
                })
        }
        pageRoutes.on("/_storesh/events", method: .get, responder: events)
        // The APIs' requests do their blocking work on StorageWork's threads, not on the cooperative pool.
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            await withTaskExecutorPreference(StorageWork.shared) { await api.respond(to: request) }.response
        }
        for method in Self.methods where method != .get && method != .head {
            router.on("/", method: method, responder: responder)
        }
        for method in Self.methods { router.on("**", method: method, responder: responder) }
        return router
    }
}
