import Foundation
import HTTPTypes
import StoreshCore
import StoreshWire
import Synchronization

/// One API request that reached the server, as a class reads it in the request log of the bucket's page: the SDK
/// call it stands for, the HTTP exchange, who made it, and what the security rules decided (each method checked,
/// allowed or denied, by which statement or why none allowed it): the `explain` of what just happened.
///
/// It keeps what the request was, and its words are made when the log is shown: a bulk edit through the server
/// pays for recording each request, not for describing it (only the last 200 are ever shown).
package struct ServedExchange: Sendable {
    /// One rules decision: `allowed get on gs://b/a.txt by `allow read: if true` at storage.rules:4`, or a denial
    /// with its reasons.
    package struct Verdict: Sendable {
        let request: AccessRequest
        let decision: AccessDecision

        package var allowed: Bool { decision.allowed }
        package var text: String { decision.explanation(for: request) }
    }

    /// Counted from 1 since the server started.
    package var number: Int
    package var time: Timestamp
    package var method: HTTPRequest.Method
    /// The path and query as sent (percent-encoded); `target` shows them.
    var path: String
    var query: String?
    /// `X-HTTP-Method-Override`, with which a PUT is a PATCH.
    var methodOverride: String?
    package var status: Int
    package var milliseconds: Double
    /// Who made it, when its handler read it (a v0 request).
    var who: Caller?
    package var verdicts: [Verdict]

    /// The path and query, with the values that grant access elided.
    package var target: String { ServedRequest.loggable(path: path, query: query) }
    /// The status's reason phrase (`Forbidden`).
    package var reason: String { Self.reasonPhrase(status) }
    /// `signed out`, `signed in as alice`, `the owner …`, `the administrator`.
    package var caller: String { Self.caller(who, path: path, query: query, status: status).name }
    /// The Swift SDK call it stands for, or the JSON API method; nil when it stands for none (a malformed path).
    package var call: String? { Self.call(method: method, path: path, query: query, methodOverride: methodOverride) }
    /// Why no rule decided, when none did.
    package var rulesNote: String? {
        verdicts.isEmpty ? Self.caller(who, path: path, query: query, status: status).rulesNote : nil
    }
}

/// The request being answered, as its log entry gathers it: who made it, and each rules decision taken for it.
/// Rules sessions made for the request report to it (`ServedBucket.rulesSession`), also from the writer's task,
/// where a change runs away from the request's own task.
final class RequestTrace: Sendable {
    @TaskLocal static var current: RequestTrace?

    private let who = Mutex<Caller?>(nil)
    private let verdictList = Mutex<[ServedExchange.Verdict]>([])

    /// Who made the request, once its handler read it (a v0 request); nil for the JSON API's.
    var caller: Caller? {
        get { who.withLock { $0 } }
        set { who.withLock { $0 = newValue } }
    }

    var verdicts: [ServedExchange.Verdict] { verdictList.withLock { $0 } }

    func decided(_ request: AccessRequest, _ decision: AccessDecision) {
        let verdict = ServedExchange.Verdict(request: request, decision: decision)
        // An upload is decided before its bytes arrive and again as it lands: the same words once.
        verdictList.withLock { verdicts in
            if let last = verdicts.last, last.allowed == verdict.allowed, last.text == verdict.text { return }
            verdicts.append(verdict)
        }
    }
}

/// The last requests the server answered, newest last, and who waits to hear of the next: the page's log.
final class RequestJournal: Sendable {
    /// Enough for a lesson's worth of scrolling; older ones are dropped.
    static let capacity = 200

    /// The last requests, how many were ever recorded, and who waits to hear of the next.
    private struct Log {
        var entries: [ServedExchange] = []
        var count = 0
        var listeners: [UUID: AsyncStream<Void>.Continuation] = [:]
    }

    private let log = Mutex(Log())

    /// Whether a request belongs in the class's log: the API's, not the page's own reads, its event stream, a
    /// browser's icon request or a cross-origin preflight.
    static func records(method: HTTPRequest.Method, path: String) -> Bool {
        method != .options && path != "/" && !path.hasPrefix("/_storesh/") && path != "/favicon.ico"
    }

