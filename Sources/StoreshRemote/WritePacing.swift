import Foundation
import StoreshCore
import Synchronization

/// Rule Q1's limits of a service: the write rate a bucket takes to start, how fast that may grow, and the caps
/// given by hand.
package struct WriteRateLimits: Sendable, Equatable {
    /// Writes a second at the start: what the service documents a new bucket takes.
    package var initialRate: Double
    /// The ceiling doubles at most this often (seconds).
    package var doublingInterval: Double
    /// `--rate N`: writes a second never exceeded, whatever the service would take.
    package var cap: Double?
    /// `--parallel N`: requests in flight never exceeded.
    package var maximumConcurrency: Int
    /// Whether the ramp is the service's documented one. An emulator documents none: the rate starts at the
    /// initial one and doubles every second until the first pushback, with no ceiling but `cap`.
    package var documented: Bool

    package init(
        initialRate: Double, doublingInterval: Double, cap: Double?, maximumConcurrency: Int, documented: Bool = true
    ) {
        self.initialRate = initialRate
        self.doublingInterval = doublingInterval
        self.cap = cap
        self.maximumConcurrency = max(1, maximumConcurrency)
        self.documented = documented
    }

    /// Cloud Storage: about 1,000 object writes a second per bucket to start, growing by at most doubling every
    /// 20 minutes.
    package static func cloudStorage(cap: Double?, maximumConcurrency: Int) -> WriteRateLimits {
        WriteRateLimits(initialRate: 1000, doublingInterval: 20 * 60, cap: cap, maximumConcurrency: maximumConcurrency)
    }

    /// An emulator of Cloud Storage (`$STORAGE_EMULATOR_HOST`): no documented limits, so the pace starts where
    /// Cloud Storage's does and finds the emulator's own by its answers.
    package static func emulator(cap: Double?, maximumConcurrency: Int) -> WriteRateLimits {
        WriteRateLimits(
            initialRate: 1000, doublingInterval: .infinity, cap: cap, maximumConcurrency: maximumConcurrency,
            documented: false)
    }

    /// S3: 3,500 writes a second per prefix. storesh does not see how S3 partitions a bucket's prefixes, so it
    /// keeps the whole bucket to one prefix's rate, which never grows.
    package static func s3(cap: Double?, maximumConcurrency: Int) -> WriteRateLimits {
        WriteRateLimits(
            initialRate: 3500, doublingInterval: .infinity, cap: cap, maximumConcurrency: maximumConcurrency)
    }
}

/// How fast a bulk apply sends its writes (rule Q1): the decisions alone, on times the caller gives (seconds from
/// any origin), so that a simulated service and clock can test them.
///
/// - **Rate.** Writes are spaced so that their rate never exceeds `rate` (a request of a batch counts each of its
///   calls). `rate` starts at the ceiling: the documented initial rate, capped by `--rate`; the ceiling doubles at
///   most every `doublingInterval`. (An emulator documents no ramp: `rate` starts at the same initial rate and
///   doubles every second until the first pushback.) While answers are clean, `rate` grows by 5% a second up to
///   the ceiling; when
///   the service pushes back (429, or S3's 503 SlowDown), it falls to what the service was taking (the writes it
///   accepted in the last second), so the apply settles just under what the service gives.
/// - **Concurrency.** Requests in flight start at 8 and grow by one per round of clean answers that came back
///   no slower than twice the fastest seen (a slower answer says the service is queueing), up to
///   `maximumConcurrency`; a pushback halves them.
/// - A pushback from a request sent before the last decrease is not counted again: it was sent at the old pace.
/// - `Retry-After` is honoured by the request that was refused (it is sent again no sooner).
package struct WriteRateController: Sendable {
    package let limits: WriteRateLimits
    /// Writes a second allowed now.
    package private(set) var rate: Double
    /// Requests allowed in flight now.
    package var concurrency: Int { Int(concurrencyLevel) }
    package private(set) var inFlight = 0
    /// How many times the service pushed back (counted once per decrease).
    package private(set) var decreases = 0

    private let origin: Double
    private var concurrencyLevel: Double
    /// When the next write may start (writes are spaced `1 / rate` apart).
    private var nextStart: Double
    private var lastDecrease = -Double.infinity
    private var lastIncrease: Double
    private var fastest = Double.infinity
    private var accepted = SlidingCount(window: 1, slots: 10)

    static let initialConcurrency = 8.0
    static let growthPerSecond = 0.05
    static let slowerThanFastest = 2.0
    static let lowestRate = 1.0

    package init(limits: WriteRateLimits, now: Double) {
        self.limits = limits
        origin = now
        nextStart = now
        lastIncrease = now
        concurrencyLevel = min(Double(limits.maximumConcurrency), Self.initialConcurrency)
        rate = 0
        rate = min(limits.initialRate, ceiling(at: now))
    }

    /// The most writes a second allowed at `now`: the documented ramp, capped by `--rate`.
    package func ceiling(at now: Double) -> Double {
        guard limits.documented else { return limits.cap ?? .infinity }
        let doublings = limits.doublingInterval.isFinite ? ((now - origin) / limits.doublingInterval).rounded(.down) : 0
        let ramp = limits.initialRate * pow(2, min(max(doublings, 0), 20))
        return min(ramp, limits.cap ?? .infinity)
    }

    /// Reserves the start of a request of `weight` writes: when it may be sent (`now` or later). Nil when
    /// `concurrency` requests are in flight already: ask again once one has ended.
    package mutating func reserve(weight: Int, now: Double) -> Double? {
        guard inFlight < concurrency else { return nil }
        inFlight += 1
        let start = max(now, nextStart)
        nextStart = start + Double(max(0, weight)) / rate
        return start
    }

    /// A reserved request ended at `now`, sent at `sentAt`: `accepted` of its writes were taken (0 for a refusal or a
    /// failure).
    package mutating func ended(sentAt: Double, now: Double, accepted count: Int) {
        inFlight = max(0, inFlight - 1)
        guard count > 0 else { return }
        accepted.add(count, at: now)
        let latency = max(0, now - sentAt)
        fastest = min(fastest, latency)
        if latency <= max(fastest * Self.slowerThanFastest, 0.002), sentAt >= lastDecrease {
            concurrencyLevel = min(Double(limits.maximumConcurrency), concurrencyLevel + 1 / concurrencyLevel)
        }
        let elapsed = now - lastIncrease
        if elapsed >= 0.1 {
            // Without a documented ramp, the rate doubles every second until the service first pushes back.
            let growth = !limits.documented && decreases == 0 ? pow(2, elapsed) : 1 + Self.growthPerSecond * elapsed
            rate = min(ceiling(at: now), rate * growth)
            lastIncrease = now
        }
    }

    /// The service pushed back on a request sent at `sentAt` (429, 503 SlowDown). `withdrawn`: writes `ended`
    /// counted as taken that were refused after all (calls of a batch whose request as a whole was answered 200).
    package mutating func pushedBack(sentAt: Double, now: Double, withdrawn: Int) {
        accepted.add(-withdrawn, at: now)
        guard sentAt >= lastDecrease else { return }
        lastDecrease = now
        lastIncrease = now
        decreases += 1
        concurrencyLevel = max(1, concurrencyLevel / 2)
        let taken = Double(accepted.total(at: now))
        rate = max(Self.lowestRate, taken > 0 ? min(rate, taken) : rate / 2)
    }

    /// Writes accepted in the last second.
    package func acceptedLastSecond(at now: Double) -> Int { accepted.total(at: now) }
}

