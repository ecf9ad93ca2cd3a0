import Foundation
import StoreshCore
import StoreshExecution

/// `storesh copy`: the objects of one bucket into another, whatever their kinds (a local file, gs://), content and
/// every writable property (content type, cache control, disposition, encoding, language, custom metadata with
/// download tokens). The copy is a plan like a script's: each object to write, with the destination's current
/// state as its precondition, so it is applied (and journaled, and resumed) as a script's changes are. Objects
/// already identical in the destination are left alone, so copying again sends only what changed.
public enum BucketCopy {
    public struct Plan: Sendable {
        /// Writes, in name order, each with its content.
        public var changes: PlanStore
        /// Objects the destination already holds as they are in the source.
        public var unchanged: Int
        /// Bytes of content to write.
        public var bytes: Int64
    }

    /// Reads the source (under `prefix`) and the destination (nil: one not made yet, empty, which will be named
    /// `destinationName`), and plans the writes; contents are read `parallel` at a time. Nothing is written.
    public static func plan(
        from source: any Bucket, to destination: (any Bucket)?, destinationName: String, prefix: String, parallel: Int,
        isCancelled: @escaping @Sendable () -> Bool
    ) async throws -> Plan {
        var inDestination: [ObjectMetadata] = []
        if let destination { inDestination = try await everything(in: destination, prefix: prefix, isCancelled: isCancelled) }
        let present = Dictionary(inDestination.map { ($0.fullPath, $0) }) { $1 }
        var wanted: [(object: ObjectMetadata, current: ObjectMetadata?)] = []
        var unchanged = 0
        for object in try await everything(in: source, prefix: prefix, isCancelled: isCancelled) {
            let current = present[object.fullPath]
            if let current, current.md5Hash == object.md5Hash, current.differences(to: object).isEmpty {
                unchanged += 1
            } else {
                wanted.append((object, current))
            }
        }
        var changes = [PlannedChange?](repeating: nil, count: wanted.count)
        let store = try PlanStore()
        var written = 0
        var bytes: Int64 = 0
        try await withThrowingTaskGroup(of: (Int, PlannedChange).self) { group in
            var next = 0
            func start() {
                guard next < wanted.count else { return }
                let index = next
                let (object, current) = wanted[index]
                next += 1
                group.addTask {
                    if isCancelled() { throw StorageError(.cancelled, "Interrupted while reading the source; nothing was copied.") }
                    let content = try await source.read(try ObjectName(object.fullPath))
                    var after = object
                    after.bucket = destinationName
                    return (index, PlannedChange(object: object.fullPath, before: current, after: after, content: content))
                }
            }
            for _ in 0..<max(1, parallel) { start() }
            while let (index, change) = try await group.next() {
                changes[index] = change
                // Into the plan's store in name order, as soon as the ones before have come.
                while written < changes.count, let next = changes[written] {
                    try store.append(next)
                    bytes += Int64(next.content?.count ?? 0)
                    changes[written] = nil
                    written += 1
                }
                start()
            }
        }
        return Plan(changes: store, unchanged: unchanged, bytes: bytes)
    }

    /// Every object under `prefix`, in name order.
    static func everything(in bucket: any Bucket, prefix: String, isCancelled: @Sendable () -> Bool) async throws -> [ObjectMetadata] {
        var objects: [ObjectMetadata] = []
        var after: String?
        repeat {
            if isCancelled() { throw StorageError(.cancelled, "Interrupted while listing \(bucket.url); nothing was copied.") }
            let page = try await bucket.scan(prefix: prefix, after: after, limit: 1000)
            objects += page.objects
            after = page.resumeAfter
        } while after != nil
        return objects
    }
}
