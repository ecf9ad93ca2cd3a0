import Foundation
import StoreshRemote
import Testing

/// A service that takes `rate` writes a second (a token bucket holding a second's worth, as `storesh serve
/// --write-rate` does) and answers after `latency`; nil takes everything. The client is `WriteRateController`
/// on a simulated clock: each step it ends the requests answered by then and sends what it is allowed.
struct SimulatedApply {
    var controller: WriteRateController
    let serviceRate: Double?
    let latency: Double
    let batch: Int
    var tokens: Double
    var lastRefill = 0.0
    /// Requests sent and not answered: when sent, how many writes.
    var inFlight: [(sentAt: Double, weight: Int)] = []
    /// Refused writes waiting for their Retry-After.
    var retries: [(due: Double, count: Int)] = []
    /// Writes sent in each second (by when they were let go), and writes taken in each second.
    var sentPerSecond: [Int: Int] = [:]
    var acceptedPerSecond: [Int: Int] = [:]
    var refused = 0
    var largestConcurrency = 0

    init(limits: WriteRateLimits, serviceRate: Double?, latency: Double, batch: Int) {
        controller = WriteRateController(limits: limits, now: 0)
        self.serviceRate = serviceRate
        self.latency = latency
        self.batch = batch
        tokens = serviceRate ?? 0
    }

    /// How many of `count` writes arriving at `time` the service takes.
    mutating func take(_ count: Int, at time: Double) -> Int {
        guard let rate = serviceRate else { return count }
        tokens = min(rate, tokens + (time - lastRefill) * rate)
        lastRefill = max(lastRefill, time)
        let taken = min(count, Int(tokens.rounded(.down)))
        tokens -= Double(taken)
        return taken
    }

    mutating func run(seconds: Double, step: Double = 0.001) {
        var now = 0.0
        while now < seconds {
            // Answers, in the order they were sent (they all take `latency`).
            inFlight.sort { $0.sentAt < $1.sentAt }
            while let first = inFlight.first, first.sentAt + latency <= now {
                inFlight.removeFirst()
                let accepted = take(first.weight, at: first.sentAt + latency / 2)
                let pushedBack = first.weight - accepted
                // As the gs:// client tells it: a batch is answered 200 as a whole, then its calls are read; a
                // request alone is answered 429.
                if batch > 1 {
                    controller.ended(sentAt: first.sentAt, now: now, accepted: first.weight)
                    if pushedBack > 0 { controller.pushedBack(sentAt: first.sentAt, now: now, withdrawn: pushedBack) }
                } else {
                    if pushedBack > 0 { controller.pushedBack(sentAt: first.sentAt, now: now, withdrawn: 0) }
                    controller.ended(sentAt: first.sentAt, now: now, accepted: accepted)
                }
                if pushedBack > 0 {
                    refused += pushedBack
                    retries.append((now + 1, pushedBack))
                }
                acceptedPerSecond[Int(now), default: 0] += accepted
            }
            // New requests: refused writes once due, else fresh ones (there are always more).
            while true {
                var weight = batch
                let due = retries.firstIndex { $0.due <= now }
                if let due { weight = min(batch, retries[due].count) }
                guard let start = controller.reserve(weight: weight, now: now) else { break }
                if let due {
                    retries[due].count -= weight
                    if retries[due].count == 0 { retries.remove(at: due) }
                }
                inFlight.append((start, weight))
                sentPerSecond[Int(start), default: 0] += weight
                largestConcurrency = max(largestConcurrency, controller.inFlight)
            }
            now += step
        }
    }

    /// Writes taken a second, on average over `seconds`.
    func acceptedRate(_ seconds: Range<Int>) -> Double {
        Double(seconds.reduce(0) { $0 + acceptedPerSecond[$1, default: 0] }) / Double(seconds.count)
    }
}