/// Counts in a sliding window, kept in a few slots.
struct SlidingCount: Sendable {
    let slotLength: Double
    private var slots: [(start: Double, count: Int)]

    init(window: Double, slots: Int) {
        slotLength = window / Double(slots)
        self.slots = Array(repeating: (-Double.infinity, 0), count: slots)
    }

    mutating func add(_ count: Int, at now: Double) {
        let slotStart = (now / slotLength).rounded(.down) * slotLength
        let index = Int((now / slotLength).rounded(.down)) % slots.count
        let place = index < 0 ? index + slots.count : index
        if slots[place].start != slotStart { slots[place] = (slotStart, 0) }
        slots[place].count += count
    }

    func total(at now: Double) -> Int {
        let window = slotLength * Double(slots.count)
        return max(0, slots.reduce(0) { $0 + ($1.start > now - window ? $1.count : 0) })
    }
}

/// `WriteRateController` on the real clock, for every request that changes something: a request waits for its
/// turn, is sent, and says how it ended.
package final class WritePacer: Sendable {
    /// The controller, and the requests waiting for a place among those in flight.
    private let pacing: Mutex<(controller: WriteRateController, waiting: [CheckedContinuation<Void, Never>])>
    private let origin = ContinuousClock.now

    package init(limits: WriteRateLimits) {
        pacing = Mutex((WriteRateController(limits: limits, now: 0), []))
    }

    /// Seconds since the pacer began.
    package var now: Double {
        (ContinuousClock.now - origin).inSeconds
    }

    /// Waits until a request of `weight` writes may be sent; answers when it was let go (for `ended`).
    package func admit(weight: Int, isCancelled: @Sendable () -> Bool) async throws -> Double {
        while true {
            if isCancelled() { throw StorageError(.cancelled, "Interrupted before the request was sent.") }
            let reserved = pacing.withLock { $0.controller.reserve(weight: weight, now: now) }
            guard let start = reserved else {
                await withCheckedContinuation { continuation in
                    let free = pacing.withLock { state in
                        if state.controller.inFlight < state.controller.concurrency { return true }
                        state.waiting.append(continuation)
                        return false
                    }
                    if free { continuation.resume() }
                }
                continue
            }
            // The wait is short (a request's share of a second) and Ctrl-C ends it.
            while now < start {
                if isCancelled() {
                    ended(sentAt: start, accepted: 0)
                    throw StorageError(.cancelled, "Interrupted before the request was sent.")
                }
                try? await Task.sleep(for: .milliseconds(min(50, max(1, Int(((start - now) * 1000).rounded(.up))))))
            }
            return start
        }
    }

    /// A request let go at `sentAt` ended; `accepted` of its writes were taken.
    package func ended(sentAt: Double, accepted: Int) {
        let woken = pacing.withLock { state in
            state.controller.ended(sentAt: sentAt, now: now, accepted: accepted)
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in woken { continuation.resume() }
    }

    /// The service pushed back on a request let go at `sentAt`; `withdrawn` of the writes `ended` counted as
    /// taken were refused after all (calls of a batch).
    package func pushedBack(sentAt: Double, withdrawn: Int) {
        pacing.withLock { $0.controller.pushedBack(sentAt: sentAt, now: now, withdrawn: withdrawn) }
    }

    /// What the pacer allows now, for `--trace` and the progress line.
    package var state: (rate: Double, concurrency: Int, pushbacks: Int) {
        pacing.withLock { ($0.controller.rate, $0.controller.concurrency, $0.controller.decreases) }
    }
}
