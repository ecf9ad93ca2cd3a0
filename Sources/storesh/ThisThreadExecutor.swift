import Foundation
import Synchronization

/// Runs an async body to its end on the calling thread, as the task executor of everything it awaits.
///
/// A script on a local bucket file (`storesh -c '…'`, a script on standard input) awaits only SQLite, which
/// answers at once: Swift's default executors would still start their thread pool for it (an async `main` parks the
/// main thread and hands the work to a new thread; each await may wake another; at the end a thread is started to
/// close the bucket), which measured about a millisecond of a cold `ls` (issue 23, `strace -f`). Here the jobs run
/// one after another on the main thread instead, and no thread is started. Jobs enqueued from other threads (a
/// detached task's result) wake it. Used only where nothing blocks waiting for other work of the same task tree:
/// the interactive prompt, `storesh serve` and the remote buckets keep Swift's pool.
final class ThisThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The exit status `body` returns, run here. (An exit status, not any value: a generic result's type would be
    /// made at run time, with a search of the binary's conformances.)
    static func run(_ body: @escaping @Sendable () async -> Int32) -> Int32 {
        let executor = ThisThreadExecutor()
        Task(executorPreference: executor) { executor.finish(with: await body()) }
        executor.runUntilFinished()
        return executor.condition.withLock { executor.status }
    }

    private var status: Int32 = 0

    private func finish(with status: Int32) {
        condition.lock()
        self.status = status
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func runUntilFinished() {
        // Bounded by the body: each round runs the jobs it enqueued, or waits for one; its end ends the loop.
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let ready = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in ready { job.runSynchronously(on: asUnownedTaskExecutor()) }
        }
    }
}

/// Runs an async body on Swift's own executors while the calling thread waits for its end: the prompt, the
/// subcommands, `storesh serve` and remote buckets, whose work runs on many threads at once.
func waitingForSwiftsExecutors<Value: Sendable>(_ body: @escaping @Sendable () async -> Value) -> Value {
    let done = DispatchSemaphore(value: 0)
    let result = Mutex<Value?>(nil)
    Task.detached {
        let value = await body()
        result.withLock { $0 = value }
        done.signal()
    }
    done.wait()
    return result.withLock { $0! }
}
