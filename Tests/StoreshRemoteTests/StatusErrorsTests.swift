import StoreshCore
import StoreshWire
import Testing

@Suite("StatusErrors: spec E over HTTP, both ways")
struct StatusErrorsTests {
    /// What a client reads back from the status `storesh serve` answers each error with.
    func readBack(_ code: StorageErrorCode, audience: StatusErrors.Audience) -> StorageErrorCode {
        let (status, _) = StatusErrors.answer(for: code)
        let object: String? = code == .bucketNotFound ? nil : "a/b.txt"
        let answer = StatusErrors.Answer(status: status, attempts: 1, message: "said")
        return StatusErrors.error(answer, bucket: "app", bucketURL: "gs://app", object: object, audience: audience).code
    }

    @Test("every error a server answers is read back by every client as the same error, or as the one it stands for")
    func roundTrip() {
        // Errors with no status of their own travel as the one that holds them.
        let travelsAs: [StorageErrorCode: StorageErrorCode] = [
            .nonMatchingChecksum: .invalidArgument, .pathError: .invalidArgument, .bucketMismatch: .invalidArgument,
            .unknown: .internalError, .cancelled: .unknown,
        ]
        for code in StorageErrorCode.allCases {
            for audience in [StatusErrors.Audience.credentials(hint: "Check them."), .securityRules] {
                #expect(readBack(code, audience: audience) == travelsAs[code, default: code], "\(code) to \(audience)")
            }
        }
    }

    @Test("end users hear the SDK's words; credentials get a hint; transient failures say how often they were tried")
    func messages() {
        func error(_ status: Int, attempts: Int = 1, _ audience: StatusErrors.Audience) -> StorageError {
            StatusErrors.error(
                StatusErrors.Answer(status: status, attempts: attempts, message: "Nope"), bucket: "app",
                bucketURL: "gs://app",
                object: "a.txt", audience: audience)
        }
        #expect(error(401, .securityRules) == .unauthenticated)
        #expect(error(403, .securityRules) == .unauthorized(bucket: "app", path: "a.txt"))
        #expect(
            error(401, .credentials(hint: "Check them.")).message
                == "gs://app: the credentials were refused (401). The service said: Nope Check them.")
        #expect(
            error(403, .credentials(hint: "")).message
                == "No permission for gs://app/a.txt (403). The service said: Nope")
        #expect(
            error(503, attempts: 4, .securityRules).message
                == "The service answered 503 after 4 attempts. The service said: Nope")
        #expect(error(502, .securityRules).code == .internalError)
        #expect(error(409, .securityRules).code == .preconditionFailed)
        let bucketGone = StatusErrors.error(
            StatusErrors.Answer(status: 404, attempts: 1, message: "The specified bucket does not exist."),
            bucket: "app",
            bucketURL: "gs://app", object: "a.txt", bucketMissing: true, audience: .securityRules)
        #expect(bucketGone.code == .bucketNotFound)
    }
}
