import NIOPosix

/// Where `storesh serve` does its blocking work: SQLite's reads and commits (a commit may wait up to the busy
/// timeout for another writer of the file, then fsync), spools and the bucket file's pieces. Swift's cooperative pool
/// has one thread per core, two on a small machine: two requests waiting on a busy bucket file there would leave no
/// thread for any other request, the live page or the server's own I/O. The responders of the APIs and of the page
/// therefore run with this executor as their preference (`withTaskExecutorPreference`), and each bucket's commits
/// too: their synchronous parts run on NIO's thread pool, a bounded set of threads made for blocking work, and their
/// waits for the network stay suspensions; so does a streamed answer's body (a download read from its spool), which
/// Hummingbird writes after its responder has answered. The live page's event stream, which only waits, does not.
final class StorageWork: TaskExecutor, @unchecked Sendable {
    /// The process's: serve's buckets share it.
    static let shared = StorageWork(threads: 16)

    private let pool: NIOThreadPool

    init(threads: Int) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        // A job always runs: on the pool, or (a pool shut down, which the process's never is) where it was given.
        pool.submit { _ in job.runSynchronously(on: executor) }
    }
}
