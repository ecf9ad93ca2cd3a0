import Foundation
import StoreshCore
import StoreshLocal
import Testing

@testable import StoreshServer

/// Rule V4: every answered change is durable, and concurrent changes share commits rather than queueing for a disk
/// flush each; a change that fails is undone alone.
@Suite("Group commit (rule V4)")
struct GroupCommitTests {
    func servedBucket() throws -> (ServedBucket, String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storesh-group-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("served.bucket").path
        let bucket = try LocalBucket.open(at: path)
        return (try ServedBucket(bucket, options: LocalBucketOptions(), readerCount: 2), path)
    }

    @Test("200 concurrent writes land, in fewer commits than writes, and each failure alone is undone")
    func concurrentWritesShareCommits() async throws {
        let (served, path) = try servedBucket()
        defer {
            served.close()
            try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    do {
                        let name = try ObjectName("w/\(index)")
                        // Every tenth write asks that the object not exist, after writing it: it fails, alone.
                        _ = try await served.change { transaction in
                            _ = try await transaction.write(
                                Data("\(index)".utf8), to: name, options: WriteOptions(), precondition: .none)
                            if index % 10 == 0 {
                                _ = try await transaction.write(
                                    Data(), to: name, options: WriteOptions(), precondition: .doesNotExist)
                            }
                            return index
                        }
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var outcomes: [Bool] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(outcomes.filter { $0 }.count == 180)
        #expect(served.commits < 200)
        // What the answers said is what another connection to the file reads.
        let reader = try LocalBucket.open(at: path)
        defer { reader.close() }
        #expect(try reader.objectCount() == 180)
        #expect(try reader.currentObjectWithContent(ObjectName("w/7")).1 == Data("7".utf8))
        #expect(throws: StorageError.self) { try reader.currentMetadata(of: ObjectName("w/10")) }
    }
}
