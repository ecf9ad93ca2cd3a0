import Foundation
import NIOHTTP1
import StoreshCore
import StoreshWire
import Synchronization

/// Whether a service took the batch endpoint: once refused, changes go one by one for the rest of the run.
final class BatchEndpointState: Sendable {
    private let isRefused = Mutex(false)

    var refused: Bool { isRefused.withLock { $0 } }
    func refuse() { isRefused.withLock { $0 = true } }
}

/// Rule Q2 on the JSON API: a plan's metadata changes and deletes go many to a request (`POST /batch/storage/v1`,
/// its format `CloudStorageBatch`), each call with its own precondition and its own answer.
///
/// A call's answer is read as the same request's would be alone (`failure`): a refusal is that change's
/// failure. A call the service asks to have sent again (408, 429, 5xx) goes in the next round, after the retry
/// policy's wait (its `Retry-After` honoured), until the policy's time is spent; every call is guarded by a
/// precondition, so sending it again is safe, and a repeat refused because the first attempt had landed is
/// recognised as landed (as `sendChange` does alone). A service without the endpoint (404, 405, 501) is sent the
/// changes one by one, and then every later change.
extension CloudStorageBucket: BatchedChanges {
    package var largestBatch: Int { CloudStorageBatch.largestBatch }

    package func send(_ changes: [BatchedChange]) async -> [Result<ObjectMetadata?, StorageError>] {
        // Only guarded calls are batched; an unguarded delete (none in a plan) goes alone.
        guard !batches.refused, changes.allSatisfy(\.isGuarded) else { return await sendAlone(changes) }
        var outcomes = [Result<ObjectMetadata?, StorageError>?](repeating: nil, count: changes.count)
        var waiting = Array(changes.indices)
        var sentBefore = Set<Int>()
        let started = ContinuousClock.now
        var round = 0
        while !waiting.isEmpty {
            let calls = waiting.map { CloudStorageBatch.Call(contentID: String($0 + 1), wireRequest(changes[$0])) }
            let boundary = CloudStorageBatch.newBoundary()
            let authorizer = self.authorizer
            let request = RemoteRequest(
                method: .POST, url: endpoint.baseURL + CloudStorageBatch.path,
                headers: authorizer.extraHeaders + [
                    ("Content-Type", CloudStorageBatch.contentType(boundary: boundary))
                ],
                body: CloudStorageBatch.body(calls, boundary: boundary), repeatable: true, writes: calls.count,
                traceNote: Self.traceNote(calls))
            let response: RemoteResponse
            do {
                response = try await http.send(request) { try await authorizer.authorization() }
            } catch {
                let failure = error as? StorageError ?? StorageError.internalError("\(error)")
                for index in waiting { outcomes[index] = .failure(failure) }
                break
            }
            if [404, 405, 501].contains(response.status), round == 0 {
                // No batch endpoint here: nothing of the batch was done.
                batches.refuse()
                http.trace?.answered("the service has no batch endpoint (\(response.status)): changes go one by one")
                return await sendAlone(changes)
            }
            guard (200..<300).contains(response.status) else {
                let failure = self.failure(response, object: nil, precondition: .none)
                for index in waiting { outcomes[index] = .failure(failure) }
                break
            }
            guard let boundary = response.header("Content-Type").flatMap(CloudStorageBatch.boundary(ofContentType:)),
                let read = try? CloudStorageBatch.answers(response.body, boundary: boundary, limit: calls.count + 1),
                let answers = CloudStorageBatch.matched(read, to: calls)
            else {
                // The calls may have landed: a resumed run checks each against the bucket.
                let failure = StorageError(
                    .unavailable,
                    "The service's answer to a batch of \(calls.count) changes could not be read; whether they landed is not known."
                )
                for index in waiting { outcomes[index] = .failure(failure) }
                break
            }
            var again: [Int] = []
            var retryAfter: Double?
            for (index, answer) in zip(waiting, answers) {
                let repeated = sentBefore.contains(index) || response.attempts > 1
                if RetryPolicy.isRetryable(status: answer.status) {
                    again.append(index)
                    retryAfter = max(retryAfter ?? 0, answer.header("Retry-After").flatMap(Double.init) ?? 0)
                    outcomes[index] = .failure(
                        self.failure(
                            Self.response(answer, attempts: round + 1), object: changes[index].object.rawValue,
                            precondition: .none))
                } else {
                    outcomes[index] = await outcome(of: changes[index], answer, repeated: repeated, attempts: round + 1)
                }
            }
            http.trace?.answered(Self.summary(answers))
            let pushedBack = answers.filter { RetryPolicy.isPushback(status: $0.status) }.count
            if pushedBack > 0, let sentAt = response.sentAt {
                http.pacer?.pushedBack(sentAt: sentAt, withdrawn: pushedBack)
            }
            for index in waiting { sentBefore.insert(index) }
            guard !again.isEmpty else { break }
            do {
                // The retry's wait; past the policy's time, the calls keep the failure of their last answer.
                guard
                    try await http.waitBeforeRetry(
                        round, retryAfter: retryAfter == 0 ? nil : retryAfter, since: started)
                else { break }
            } catch {
                break
            }
            waiting = again
            round += 1
        }
        return outcomes.map { $0 ?? .failure(StorageError(.internalError, "A change of a batch was not answered.")) }
    }