    func record(_ make: (Int) -> ServedExchange) {
        let listening: [AsyncStream<Void>.Continuation] = log.withLock { log in
            log.count += 1
            log.entries.append(make(log.count))
            if log.entries.count > Self.capacity { log.entries.removeFirst(log.entries.count - Self.capacity) }
            return Array(log.listeners.values)
        }
        for listener in listening { listener.yield() }
    }

    /// The last `limit` requests, newest first.
    func recent(_ limit: Int) -> [ServedExchange] {
        log.withLock { Array($0.entries.suffix(limit).reversed()) }
    }

    /// A stream with an element for each request recorded from now on (several close together may come as one),
    /// and how to end it.
    func arrivals() -> (stream: AsyncStream<Void>, end: @Sendable () -> Void) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.log.withLock { $0.listeners.removeValue(forKey: id) }
        }
        log.withLock { $0.listeners[id] = continuation }
        return (stream, { continuation.finish() })
    }

    /// Ends every stream (the server stops).
    func close() {
        let all = log.withLock { Array($0.listeners.values) }
        for listener in all { listener.finish() }
    }
}

extension ServedExchange {
    /// What a request stands for: the Swift SDK call whose request it is (the v0 API), the JSON API's method, or
    /// the emulator's internal endpoint; nil when its path names nothing.
    static func call(method: HTTPRequest.Method, path: String, query: String?, methodOverride: String?) -> String? {
        guard let endpoint = try? Endpoint(path: path) else { return nil }
        let parameters = QueryParameters(lenient: query)
        let method = method == .head ? .get : method
        switch endpoint {
        case .firebaseObjects:
            if method == .get {
                var folder = parameters["prefix"] ?? ""
                if folder.hasSuffix("/") { folder.removeLast() }
                let size = parameters["maxResults"].flatMap { Int($0) }
                // The SDK's listAll pages without a size; a later page of it carries its token.
                return SwiftSDK.list(folder, maxResults: size, pageToken: size == nil ? nil : parameters["pageToken"])
                    + (size == nil && parameters["pageToken"] != nil ? "  // a later page" : "")
            }
            if parameters["upload_id"] != nil { return "(the rest of a resumable putDataAsync or putFileAsync)" }
            return parameters["name"].map { SwiftSDK.putData($0, metadata: "metadata") }
        case .firebaseObject(_, let name):
            switch method {
            case .get: return parameters["alt"] == "media" ? SwiftSDK.data(name) : SwiftSDK.getMetadata(name)
            case .patch: return SwiftSDK.updateMetadata(name)
            case .put where methodOverride?.uppercased() == "PATCH": return SwiftSDK.updateMetadata(name)
            case .delete: return SwiftSDK.delete(name)
            case .post where parameters["create_token"] != nil:
                return "(a new download token for \(name), as the console makes)"
            case .post where parameters["delete_token"] != nil:
                return "(a download token of \(name) revoked, as the console does)"
            default: return SwiftSDK.putData(name, metadata: "metadata")
            }
        case .firebaseRoot, .firebaseBucket: return "(the v0 API's root)"
        case .objects:
            return method == .get ? "objects.list (Cloud Storage JSON API)" : "objects.insert (Cloud Storage JSON API)"
        case .object:
            switch method {
            case .get:
                return parameters["alt"] == "media"
                    ? "objects.get ?alt=media (Cloud Storage JSON API)" : "objects.get (Cloud Storage JSON API)"
            case .patch: return "objects.patch (Cloud Storage JSON API)"
            case .put: return "objects.update (Cloud Storage JSON API)"
            case .delete: return "objects.delete (Cloud Storage JSON API)"
            default: return "objects (Cloud Storage JSON API)"
            }
        case .upload: return "objects.insert (Cloud Storage JSON API upload)"
        case .download: return "objects.get ?alt=media (Cloud Storage JSON API download)"
        case .copy(_, _, _, _, let rewrite):
            return rewrite ? "objects.rewrite (Cloud Storage JSON API)" : "objects.copy (Cloud Storage JSON API)"
        case .compose: return "objects.compose (Cloud Storage JSON API)"
        case .move: return "objects.move (Cloud Storage JSON API)"
        case .restore: return "objects.restore (Cloud Storage JSON API)"
        case .bucketACL(_, let defaults):
            return defaults
                ? "defaultObjectAccessControls (Cloud Storage JSON API)"
                : "bucketAccessControls (Cloud Storage JSON API)"
        case .objectACL: return "objectAccessControls (Cloud Storage JSON API)"
        case .bucketIAM:
            return method == .put
                ? "buckets.setIamPolicy (Cloud Storage JSON API)" : "buckets.getIamPolicy (Cloud Storage JSON API)"
        case .serviceAccount: return "projects.serviceAccount.get (Cloud Storage JSON API)"
        case .buckets:
            return method == .post ? "buckets.insert (Cloud Storage JSON API)" : "buckets.list (Cloud Storage JSON API)"
        case .bucket:
            let call = method == .patch ? "patch" : method == .put ? "update" : method == .delete ? "delete" : "get"
            return "buckets.\(call) (Cloud Storage JSON API)"
        case .storageLayout: return "buckets.getStorageLayout (Cloud Storage JSON API)"
        case .lockRetentionPolicy: return "buckets.lockRetentionPolicy (Cloud Storage JSON API)"
        case .softDeletedBucket: return "buckets.get ?softDeleted=true (Cloud Storage JSON API)"
        case .restoreBucket: return "buckets.restore (Cloud Storage JSON API)"
        case .managedFolders: return "managedFolders.list (Cloud Storage JSON API)"
        case .batch: return "batch (Cloud Storage JSON API: several requests in one)"
        case .setRules:
            return "loading security rules (the emulator's /internal/setRules, as @firebase/rules-unit-testing does)"
        case .reset: return "clearStorage() (the emulator's /internal/reset, as @firebase/rules-unit-testing does)"
        }
    }

