import StoreshCore

/// The HTTP statuses of the storage APIs and the errors of spec E, both ways, in one table: what `storesh serve`
/// answers an error with, and what the `gs://`, Firebase and `s3://` clients read in a failing answer.
package enum StatusErrors {
    /// The status and the JSON API's reason word (`notFound`, `conditionNotMet`, …) a server answers an error with.
    package static func answer(for code: StorageErrorCode) -> (status: Int, reason: String) {
        switch code {
        case .objectNotFound, .bucketNotFound: (404, "notFound")
        case .unauthenticated: (401, "required")
        case .unauthorized: (403, "forbidden")
        case .preconditionFailed: (412, "conditionNotMet")
        case .nonMatchingChecksum, .invalidArgument, .pathError, .bucketMismatch: (400, "invalid")
        // nginx's "client closed request": nobody reads the answer.
        case .cancelled: (499, "cancelled")
        case .unavailable: (503, "backendError")
        case .unknown, .internalError: (500, "backendError")
        }
    }

    /// Whom a refusal of access speaks to.
    package enum Audience: Sendable {
        /// A bucket reached with credentials (the JSON API, S3): `hint` says how to check them.
        case credentials(hint: String)
        /// An end user under the project's security rules (the Firebase v0 API): the SDKs' own messages (spec E).
        case securityRules
    }

    /// A failing answer of a service, as what it says of the request.
    package struct Answer: Sendable {
        package var status: Int
        /// How many times the request was sent (a transient failure is retried when that is safe, rule G4).
        package var attempts: Int
        /// The service's own message, when it gave one.
        package var message: String?
        /// The service's words as a sentence to add (" The service said: …"), or nothing.
        package var detail: String

        package init(status: Int, attempts: Int, message: String?, detail: String? = nil) {
            self.status = status
            self.attempts = attempts
            self.message = message
            self.detail = detail ?? message.map { " The service said: \($0)" } ?? ""
        }
    }

    /// The error a failing answer means (spec E). `bucketURL` is `gs://NAME` or `s3://NAME`; `object` the object
    /// the request was about, if any; `bucketMissing` whether a 404 is the bucket's (the service said so).
    package static func error(
        _ answer: Answer, bucket: String, bucketURL: String, object: String?, bucketMissing: Bool = false,
        audience: Audience
    ) -> StorageError {
        let path = "\(bucketURL)/\(object ?? "")"
        let detail = answer.detail
        switch answer.status {
        case 400:
            return StorageError(
                .invalidArgument, "The service refused the request for \(path) as invalid (400).\(detail)")
        case 401:
            switch audience {
            case .credentials(let hint):
                return StorageError(
                    .unauthenticated, "\(bucketURL): the credentials were refused (401).\(detail) \(hint)")
            case .securityRules: return .unauthenticated
            }
        case 403:
            switch audience {
            case .credentials: return StorageError(.unauthorized, "No permission for \(path) (403).\(detail)")
            case .securityRules: return .unauthorized(bucket: bucket, path: object ?? "")
            }
        case 404:
            guard let object, !bucketMissing else { return .bucketNotFound(bucket) }
            return .objectNotFound(object)
        case 409, 412:
            return StorageError(
                .preconditionFailed,
                "Object \(object ?? "") changed meanwhile (the service answered \(answer.status)); nothing was overwritten. Read it again and decide anew."
            )
        case 413:
            return StorageError(
                .invalidArgument, "The request for \(path) is too large for the service (413).\(detail)")
        case 408, 429, 500, 502, 503, 504:
            let tries = answer.attempts > 1 ? " after \(answer.attempts) attempts" : ""
            let code: StorageErrorCode = answer.status >= 500 && answer.status != 503 ? .internalError : .unavailable
            return StorageError(code, "The service answered \(answer.status)\(tries).\(detail)")
        default:
            return StorageError(.unknown, "The service answered \(answer.status) for \(path).\(detail)")
        }
    }
}
