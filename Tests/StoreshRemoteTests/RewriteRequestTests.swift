import Foundation
import StoreshCore
import StoreshWire
import Testing

@Suite("A change of storage class on the JSON API (rule M9)")
struct RewriteRequestTests {
    let t0 = Timestamp(rfc3339: "2026-11-28T10:00:00Z")!

    @Test(
        "a change of storage class is a rewrite onto itself, guarded on both sides, whose body is the object whole with null for what goes"
    )
    func rewriteRequest() throws {
        var before = ObjectMetadata(
            bucket: "b", fullPath: "a b/c.txt", generation: 17, metageneration: 4, size: 1, timeCreated: t0,
            updated: t0, md5Hash: "bWQ1",
            customMetadata: ["keep": "1", "drop": "2"])
        before.contentType = "text/plain"
        before.cacheControl = "no-cache"
        var after = before
        after.customMetadata["drop"] = nil
        after.cacheControl = nil
        after.cloudStorage.storageClass = "ARCHIVE"
        let request = CloudStorageWire.change(bucket: "b", object: before.fullPath, from: before, to: after)
        #expect(request.method == "POST")
        #expect(
            request.target
                == "/storage/v1/b/b/o/a%20b%2Fc.txt/rewriteTo/b/b/o/a%20b%2Fc.txt?sourceGeneration=17&ifGenerationMatch=17&ifSourceGenerationMatch=17&ifSourceMetagenerationMatch=4"
        )
        let body = try #require(try JSONSerialization.jsonObject(with: request.body ?? Data()) as? [String: Any])
        #expect(body["storageClass"] as? String == "ARCHIVE" && body["contentType"] as? String == "text/plain")
        #expect(body["cacheControl"] is NSNull)
        let custom = try #require(body["metadata"] as? [String: Any])
        #expect(custom["keep"] as? String == "1" && custom["drop"] is NSNull)
        // The same class: a PATCH of what changed.
        var patched = before
        patched.contentLanguage = "en"
        #expect(
            CloudStorageWire.change(bucket: "b", object: before.fullPath, from: before, to: patched).method == "PATCH")
    }
}