    /// The reason phrase of a status the APIs answer (the response keeps only its code), with the two the services
    /// use that HTTP does not name: 308 for a resumable upload's next step, and nginx's 499.
    static func reasonPhrase(_ code: Int) -> String {
        switch code {
        case 308: return "Resume Incomplete"
        case 499: return "Client Closed Request"
        default:
            let known: [HTTPResponse.Status] = [
                .ok, .created, .noContent, .partialContent, .notModified, .badRequest, .unauthorized, .forbidden,
                .notFound,
                .methodNotAllowed, .conflict, .gone, .lengthRequired, .preconditionFailed, .contentTooLarge,
                .unsupportedMediaType, .rangeNotSatisfiable, .tooManyRequests, .internalServerError, .notImplemented,
                .serviceUnavailable,
            ]
            return known.first { $0.code == code }?.reasonPhrase ?? ""
        }
    }

    /// Who made a request, as the log names it, and why no rule decided it when none did.
    static func caller(
        _ caller: Caller?, path: String, query: String?, status: Int
    ) -> (name: String, rulesNote: String?) {
        switch caller {
        case .administrator?:
            return (Caller.administrator.description, "rules do not apply to the owner")
        case nil where path.hasPrefix("/internal/"):
            return ("the emulator's test tools", "rules do not apply to the emulator's internal API")
        case nil where !path.hasPrefix("/v0"):
            return (
                "the administrator",
                "rules do not apply: the Cloud Storage JSON API is the project's administrator's (service accounts, the Admin SDK)"
            )
        default:
            let name = caller?.description ?? Caller.person(nil).description
            if QueryParameters(lenient: query)["token"] != nil && (200..<300).contains(status) {
                return (name, "no rule is checked: the download token grants the read (rule G7)")
            }
            if status >= 400 {
                return (name, "no rule was checked: the request was refused before any (see its status)")
            }
            return (name, "no rule decides this request")
        }
    }
}
