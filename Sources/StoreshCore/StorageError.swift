/// The error codes of Cloud Storage for Firebase's `StorageErrorCode` (spec E).
///
/// storesh prints the kebab-case `name` and keeps the SDK's numeric code available as `number`.
public enum StorageErrorCode: String, Sendable, CaseIterable, Codable {
    case unknown = "unknown"
    case objectNotFound = "object-not-found"
    case bucketNotFound = "bucket-not-found"
    case unauthenticated = "unauthenticated"
    case unauthorized = "unauthorized"
    case nonMatchingChecksum = "non-matching-checksum"
    case cancelled = "cancelled"
    case invalidArgument = "invalid-argument"
    case bucketMismatch = "bucket-mismatch"
    case internalError = "internal-error"
    case pathError = "path-error"
    /// storesh's own: a change refused because the object is not as the change expected (HTTP 412). Nothing
    /// was changed; read it again and decide anew.
    case preconditionFailed = "precondition-failed"
    /// storesh's own: the store cannot answer now (busy, HTTP 429 or 503); the same request may succeed later.
    case unavailable = "unavailable"

    /// The kebab-case name printed to users, e.g. `object-not-found`.
    public var name: String { rawValue }

    /// The SDK's numeric code, e.g. -13010.
    public var number: Int {
        switch self {
        case .unknown: -13000
        case .objectNotFound: -13010
        case .bucketNotFound: -13011
        case .unauthenticated: -13020
        case .unauthorized: -13021
        case .nonMatchingChecksum: -13031
        case .cancelled: -13040
        case .invalidArgument: -13050
        case .bucketMismatch: -13051
        case .internalError: -13052
        case .pathError: -13053
        // The SDKs have no codes for these two; storesh's own stand apart from the SDK's.
        case .preconditionFailed: -13900
        case .unavailable: -13901
        }
    }
}

/// A storage failure: a code from spec E and a message for people.
public struct StorageError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: StorageErrorCode
    public var message: String
    /// What kept the object from the change, when a hold or a retention did (rule M9): a command over many objects
    /// names each such one and goes on, then fails.
    public var keptBy: KeptBy?

    public enum KeptBy: Sendable, Equatable {
        case hold
        case retention
    }

    public init(_ code: StorageErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) (\(code.name))" }

    // The fixed messages of spec E, made in one place.

    public static func objectNotFound(_ path: String) -> StorageError {
        StorageError(.objectNotFound, "Object \(path) does not exist.")
    }

    /// A restore of a generation the bucket does not keep soft-deleted (rule B6).
    public static func noSoftDeletedGeneration(_ object: String, _ generation: Int64, bucketURL: String) -> StorageError
    {
        StorageError(
            .objectNotFound,
            "\(bucketURL) keeps no soft-deleted generation \(generation) of \(MessageText.name(object)): restored already, gone for good, or never soft-deleted (ls --soft-deleted lists those it keeps)."
        )
    }

    public static func bucketNotFound(_ bucket: String) -> StorageError {
        StorageError(.bucketNotFound, "Bucket \(bucket) does not exist.")
    }

    public static var unauthenticated: StorageError {
        StorageError(
            .unauthenticated,
            "User is not authenticated, please authenticate using Firebase Authentication and try again.")
    }

    public static func unauthorized(bucket: String, path: String) -> StorageError {
        StorageError(.unauthorized, "User does not have permission to access gs://\(bucket)/\(path).")
    }

    public static func bucketMismatch(provided: String, current: String) -> StorageError {
        StorageError(
            .bucketMismatch,
            "Provided bucket: `\(provided)` does not match the Storage bucket of the current instance: `\(current)`")
    }

    public static func invalidArgument(_ message: String) -> StorageError {
        StorageError(.invalidArgument, message)
    }

    /// The object is not in the state a change was computed from (rule G5's 412).
    public static func preconditionFailed(
        _ path: String, _ precondition: Precondition, actual: ObjectMetadata?
    )
        -> StorageError
    {
        let state: String
        switch (precondition.generation, precondition.metageneration, actual) {
        case (0?, _, let actual?):
            state = "it exists (generation \(actual.generation)), and the change was to create it"
        case (_, _, nil): state = "it no longer exists"
        case (let generation?, _, let actual?) where generation != actual.generation:
            state = "its generation is \(actual.generation), not \(generation)"
        case (_, let metageneration?, let actual?):
            state = "its metageneration is \(actual.metageneration), not \(metageneration)"
        case (_, _, let actual?) where precondition.entityTag != nil && precondition.entityTag != actual.entityTag:
            state = "its ETag is \(actual.entityTag ?? "(none)"), not \(precondition.entityTag ?? "")"
        default: state = "it is not as expected"
        }
        return StorageError(.preconditionFailed, "Object \(path) changed meanwhile: \(state). Nothing was changed.")
    }

    public static func internalError(_ message: String) -> StorageError {
        StorageError(.internalError, message)
    }
}

/// What was asked cannot be done as asked, and nothing was started: an option, a file it names or a setting that
/// cannot be used. Not a storage error: the command line says it as a usage error (exit status 2), whichever part
/// found it (its own options, serve's firebase.json, an export to import).
public struct UsageError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// Ctrl-C while reading a file that was named: the run ends as interrupted (130), not as a usage error.
    public var isInterruption = false

    public init(_ description: String) { self.description = description }

    public init(interrupted description: String) {
        self.description = description
        isInterruption = true
    }
}
