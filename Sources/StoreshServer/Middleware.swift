import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// The layers every answer of `storesh serve` passes through, outermost first: the request log, the latency asked
/// for, the origin policy. The router (`StorageServer.router`) puts them around the APIs.

/// Tells `log` of each request answered, with its status and how long it took (latency included); the path's
/// values that grant access are elided (`ServedRequest.loggable`). The API's requests also go to `journal`, the
/// page's request log, with the SDK call each stands for, its caller and its rules decisions (`RequestTrace`).
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    let log: (@Sendable (ServedRequest) -> Void)?
    let journal: RequestJournal

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let path = request.uri.path
        let trace = RequestJournal.records(method: request.method, path: path) ? RequestTrace() : nil
        var response = try await RequestTrace.$current.withValue(trace) { try await next(request, context) }
        // A client of the v0 API (storesh's own, after login) is told what the rules decided, which the real service
        // never says: `rules why` there then shows the server's decision, not a guess.
        if path.hasPrefix("/v0/"), let trace, let last = trace.verdicts.last {
            response.headers[HTTPField.Name(RulesDecisionHeader.name)!] =
                RulesDecisionHeader.value(last.decision.explanation(for: last.request))
        }
        let elapsed = ContinuousClock.now - start
        let seconds = elapsed.inSeconds
        log?(
            ServedRequest(
                method: request.method.rawValue, path: ServedRequest.loggable(path: path, query: request.uri.query),
                status: response.status.code, seconds: seconds))
        if let trace {
            let (who, verdicts) = (trace.caller, trace.verdicts)
            let methodOverride = request.headers[HTTPField.Name("X-HTTP-Method-Override")!]
            journal.record { number in
                ServedExchange(
                    number: number, time: Timestamp(date: Date()), method: request.method, path: path,
                    query: request.uri.query,
                    methodOverride: methodOverride, status: response.status.code, milliseconds: seconds * 1000,
                    who: who,
                    verdicts: verdicts)
            }
        }
        return response
    }
}

/// Waits `latency` before each answer, as a distant service's round trip would: an app's loading states, or a
/// client's parallelism, can then be tried on loopback. The wait holds no thread.
struct LatencyMiddleware<Context: RequestContext>: RouterMiddleware {
    let latency: Duration

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if latency > .zero { try? await Task.sleep(for: latency) }
        return try await next(request, context)
    }
}

/// The origin policy (`--cors`, `--allow-host`): a request from a page or host it does not allow is refused
/// before anything runs. Cross-origin requests (CORS): the Firebase Web SDK runs in a page served from another
/// origin, which asks first (`OPTIONS`, answered here) and may read only the headers named as exposed (an
/// upload's `X-Goog-Upload-*`).
struct OriginPolicyMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: OriginPolicy
    /// The address the server listens on (a loopback one accepts only loopback host names).
    let listening: String
    /// The server's page token (`OriginPolicy.administrationRefusal`).
    let pageToken: String

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let refusal = policy.refusal(request, listening: listening)
            ?? policy.administrationRefusal(request, pageToken: pageToken)
        {
            return Reply.failure(refusal, firebase: request.uri.path.hasPrefix("/v0")).response
        }
        var response =
            request.method == .options ? Answer(status: .noContent).response : try await next(request, context)
        response.headers.append(
            contentsOf: OriginPolicy.crossOriginHeaders(
                origin: request.headers[.origin], preflight: request.method == .options ? request : nil))
        return response
    }
}

/// A `HEAD` is answered as its `GET` would be, without the body.
struct HeadMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let response = try await next(request, context)
        return request.method == .head ? response.createHeadResponse() : response
    }
}
