import Foundation
import StoreshCore
import StoreshWire
import Testing

@Suite("The bucket resource (rule B4)")
struct BucketResourceTests {
    @Test("settings written as a document and read back are the same settings")
    func roundTrip() throws {
        var settings = BucketSettings(madeAt: Timestamp(microseconds: 1_700_000_000_000_000), madeByServer: true)
        settings.location = "EUROPE-WEST1"
        settings.storageClass = "COLDLINE"
        settings.labels = ["env": "test", "owner": "ada"]
        settings.kept["lifecycle"] = .object([
            ("rule", .array([.object([("action", .object([("type", .string("Delete"))]))])]))
        ])
        settings.kept["cors"] = .array([.object([("origin", .array([.string("*")]))])])
        settings.uniformBucketLevelAccess = true
        let document = BucketResource.document(settings, name: "b-1", baseURL: "http://x")
        let fields = try BucketResource.body(Data(document.serialized.utf8))
        var read = BucketSettings(madeAt: settings.timeCreated, madeByServer: true)
        try BucketResource.apply(
            fields, to: &read, replacing: BucketSettings(madeAt: settings.timeCreated), creating: true)
        #expect(read == settings)
        // And through the form a bucket file stores.
        let stored = try JSONDecoder().decode(BucketSettings.self, from: JSONEncoder().encode(settings))
        #expect(stored == settings)
    }

    @Test("the entity tag is the service's: a varint of the metageneration")
    func entityTags() {
        #expect(BucketResource.entityTag(metageneration: 1) == "CAE=")
        #expect(BucketResource.entityTag(metageneration: 2) == "CAI=")
        #expect(BucketResource.entityTag(metageneration: 300) == "CKwC")
    }

    @Test("malformed, unknown and unsupported fields are refused (serve then stores nothing: the change is undone)")
    func refusals() throws {
        let original = BucketSettings(madeAt: Timestamp(microseconds: 0))
        for body in [
            #"{"labels": "x"}"#, #"{"storageClass": 5}"#, #"{"location": "ASIA"}"#,
            #"{"versioning": {"enabled": "yes"}}"#,
            #"{"nope": 1}"#, #"{"labels": {"a": 1.5}}"#, #"[1]"#, #"{"cors": {}}"#,
        ] {
            var settings = original
            #expect(throws: StorageError.self, "\(body)") {
                try BucketResource.apply(
                    try BucketResource.body(Data(body.utf8)), to: &settings, replacing: nil, creating: false)
            }
        }
    }
}
