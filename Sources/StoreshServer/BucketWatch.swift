import Foundation
import StoreshLocal

/// Tells the open pages of the bucket (`GET /_storesh/events`) when it changed, by anyone: this server's clients,
/// a shell or a script on the same file. One loop, on a connection of its own, asks SQLite's `data_version` every
/// quarter second, and only while a page listens: browsers wait on their stream instead of polling the server.
final class BucketWatch: @unchecked Sendable {
    static let interval: Duration = .milliseconds(250)

    private let connection: LocalBucket
    private let lock = NSLock()
    private var listeners: [UUID: AsyncStream<Void>.Continuation] = [:]
    private var looking = false
    private var closed = false

    init(_ connection: LocalBucket) {
        self.connection = connection
    }

    /// A stream with an element for each change seen from now on (changes close together may come as one), and
    /// how to end it.
    func changes() -> (stream: AsyncStream<Void>, end: @Sendable () -> Void) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        let starts = lock.withLock {
            if closed {
                continuation.finish()
                return false
            }
            listeners[id] = continuation
            defer { looking = true }
            return !looking
        }
        if starts {
            let last = try? connection.changeCounter()
            Task { await self.look(from: last) }
        }
        return (stream, { continuation.finish() })
    }

    private func remove(_ id: UUID) {
        _ = lock.withLock { listeners.removeValue(forKey: id) }
    }

    /// Looks for changes while anyone listens; the last listener gone, it stops.
    private func look(from start: Int64?) async {
        var last = start
        while true {
            try? await Task.sleep(for: Self.interval)
            let now = try? connection.changeCounter()
            let (listening, closing): ([AsyncStream<Void>.Continuation]?, Bool) = lock.withLock {
                if listeners.isEmpty || closed {
                    looking = false
                    return (nil, closed)
                }
                return (Array(listeners.values), false)
            }
            guard let listening else {
                // The connection is the loop's while it runs: closed here when the server stopped meanwhile.
                if closing { connection.close() }
                return
            }
            if now != last {
                last = now
                for listener in listening { listener.yield() }
            }
        }
    }

    /// Ends every stream and closes the connection (the server stops).
    func close() {
        let (all, idle) = lock.withLock {
            closed = true
            return (Array(listeners.values), !looking)
        }
        for listener in all { listener.finish() }
        if idle { connection.close() }
    }
}
