import Foundation
import StoreshCore
import StoreshExecution

/// `storesh copy`: the objects of one bucket into another, whatever their kinds (a local file, gs://), content and
/// every writable property (content type, cache control, disposition, encoding, language, custom metadata with
/// download tokens). The copy is a plan like a script's: each object to write, with the destination's current
/// state as its precondition, so it is applied (and journaled, and resumed) as a script's changes are. Objects
/// already identical in the destination are left alone, so copying again sends only what changed.
package enum BucketCopy {
    package struct Plan: Sendable {
        /// Writes, in name order, each with its content.
        package var changes: PlanStore
        /// Objects the destination already holds as they are in the source.
        package var unchanged: Int
        /// Bytes of content to write.
        package var bytes: Int64
    }

    /// Reads the source (under `prefix`) and the destination (nil: one not made yet, empty, which will be named
    /// `destinationName`), and plans the writes; contents are read `parallel` at a time. Nothing is written.
    ///
    /// Both buckets are read a scan page at a time, side by side in name order, and each planned write goes to the
    /// plan's store as soon as the ones before it are there: memory holds two pages and the contents being read,
    /// however many objects there are.
    package static func plan(
        from source: any Bucket, to destination: (any Bucket)?, destinationName: String, prefix: String, parallel: Int,
        isCancelled: @escaping @Sendable () -> Bool
    ) async throws -> Plan {
        let sourceObjects = NameOrderedObjects(bucket: source, prefix: prefix, isCancelled: isCancelled)
        let destinationObjects = destination.map {
            NameOrderedObjects(bucket: $0, prefix: prefix, isCancelled: isCancelled)
        }
        let store = try PlanStore()
        var unchanged = 0
        var bytes: Int64 = 0
        /// The next source object the destination lacks or holds otherwise, with the destination's state.
        func nextWrite() async throws -> (object: ObjectMetadata, current: ObjectMetadata?)? {
            while let object = try await sourceObjects.next() {
                let current = try await destinationObjects?.take(object.fullPath)
                if let current, current.md5Hash == object.md5Hash, current.differences(to: object).isEmpty {
                    unchanged += 1
                } else {
                    return (object, current)
                }
            }
            return nil
        }
        try await withThrowingTaskGroup(of: (Int, PlannedChange).self) { group in
            var started = 0
            var running = 0
            var sourceDone = false
            // Writes whose content came before the writes ahead of them: at most `parallel` of them.
            var arrived: [Int: PlannedChange] = [:]
            var stored = 0
            while true {
                while running < max(1, parallel), !sourceDone {
                    guard let (object, current) = try await nextWrite() else {
                        sourceDone = true
                        break
                    }
                    let index = started
                    started += 1
                    running += 1
                    group.addTask {
                        if isCancelled() {
                            throw StorageError(.cancelled, "Interrupted while reading the source; nothing was copied.")
                        }
                        let content = try await source.read(try ObjectName(object.fullPath))
                        var after = object
                        after.bucket = destinationName
                        return (
                            index,
                            PlannedChange(object: object.fullPath, before: current, after: after, content: content)
                        )
                    }
                }
                guard let (index, change) = try await group.next() else { break }
                running -= 1
                arrived[index] = change
                // Into the plan's store in name order, as soon as the ones before have come.
                while let next = arrived.removeValue(forKey: stored) {
                    try store.append(next)
                    bytes += Int64(next.content?.count ?? 0)
                    stored += 1
                }
            }
        }
        return Plan(changes: store, unchanged: unchanged, bytes: bytes)
    }
}

/// The objects of a bucket under a prefix, in name (byte) order, read a scan page at a time.
final class NameOrderedObjects {
    private let bucket: any Bucket
    private let prefix: String
    private let isCancelled: @Sendable () -> Bool
    private var page: [ObjectMetadata] = []
    private var position = 0
    private var resumeAfter: String?
    private var started = false

    init(bucket: any Bucket, prefix: String, isCancelled: @escaping @Sendable () -> Bool) {
        self.bucket = bucket
        self.prefix = prefix
        self.isCancelled = isCancelled
    }

    /// The next object, without taking it; nil after the last.
    func peek() async throws -> ObjectMetadata? {
        while position == page.count {
            guard !started || resumeAfter != nil else { return nil }
            if isCancelled() {
                throw StorageError(.cancelled, "Interrupted while listing \(bucket.url); nothing was copied.")
            }
            let next = try await bucket.scan(prefix: prefix, after: resumeAfter, limit: 1000)
            started = true
            (page, position, resumeAfter) = (next.objects, 0, next.resumeAfter)
        }
        return page[position]
    }

    /// The next object, taken; nil after the last.
    func next() async throws -> ObjectMetadata? {
        guard let object = try await peek() else { return nil }
        position += 1
        return object
    }

    /// The object named `name`, when there is one: every object before it in name order is passed over.
    /// Names must be asked in name order.
    func take(_ name: String) async throws -> ObjectMetadata? {
        while let object = try await peek(), NameBytes.precedes(object.fullPath, name) { position += 1 }
        guard let object = try await peek(), NameBytes.sameBytes(object.fullPath, name) else { return nil }
        position += 1
        return object
    }
}
