import CStoreshTerminal
import Foundation
import StoreshCore
import StoreshRemote

extension BucketLocation {
    /// Opens a real bucket (rule B1): its endpoint and credentials from the environment (rules G2, G3), checked
    /// with one request so that a mistyped name or refused credentials are said before anything runs.
    /// `pacing`: `--rate` and `--parallel`, the caps of the service's write rate and of requests in flight (rule Q1).
    func openRemote(
        quiet: Bool, trace: Bool = false, pacing: (rate: Double?, parallel: Int),
        environment: Environment = Environment()
    ) async throws -> any Bucket {
        let tracing = trace || environment["STORESH_TRACE"].map { !$0.isEmpty && $0 != "0" } == true
        switch kind {
        case .file:
            preconditionFailure("a local location opens with open(clock:quiet:)")
        case .s3(let name):
            let configuration = try AWSConfiguration.resolve(bucket: name) { environment[$0] }
            let http = Self.client(
                environment, tracing: tracing, pacing: .s3(cap: pacing.rate, maximumConcurrency: pacing.parallel))
            let bucket = S3Bucket(name: name, configuration: configuration, http: http)
            do {
                try await bucket.verify()
            } catch {
                bucket.close()
                throw error
            }
            if !quiet, let unnamedSource {
                Diagnostics.notice("bucket \(displayed) (\(unnamedSource))")
            }
            return bucket
        case .googleCloudStorage(let name):
            let endpoint = CloudStorageEndpoint.resolve { environment[$0] }
            // An emulator has no documented limits: its own are found by its answers.
            let limits: WriteRateLimits =
                endpoint.isEmulator
                ? .emulator(cap: pacing.rate, maximumConcurrency: pacing.parallel)
                : .cloudStorage(cap: pacing.rate, maximumConcurrency: pacing.parallel)
            let http = Self.client(environment, tracing: tracing, pacing: limits)
            let idToken = environment["STORESH_ID_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            let authorizer: any RequestAuthorizer
            do {
                authorizer =
                    endpoint.isEmulator
                    ? EmulatorOwner()
                    : try await GoogleCredentialSearch(environment: { Environment()[$0] }, http: http).find()
            } catch let error as StorageError where idToken != nil {
                // An end user needs no Google credentials of their own.
                authorizer = MissingCredentials(error)
            } catch {
                http.close()
                throw error
            }
            let bucket = FirebaseProjectBucket(
                CloudStorageBucket(name: name, endpoint: endpoint, http: http, authorizer: authorizer))
            do {
                // Rule F1: signed in as an end user from the start; the bucket's own check is then the user's.
                if let token = idToken {
                    _ = try bucket.signIn(idToken: token)
                } else {
                    try await bucket.verify()
                }
            } catch {
                bucket.close()
                throw error
            }
            if !quiet, let unnamedSource {
                Diagnostics.notice("bucket \(displayed) (\(unnamedSource))")
            }
            if !quiet, let variable = endpoint.emulatorVariable {
                Diagnostics.notice("\(displayed) on the emulator at \(endpoint.baseURL) ($\(variable))")
            }
            return bucket
        }
    }

    /// The HTTP client a real bucket's requests go through: G4's retries, Q1's pace of writes, Ctrl-C noticed
    /// between attempts, and `--trace`.
    static func client(_ environment: Environment, tracing: Bool, pacing: WriteRateLimits) -> RemoteHTTP {
        RemoteHTTP(
            policy: retryPolicy(environment), connectionsPerHost: 64, trace: tracing ? RequestLog() : nil,
            pacing: pacing,
            isCancelled: { storesh_interrupt_pending() != 0 })
    }

    /// Rule G4's bounds: `$STORESH_RETRY_FOR` seconds in all (default 120), the first wait
    /// `$STORESH_RETRY_FIRST_MS` (default 1000; the fault tests shorten it).
    static func retryPolicy(_ environment: Environment) -> RetryPolicy {
        var policy = RetryPolicy()
        if let total = environment["STORESH_RETRY_FOR"].flatMap(Double.init), total >= 0 { policy.giveUpAfter = total }
        if let first = environment["STORESH_RETRY_FIRST_MS"].flatMap(Double.init), first > 0 {
            policy.initialDelay = first / 1000
        }
        return policy
    }
}
