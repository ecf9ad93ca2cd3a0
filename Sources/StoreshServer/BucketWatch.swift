import Foundation
import StoreshLocal
import Synchronization

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
        // The count to compare with is read when the loop starts, under the lock that `close` takes, so that the
        // connection is never used once closed. (A stream is finished outside the lock: its end takes the lock.)
        enum Start {
            case closed, running
            case from(Int64?)
        }
        let start: Start = lock.withLock {
            if closed { return .closed }
            listeners[id] = continuation
            if looking { return .running }
            looking = true
            return .from(try? connection.changeCounter())
        }
        switch start {
        case .closed: continuation.finish()
        case .running: break
        case .from(let count): Task { await self.look(from: count) }
        }
        return (stream, { continuation.finish() })
    }

    /// Whether a page listens now (its bucket is in use, and stays open).
    var isWatched: Bool { lock.withLock { !listeners.isEmpty } }

    private func remove(_ id: UUID) {
        _ = lock.withLock { listeners.removeValue(forKey: id) }
    }

    /// Looks for changes while anyone listens; the last listener gone, or the watch closed, it stops.
    private func look(from start: Int64?) async {
        var last = start
        while true {
            try? await Task.sleep(for: Self.interval)
            let seen: (now: Int64?, listening: [AsyncStream<Void>.Continuation])? = lock.withLock {
                if listeners.isEmpty || closed {
                    looking = false
                    return nil
                }
                return (try? connection.changeCounter(), Array(listeners.values))
            }
            guard let seen else { return }
            if seen.now != last {
                last = seen.now
                for listener in seen.listening { listener.yield() }
            }
        }
    }

    /// Ends every stream and closes the connection (the server stops): at once, so that the bucket file is left
    /// whole when the process ends right after.
    func close() {
        let all: [AsyncStream<Void>.Continuation] = lock.withLock {
            closed = true
            connection.close()
            return Array(listeners.values)
        }
        for listener in all { listener.finish() }
    }
}

/// Places for long-lived answers (the page's event streams), counted apart from the connections: a place is taken
/// by `enter` and given back once, by `release` or when nothing holds it any more.
final class StreamCount: Sendable {
    let limit: Int
    private let open = Mutex(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// A place, or nil when all are taken.
    func enter() -> Slot? {
        let entered = open.withLock { open in
            guard open < limit else { return false }
            open += 1
            return true
        }
        return entered ? Slot(self) : nil
    }

    fileprivate func leave() {
        open.withLock { $0 -= 1 }
    }

    final class Slot: Sendable {
        private let count: StreamCount
        /// Whether the place was given back, and what to do when it is.
        private let state = Mutex<(released: Bool, cleanup: (@Sendable () -> Void)?)>((false, nil))

        fileprivate init(_ count: StreamCount) {
            self.count = count
        }

        /// What to do when the place is given back.
        func onRelease(_ body: @escaping @Sendable () -> Void) {
            state.withLock { $0.cleanup = body }
        }

        func release() {
            let body: (@Sendable () -> Void)?? = state.withLock { state in
                if state.released { return nil }
                state.released = true
                return .some(state.cleanup)
            }
            guard let body else { return }
            body?()
            count.leave()
        }

        deinit { release() }
    }
}
