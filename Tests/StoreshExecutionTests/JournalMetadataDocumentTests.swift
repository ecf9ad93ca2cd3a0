import Foundation
import StoreshCore
import Testing

@testable import StoreshExecution

@Suite("A journal's metadata documents, read back")
struct JournalMetadataDocumentTests {
    let t0 = Timestamp(rfc3339: "2026-11-28T10:00:00Z")!
    let t1 = Timestamp(rfc3339: "2026-11-28T11:00:00Z")!

    @Test("rule M9: storesh's metadata document (meta get, plans, journals) carries the fields and reads them back")
    func document() throws {
        var object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 5, metageneration: 2, size: 3, timeCreated: t0, updated: t1,
            md5Hash: "bWQ1")
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
        try #require(try JSONSerialization.jsonObject(with: Data(document.serialized.utf8)) as? [String: Any])
    }
}
