import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// A request the server refuses or could not carry out: the status, the reason word of the Cloud Storage JSON
/// API's error body (`invalid`, `notFound`, `conditionNotMet`, …) and a message for people. Every refusal is
/// made before anything changes, so a refused request leaves the bucket as it was (rule V4).
struct HTTPFailure: Error, Sendable {
    var status: HTTPResponse.Status
    var reason: String
    var message: String
    /// Headers the answer must carry (`Allow` of a 405, `Content-Range` of a 416).
    var headers: HTTPFields = [:]
    /// The body when the XML API answers (a signed URL's refusal), instead of the JSON one.
    var xml: String?

    init(_ status: HTTPResponse.Status, reason: String, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.reason = reason
        self.message = message
        self.headers = headers
    }

    static func badRequest(_ message: String) -> HTTPFailure { HTTPFailure(.badRequest, reason: "invalid", message) }
    static func required(_ message: String) -> HTTPFailure { HTTPFailure(.badRequest, reason: "required", message) }
    static func notFound(_ message: String) -> HTTPFailure { HTTPFailure(.notFound, reason: "notFound", message) }

    static func methodNotAllowed(
        _ method: HTTPRequest.Method, allowed: [HTTPRequest.Method], what: String
    ) -> HTTPFailure {
        var headers = HTTPFields()
        headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
        return HTTPFailure(
            .methodNotAllowed, reason: "methodNotAllowed",
            "\(method.rawValue) is not allowed on \(what); use \(allowed.map(\.rawValue).joined(separator: " or ")).",
            headers: headers)
    }

    /// The failure of a bucket operation, as the Cloud Storage JSON API answers it (`firebase`: as the Firebase
    /// v0 API does, which keeps the SDK's messages of spec E). The status is the one every client reads back
    /// (`StatusErrors`).
    init(_ error: StorageError, bucket: String, object: String?, firebase: Bool) {
        let (status, reason) = StatusErrors.answer(for: error.code)
        let message: String
        switch error.code {
        case .objectNotFound where !firebase: message = "No such object: \(bucket)/\(object ?? "")"
        case .bucketNotFound where !firebase: message = "The specified bucket does not exist."
        case .preconditionFailed:
            message = "At least one of the pre-conditions you specified did not hold. \(error.message)"
        default: message = error.message
        }
        // The statuses with their standard reason phrases; 499 is nginx's "client closed request".
        let standard: [HTTPResponse.Status] = [
            .badRequest, .unauthorized, .forbidden, .notFound, .preconditionFailed, .internalServerError,
            .serviceUnavailable,
        ]
        self.init(
            standard.first { $0.code == status }
                ?? HTTPResponse.Status(code: status, reasonPhrase: "Client Closed Request"),
            reason: reason, message)
    }

    /// The Cloud Storage JSON API's error body; the Firebase v0 API's is the same without `errors`.
    func body(firebase: Bool) -> JSONValue {
        var members: [(String, JSONValue)] = [("code", .integer(Int64(status.code))), ("message", .string(message))]
        if !firebase {
            members.append(
                (
                    "errors",
                    .array([
                        .object([
                            ("message", .string(message)), ("domain", .string("global")), ("reason", .string(reason)),
                        ])
                    ])
                ))
        }
        return .object([("error", .object(members))])
    }
}
