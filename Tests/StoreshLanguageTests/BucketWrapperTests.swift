import Foundation
import StoreshCore
import StoreshExecution
import StoreshLocal
import StoreshRules
import StoreshTestSupport
import Testing

/// The layers put around a bucket (the rules layer, a plan, a transaction) answer for it: each requirement of
/// `Bucket` is forwarded or answered on purpose, never left to a default that would hide what the bucket declares.
@Suite("Bucket wrappers answer for the bucket they wrap")
struct BucketWrapperTests {
    /// What a bucket declares about itself, beyond its objects.
    func declared(_ bucket: any Bucket) -> [String] {
        [
            bucket.name, bucket.scheme, bucket.url, bucket.accessDescription ?? "no access description",
            "guards changes: \(bucket.guardsChanges)", "end-user sign-in: \(bucket.endUserSignIn != nil)",
        ]
    }

    /// Each capability with an accessor is declared exactly when the accessor answers.
    func accessorsMatchCapabilities(_ bucket: any Bucket, _ label: String) {
        let capabilities = bucket.capabilities
        #expect(capabilities.contains(.transactions) == (bucket.transactions != nil), "\(label): transactions")
        #expect(capabilities.contains(.snapshots) == (bucket.snapshotStore != nil), "\(label): snapshots")
        #expect(capabilities.contains(.rulesAdministration) == (bucket.rulesStore != nil), "\(label): rules")
        #expect(capabilities.contains(.immediateReads) == (bucket.immediateReads != nil), "\(label): immediate reads")
    }

    @Test("the rules layer and a plan say what the bucket under them says, and declare only what they can do")
    func forwarded() throws {
        let remote = MemoryBucket(name: "app.appspot.com")
        remote.access = "gs://app.appspot.com on the emulator at http://127.0.0.1:9199, as the owner"
        remote.guardsChangesDeclared = false
        let rules = try RulesSession(store: remote)
        let clock = SteppingClock(start: Timestamp(rfc3339: "2026-11-25T09:00:00Z")!)
        let wrappers: [(String, any Bucket)] = [
            ("rules layer", rules.guarding(remote)),
            ("plan", try PlannedBucket(over: remote, clock: clock)),
            ("plan over the rules layer", try PlannedBucket(over: rules.guarding(remote), clock: clock)),
        ]
        for (label, wrapper) in wrappers {
            #expect(declared(wrapper) == declared(remote), "\(label)")
            accessorsMatchCapabilities(wrapper, label)
        }
        accessorsMatchCapabilities(remote, "memory bucket")
    }

    @Test("over a local bucket too: its transactions, snapshots, rules and immediate reads")
    func local() throws {
        let directory = NSTemporaryDirectory() + "storesh-wrapper-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bucket = try LocalBucket.open(at: directory + "/w.bucket")
        defer { bucket.close() }
        let rules = try RulesSession(store: bucket, clock: bucket.clock)
        accessorsMatchCapabilities(bucket, "local bucket")
        accessorsMatchCapabilities(rules.guarding(bucket), "rules layer over a local bucket")
        accessorsMatchCapabilities(try PlannedBucket(over: bucket, clock: bucket.clock), "plan over a local bucket")
        #expect(declared(rules.guarding(bucket)) == declared(bucket))
    }
}
