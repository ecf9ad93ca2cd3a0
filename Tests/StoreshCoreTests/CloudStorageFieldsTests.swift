import Foundation
import Testing
import StoreshCore

@Suite("Cloud Storage's own fields of an object (rule M9)")
struct CloudStorageFieldsTests {
    let t0 = Timestamp(rfc3339: "2026-11-28T10:00:00Z")!
    let t1 = Timestamp(rfc3339: "2026-11-28T11:00:00Z")!

    @Test("rule M9: the packed column round-trips every field; empty fields pack to nothing; damaged bytes are refused")
    func packing() throws {
        #expect(CloudStorageFields().packed.isEmpty)
        var fields = CloudStorageFields()
        fields.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        fields.eventBasedHold = true
        fields.storageClass = "COLDLINE"
        fields.timeStorageClassUpdated = t0
        fields.componentCount = 32
        fields.contexts = ["k": ObjectContext(value: "v", createTime: t0, updateTime: t1), "é": ObjectContext(value: "", createTime: t0, updateTime: t0)]
        #expect(CloudStorageFields(packed: fields.packed) == fields)
        #expect(CloudStorageFields(packed: fields.packed.dropLast()) == nil)
        #expect(CloudStorageFields(packed: [9, 0, 0]) == nil)
        // A context key in NFC and in NFD are two keys (rule P7).
        var decomposed = fields
        decomposed.contexts["e\u{301}"] = decomposed.contexts.removeValue(forKey: "é")
        #expect(decomposed != fields)
    }

    @Test("rule M9: a custom time only moves forward; a context keeps when it was made and says when it changed")
    func updates() throws {
        var fields = CloudStorageFields()
        fields.customTime = t1
        var earlier = CloudStorageFieldsUpdate()
        earlier.customTime = t0
        #expect(throws: StorageError.self) { try earlier.applied(to: fields, now: t1) }
        var contexts = CloudStorageFieldsUpdate()
        contexts.contexts = ["a": "1", "b": "2"]
        let made = try contexts.applied(to: fields, now: t0)
        #expect(made.contexts["a"] == ObjectContext(value: "1", createTime: t0, updateTime: t0) && made.customTime == t1)
        var change = CloudStorageFieldsUpdate()
        change.contexts = ["a": "3", "b": String?.none]
        change.temporaryHold = true
        let changed = try change.applied(to: made, now: t1)
        #expect(changed.contexts == ["a": ObjectContext(value: "3", createTime: t0, updateTime: t1)] && changed.isHeld)
        // Through a metadata update, a change of these fields alone is a change (rule M4): metageneration moves.
        let object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 1, metageneration: 1, size: 0, timeCreated: t0, updated: t0, md5Hash: "")
        var update = MetadataUpdate()
        update.cloudStorage = change
        let result = try object.applying(update, now: t1)
        #expect(result.changed && result.metadata.metageneration == 2 && result.metadata.cloudStorage.temporaryHold)
        #expect(try !result.metadata.applying(update, now: t1).changed)
    }

    @Test("rule M9: storesh's metadata document (meta get, plans, journals) carries the fields and reads them back")
    func document() throws {
        var object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 5, metageneration: 2, size: 3, timeCreated: t0, updated: t1, md5Hash: "bWQ1")
        #expect(ObjectMetadata(jsonDocument: try parsed(object.jsonDocument)) == object)
        object.cloudStorage.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        object.cloudStorage.eventBasedHold = true
        object.cloudStorage.storageClass = "ARCHIVE"
        object.cloudStorage.timeStorageClassUpdated = t0
        object.cloudStorage.contexts = ["k": ObjectContext(value: "v", createTime: t0, updateTime: t1)]
        object.cloudStorage.customerKeySHA256 = "c2hh"
        object.timeDeleted = t1
        let document = try parsed(object.jsonDocument)
        #expect(document["eventBasedHold"] as? Bool == true && document["temporaryHold"] == nil)
        #expect(ObjectMetadata(jsonDocument: document) == object)
    }

    private func parsed(_ document: JSONValue) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(document.serialized.utf8)) as! [String: Any]
    }
}