    /// The JSON API request a change is alone, as its call of a batch.
    private func wireRequest(_ change: BatchedChange) -> WireRequest {
        switch change {
        case .metadata(let object, let before, let after):
            CloudStorageWire.patch(bucket: name, object: object.rawValue, from: before, to: after)
        case .delete(let object, let precondition):
            CloudStorageWire.delete(bucket: name, object: object.rawValue, precondition: precondition)
        }
    }

    /// A call's final answer, as the same request's alone would be: the state it left, or the error it means.
    /// A repeat refused because an earlier attempt landed is the change done.
    private func outcome(
        of change: BatchedChange, _ answer: CloudStorageBatch.Answer, repeated: Bool, attempts: Int
    ) async
        -> Result<ObjectMetadata?, StorageError>
    {
        let object = change.object
        do {
            if (200..<300).contains(answer.status) {
                switch change {
                case .delete: return .success(nil)
                case .metadata:
                    return .success(try CloudStorageJSON.metadata(answer.body, bucket: name, what: "an update"))
                }
            }
            if repeated {
                switch change {
                case .delete where answer.status == 404:
                    return .success(nil)
                case .metadata(_, let before, let after) where answer.status == 412:
                    if let current = try await metadataIfPresent(of: object),
                        Self.metadataLanded(current, from: before, to: after)
                    {
                        return .success(current)
                    }
                default: break
                }
            }
            let precondition: Precondition =
                switch change {
                case .delete(_, let precondition): precondition
                case .metadata(_, let before, _): .matches(before)
                }
            return .failure(
                failure(Self.response(answer, attempts: attempts), object: object.rawValue, precondition: precondition))
        } catch let error as StorageError {
            return .failure(error)
        } catch {
            return .failure(.internalError("\(error)"))
        }
    }

    /// Each change as a request of its own, at once (at most a batch of them).
    private func sendAlone(_ changes: [BatchedChange]) async -> [Result<ObjectMetadata?, StorageError>] {
        await withTaskGroup(of: (Int, Result<ObjectMetadata?, StorageError>).self) { group in
            for (index, change) in changes.enumerated() {
                group.addTask {
                    do {
                        return (index, .success(try await self.apply(change)))
                    } catch let error as StorageError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(.internalError("\(error)")))
                    }
                }
            }
            var outcomes = [Result<ObjectMetadata?, StorageError>](repeating: .success(nil), count: changes.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes
        }
    }

    /// A call's answer as the response it stands for.
    private static func response(_ answer: CloudStorageBatch.Answer, attempts: Int) -> RemoteResponse {
        var headers = HTTPHeaders()
        for header in answer.headers { headers.add(name: header.name, value: header.value) }
        return RemoteResponse(status: answer.status, headers: headers, body: answer.body, attempts: attempts)
    }

    /// What `--trace` says a batch holds: `batch of 100: PATCH ×98, DELETE ×2`.
    static func traceNote(_ calls: [CloudStorageBatch.Call]) -> String {
        "batch of \(calls.count): "
            + counted(calls.map(\.method)).map { "\($0.key) ×\($0.count)" }.joined(separator: ", ")
    }

    /// What `--trace` says a batch's answers were: `answers: 200 ×98, 429 ×2`.
    static func summary(_ answers: [CloudStorageBatch.Answer]) -> String {
        "answers: "
            + counted(answers.map { String($0.status) }).map { "\($0.key) ×\($0.count)" }.joined(separator: ", ")
    }

    /// How many of each, in the order first seen.
    private static func counted(_ values: [String]) -> [(key: String, count: Int)] {
        var counts: [(key: String, count: Int)] = []
        for value in values {
            if let place = counts.firstIndex(where: { $0.key == value }) {
                counts[place].count += 1
            } else {
                counts.append((value, 1))
            }
        }
        return counts
    }
}

extension BatchedChange {
    /// Whether a precondition guards the change, which makes sending it twice harmless.
    var isGuarded: Bool {
        switch self {
        case .metadata: true
        case .delete(_, let precondition): precondition.isConditional
        }
    }
}
