import Foundation
import StoreshCore
import StoreshExecution
import StoreshTestSupport
import Testing

@testable import StoreshLanguage

/// `storesh copy` plans from both buckets read side by side, a scan page at a time.
@Suite("Copy plans stream both buckets in name order")
struct BucketCopyTests {
    @Test(
        "Over several scan pages, each object missing or different in the destination is planned once, in name order; identical ones are left"
    )
    func plansAcrossPages() async throws {
        // More than two scan pages (1,000 objects each) on both sides, with names whose byte order differs from
        // a naive one ("a/Z" before "a/a"), and with objects only the destination has.
        let names = (0..<2_600).map { String(format: "items/%05d", $0) } + ["items/Z", "items/a", "other/x"]
        let source = MemoryBucket(name: "source")
        source.seed(names)
        let destination = MemoryBucket(name: "destination")
        // The destination has every third object as the source has it, every seventh with other content, and
        // names of its own.
        let identical = names.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        for name in identical {
            let object = try ObjectName(name)
            let content = try await source.read(object)
            let metadata = try await source.metadata(of: object)
            var properties: [WritableProperty: String] = [:]
            for property in WritableProperty.allCases { properties[property] = metadata[property] }
            _ = try await destination.write(
                content, to: object,
                options: WriteOptions(properties: properties, customMetadata: metadata.customMetadata),
                precondition: .none)
        }
        let different = names.enumerated().filter { $0.offset % 7 == 0 && $0.offset % 3 != 0 }.map(\.element)
        for name in different {
            _ = try await destination.write(
                Data("other".utf8), to: try ObjectName(name), options: WriteOptions(), precondition: .none)
        }
        destination.seed(["items/00000-only-here", "items/zz-only-here"])

        let plan = try await BucketCopy.plan(
            from: source, to: destination, destinationName: "destination", prefix: "items/", parallel: 8,
            isCancelled: { false })

        var planned: [String] = []
        try plan.changes.forEachChange { _, change in
            planned.append(change.object)
            #expect(change.after?.bucket == "destination")
            #expect(change.content == Data("content of \(change.object)".utf8))
            // The destination's state is each write's precondition: known for the different ones, absent for the rest.
            #expect((change.before != nil) == different.contains(change.object), "\(change.object)")
        }
        let expected = names.filter { $0.hasPrefix("items/") && !identical.contains($0) }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(planned == expected)
        #expect(plan.unchanged == identical.filter { $0.hasPrefix("items/") }.count)
        #expect(plan.bytes == Int64(expected.map { "content of \($0)".utf8.count }.reduce(0, +)))
    }
}
