import Dispatch
import Foundation
import StoreshCore
import Synchronization

/// Tab completion's reads on a real bucket: answered from pages read in the last half minute, else read now
/// within a short time budget, so that a key press never holds the line editor for long. A read that takes longer
/// goes on in the background and fills the cache: the next Tab finds it. Changes this process makes empty the
/// cache, so that it never offers a name just deleted.
final class CompletionReads: ImmediateReads, @unchecked Sendable {
    unowned let bucket: any Bucket
    /// How long a key press may wait for the service.
    let budget: DispatchTimeInterval
    /// How long a page read is used before it is read again.
    let lifetime: Duration

    /// The pages and objects read, each with when. Pages are keyed by bytes (rule P7): the pages of two canonically
    /// equivalent prefixes are two pages.
    private struct Cache {
        var pages: [[UInt8]: (page: ListPage, read: ContinuousClock.Instant)] = [:]
        var objects: [ObjectName: (metadata: ObjectMetadata, read: ContinuousClock.Instant)] = [:]
    }

    private let cache = Mutex(Cache())

    init(bucket: any Bucket, budget: DispatchTimeInterval = .milliseconds(400), lifetime: Duration = .seconds(30)) {
        self.bucket = bucket
        self.budget = budget
        self.lifetime = lifetime
    }

    var name: String { bucket.name }

    func listPage(_ reference: StoragePath, options: ListOptions) throws(StorageError) -> ListPage {
        // Each part with its length first, so that no name (NUL included) can run into the next.
        let key = [
            reference.listingPrefix, options.startOffset ?? "", options.pageToken ?? "",
            String(options.maxResults ?? 0),
        ]
        .flatMap { (part: String) -> [UInt8] in
            Array(String(part.utf8.count).utf8) + [UInt8(ascii: ":")] + Array(part.utf8)
        }
        if let cached = cache.withLock({ $0.pages[key] }), ContinuousClock.now - cached.read < lifetime {
            return cached.page
        }
        let bucket = self.bucket
        return try briefly { [self] in
            let page = try await bucket.list(reference, options: options)
            cache.withLock { $0.pages[key] = (page, .now) }
            return page
        }
    }

    func currentMetadata(of object: ObjectName) throws(StorageError) -> ObjectMetadata {
        if let cached = cache.withLock({ $0.objects[object] }), ContinuousClock.now - cached.read < lifetime {
            return cached.metadata
        }
        let bucket = self.bucket
        return try briefly { [self] in
            let metadata = try await bucket.metadata(of: object)
            cache.withLock { $0.objects[object] = (metadata, .now) }
            return metadata
        }
    }

    /// Forgets every page and object read (after a change).
    func forget() {
        cache.withLock { $0 = Cache() }
    }

    /// Runs `work` and waits for it at most the budget; a read still running then is left to finish (and fill the
    /// cache) on its own.
    private func briefly<Value: Sendable>(
        _ work: @escaping @Sendable () async throws -> Value
    ) throws(StorageError) -> Value {
        let outcome = Outcome<Value>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                outcome.set(.success(try await work()))
            } catch {
                outcome.set(.failure(error as? StorageError ?? StorageError(.unknown, "\(error)")))
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + budget) == .success, let result = outcome.value else {
            throw StorageError(.unavailable, "gs://\(name) did not answer within Tab's time budget.")
        }
        return try result.get()
    }
}

/// A result handed from a task to a waiting thread.
private final class Outcome<Value: Sendable>: Sendable {
    private let stored = Mutex<Result<Value, StorageError>?>(nil)

    func set(_ result: Result<Value, StorageError>) { stored.withLock { $0 = result } }
    var value: Result<Value, StorageError>? { stored.withLock { $0 } }
}
