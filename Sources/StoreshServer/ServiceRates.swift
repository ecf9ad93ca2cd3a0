import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// Rule Q3: `storesh serve --write-rate N` / `--read-rate N` plays a service's request rates, so that a client's
/// pacing can be tried against something that pushes back. Each is a token bucket holding a second of requests:
/// one above it is answered 429 `rateLimitExceeded` with `Retry-After` (whole seconds, as HTTP has them), before
/// anything is done. A batch's calls count one by one, as the service counts them; the batch itself does not.
final class RequestRate: Sendable {
    let perSecond: Double
    /// The tokens in the bucket, and when they were last refilled.
    private let bucket: Mutex<(tokens: Double, refilled: ContinuousClock.Instant)>

    init(perSecond: Int) {
        self.perSecond = Double(perSecond)
        bucket = Mutex((Double(perSecond), ContinuousClock.now))
    }

    /// Takes a request's token; nil when there was one, else the seconds until there is.
    func take() -> Double? {
        bucket.withLock { bucket in
            let now = ContinuousClock.now
            bucket.tokens = min(perSecond, bucket.tokens + perSecond * (now - bucket.refilled).inSeconds)
            bucket.refilled = now
            guard bucket.tokens < 1 else {
                bucket.tokens -= 1
                return nil
            }
            return (1 - bucket.tokens) / perSecond
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
