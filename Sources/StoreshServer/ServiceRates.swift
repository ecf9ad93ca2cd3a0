import Foundation
import HTTPTypes
import Hummingbird

/// Rule Q3: `storesh serve --write-rate N` / `--read-rate N` plays a service's request rates, so that a client's
/// pacing can be tried against something that pushes back. Each is a token bucket holding a second of requests:
/// one above it is answered 429 `rateLimitExceeded` with `Retry-After` (whole seconds, as HTTP has them), before
/// anything is done. A batch's calls count one by one, as the service counts them; the batch itself does not.
final class RequestRate: @unchecked Sendable {
    let perSecond: Double
    private let lock = NSLock()
    private var tokens: Double
    private var refilled = ContinuousClock.now

    init(perSecond: Int) {
        self.perSecond = Double(perSecond)
        tokens = Double(perSecond)
    }

    /// Takes a request's token; nil when there was one, else the seconds until there is.
    func take() -> Double? {
        lock.withLock {
            let now = ContinuousClock.now
            tokens = min(perSecond, tokens + perSecond * (now - refilled).inSeconds)
            refilled = now
            guard tokens < 1 else {
                tokens -= 1
                return nil
            }
            return (1 - tokens) / perSecond
        }
    }
}

/// The request rates a server plays (rule Q3).
struct ServiceRates: Sendable {
    var writes: RequestRate?
    var reads: RequestRate?

    init(writesPerSecond: Int?, readsPerSecond: Int?) {
        writes = writesPerSecond.map(RequestRate.init)
        reads = readsPerSecond.map(RequestRate.init)
    }

    /// Refuses a request of `endpoint` above its rate. The emulator's own endpoints and the batch itself are not
    /// counted.
    func admit(_ method: HTTPRequest.Method, _ endpoint: Endpoint) throws {
        switch endpoint {
        case .batch, .setRules, .reset: return
        default: break
        }
        let isRead = method == .get || method == .head
        guard let rate = isRead ? reads : writes, let wait = rate.take() else { return }
        var headers = HTTPFields()
        headers[.retryAfter] = String(max(1, Int(wait.rounded(.up))))
        throw HTTPFailure(
            .tooManyRequests, reason: "rateLimitExceeded",
            "The rate of \(isRead ? "read" : "write") requests exceeds this server's --\(isRead ? "read" : "write")-rate of \(Int(rate.perSecond)) a second. Please reduce the rate of requests, and retry after the Retry-After header's seconds.",
            headers: headers)
    }
}