@Suite("Rule Q1: pacing writes by the service's answers (WriteRateController, on a simulated clock)")
struct WriteRateControllerTests {
    @Test("against a service that takes less than the documented start, it settles at 90% or more of it, with 429s")
    func convergesBelowTheStart() {
        for (rate, batch, latency) in [(500.0, 100, 0.02), (300.0, 1, 0.05), (700.0, 100, 0.05)] {
            var apply = SimulatedApply(
                limits: .cloudStorage(cap: nil, maximumConcurrency: 32), serviceRate: rate, latency: latency,
                batch: batch)
            apply.run(seconds: 60)
            let held = apply.acceptedRate(20..<60)
            #expect(held >= 0.9 * rate, "\(rate)/s with batches of \(batch) at \(latency) s: \(held)/s held")
            #expect(held <= rate * 1.01, "never more than the service takes")
            #expect(apply.refused > 0 && apply.controller.decreases > 0, "the service pushed back")
            #expect(apply.largestConcurrency <= 32)
        }
    }

    @Test(
        "against a service that takes everything, it sends the documented 1,000 a second and no more, doubling at 20 minutes"
    )
    func neverExceedsTheRamp() {
        var apply = SimulatedApply(
            limits: .cloudStorage(cap: nil, maximumConcurrency: 32), serviceRate: nil, latency: 0.02, batch: 100)
        apply.run(seconds: 45 * 60, step: 0.002)
        for (second, sent) in apply.sentPerSecond {
            let ceiling = 1000 * (second >= 40 * 60 ? 4 : second >= 20 * 60 ? 2 : 1)
            #expect(sent <= ceiling + 100, "second \(second): \(sent) writes sent")
        }
        #expect(apply.acceptedRate(60..<1200) >= 950, "the first 20 minutes use the documented start")
        #expect(apply.acceptedRate(1260..<2400) >= 1900, "then the doubled ceiling")
        #expect(apply.refused == 0 && apply.controller.decreases == 0)
    }

    @Test(
        "on an emulator (no documented ramp) it starts at 1,000 a second and doubles until pushed back, then holds what it takes"
    )
    func emulatorSlowStart() {
        for rate in [1000.0, 6000.0] {
            var apply = SimulatedApply(
                limits: .emulator(cap: nil, maximumConcurrency: 32), serviceRate: rate, latency: 0.005, batch: 100)
            apply.run(seconds: 40)
            #expect(apply.sentPerSecond[0, default: 0] <= 1100, "the first second at the documented start")
            let held = apply.acceptedRate(15..<40)
            #expect(held >= 0.9 * rate && held <= 1.01 * rate, "\(rate)/s: \(held)/s held")
            #expect(apply.controller.decreases > 0)
        }
    }

    @Test("--rate caps it by hand, below what the service would take")
    func capByHand() {
        var apply = SimulatedApply(
            limits: .cloudStorage(cap: 200, maximumConcurrency: 32), serviceRate: nil, latency: 0.01, batch: 1)
        apply.run(seconds: 30)
        for (second, sent) in apply.sentPerSecond { #expect(sent <= 201, "second \(second): \(sent)") }
        #expect(apply.acceptedRate(2..<29) >= 190)
    }

    @Test("concurrency grows while answers are clean and fast, halves on a pushback, once per pushback's round")
    func concurrency() {
        var controller = WriteRateController(limits: .s3(cap: nil, maximumConcurrency: 64), now: 0)
        #expect(controller.concurrency == 8)
        var now = 0.0
        for _ in 0..<200 {
            guard let sent = controller.reserve(weight: 1, now: now) else { break }
            now = max(now, sent) + 0.01
            controller.ended(sentAt: sent, now: now, accepted: 1)
        }
        let grown = controller.concurrency
        #expect(grown > 8 && grown <= 64)
        let early = now
        now += 0.01
        controller.pushedBack(sentAt: early, now: now, withdrawn: 0)
        #expect(controller.concurrency == max(1, grown / 2))
        // A request sent before that decrease, refused after it, does not halve again.
        controller.pushedBack(sentAt: early, now: now + 0.005, withdrawn: 0)
        #expect(controller.concurrency == max(1, grown / 2) && controller.decreases == 1)
        // Answers slower than twice the fastest do not grow it.
        let halved = controller.concurrency
        for _ in 0..<100 {
            guard let sent = controller.reserve(weight: 1, now: now) else { break }
            now = max(now, sent) + 0.5
            controller.ended(sentAt: sent, now: now, accepted: 1)
        }
        #expect(controller.concurrency == halved)
    }
}
