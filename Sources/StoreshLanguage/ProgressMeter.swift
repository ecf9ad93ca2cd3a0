import Foundation
import StoreshCore

/// How far a long piece of work has come: what it does, how many of how many, since when.
package struct WorkProgress: Sendable {
    /// What is being done, as the line starts: "updating", "planning", "applying", "deleting".
    package var activity: String
    package var done: Int
    /// How many there are in all, when that is known beforehand (a plan); a pattern's matches are counted as met.
    package var total: Int?
    package var failed: Int
    package var started: ContinuousClock.Instant
    /// What is counted, when the total is not known: `object` ("120,000 objects"), `record`.
    package var unit: String

    package init(
        activity: String, done: Int, total: Int?, failed: Int = 0, started: ContinuousClock.Instant,
        unit: String = "object"
    ) {
        self.unit = unit
        self.activity = activity
        self.done = done
        self.total = total
        self.failed = failed
        self.started = started
    }
}

/// Counts the objects a long command goes through, and tells a progress line (standard error, on a terminal) how
/// far it has come: first after a second, then at most ten times a second. Its cost per object is a counter (the
/// command that counts calls `advance` from one task at a time), and a lock and a clock read every `stride`
/// objects; a command that ends within the second shows nothing.
package final class ProgressMeter: WorkCounter, @unchecked Sendable {
    private let show: @Sendable (WorkProgress) -> Void
    private let clear: @Sendable () -> Void
    private let lock = NSLock()
    private var current: WorkProgress?
    private var shownAt: ContinuousClock.Instant?
    /// Counted since the last look, by the one task that advances (no lock per object).
    private var pendingDone = 0
    private var pendingFailed = 0

    /// Objects between two looks at the clock.
    static let stride = 256
    /// Nothing is shown before the work has taken this long.
    static let quiet: Duration = .seconds(1)
    static let interval: Duration = .milliseconds(100)

    package init(show: @escaping @Sendable (WorkProgress) -> Void, clear: @escaping @Sendable () -> Void) {
        self.show = show
        self.clear = clear
    }

    /// A piece of work starts (a command's objects, a plan's changes).
    package func begin(_ activity: String, total: Int? = nil, unit: String = "object") {
        lock.withLock {
            current = WorkProgress(activity: activity, done: 0, total: total, started: .now, unit: unit)
            shownAt = nil
        }
        (pendingDone, pendingFailed) = (0, 0)
    }

    /// `count` more objects are done (`failed` of them failed).
    package func advance(by count: Int = 1, failed: Int = 0) {
        pendingDone += count
        pendingFailed += failed
        guard pendingDone >= Self.stride else { return }
        let (done, failures) = (pendingDone, pendingFailed)
        (pendingDone, pendingFailed) = (0, 0)
        let due: WorkProgress? = lock.withLock {
            guard current != nil else { return nil }
            current!.done += done
            current!.failed += failures
            let now = ContinuousClock.now
            guard now - current!.started >= Self.quiet, shownAt.map({ now - $0 >= Self.interval }) ?? true else {
                return nil
            }
            shownAt = now
            return current
        }
        if let due { show(due) }
    }

    /// The work ended: its line goes (what it did is said by the command's own output).
    package func end() {
        let shown: Bool = lock.withLock {
            defer { (current, shownAt) = (nil, nil) }
            return shownAt != nil
        }
        if shown { clear() }
    }
}
