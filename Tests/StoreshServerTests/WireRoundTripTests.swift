import Foundation
import StoreshCore
import StoreshWire
import Testing

@testable import StoreshServer

/// The wire both ways: what `storesh serve` writes, the `gs://` clients read back as it was, and what the clients
/// send, the server reads as the change it stands for (rules G1, M4, M5, G7).
@Suite("The wire, both ways")
struct WireRoundTripTests {
    /// An object with every property, custom keys beyond ASCII, and download tokens.
    static let object: ObjectMetadata = {
        var object = ObjectMetadata(
            bucket: "app.appspot.com", fullPath: "photos/é/a b.jpg", generation: 1_795_602_528_206_312,
            metageneration: 3,
            size: 12, timeCreated: Timestamp(rfc3339: "2026-11-21T09:30:00Z")!,
            updated: Timestamp(rfc3339: "2026-11-22T10:00:00.123Z")!,
            md5Hash: "XUFAKrxLKna5cZ2REBfFkg==", crc32c: "mnG7TA==")
        for property in WritableProperty.allCases { object[property] = "value of \(property.rawValue)" }
        object.customMetadata = ["é": "3", "Z": "1", "f": "4", "a": "2", ObjectMetadata.downloadTokensKey: "t1,t2"]
        return object
    }()

    func data(_ document: JSONValue) -> Data { Data(document.serialized.utf8) }

    @Test("an object resource of the JSON API and of the v0 API reads back as the object it was written from")
    func resources() throws {
        let written = ObjectResource.cloudStorage(Self.object, baseURL: "http://127.0.0.1:9199")
        let read = try CloudStorageJSON.metadata(data(written), bucket: "other", what: "a test")
        #expect(read == Self.object && read.crc32c == Self.object.crc32c)
        #expect(
            try ObjectResource.firebaseMetadata(data(ObjectResource.firebase(Self.object)), bucket: "other")
                == Self.object)
        // Custom keys in byte order, as everywhere else storesh writes them.
        guard case .object(let members) = written,
            case .object(let custom)? = members.first(where: { $0.0 == "metadata" })?.1
        else {
            Issue.record("no metadata member")
            return
        }
        #expect(custom.map(\.0) == ["Z", "a", "f", ObjectMetadata.downloadTokensKey, "é"])
        // A noncurrent generation's time of deletion (rule B5), and Cloud Storage's own fields (rule M9), go and come back
        // with it: a custom time to the microsecond, holds, a storage class, contexts beyond ASCII, a component count.
        var noncurrent = Self.object
        noncurrent.timeDeleted = Timestamp(rfc3339: "2026-11-28T10:00:00.123Z")
        noncurrent.cloudStorage.customTime = Timestamp(microseconds: 1_795_602_528_206_312)
        noncurrent.cloudStorage.temporaryHold = true
        noncurrent.cloudStorage.eventBasedHold = true
        noncurrent.cloudStorage.storageClass = "NEARLINE"
        noncurrent.cloudStorage.timeStorageClassUpdated = Timestamp(rfc3339: "2026-11-23T00:00:00.500Z")
        noncurrent.cloudStorage.componentCount = 4
        let made = Timestamp(rfc3339: "2026-11-24T00:00:00.250Z")!
        noncurrent.cloudStorage.contexts = [
            "équipe": ObjectContext(value: "données", createTime: made, updateTime: made),
            "team": ObjectContext(
                value: "blue", createTime: made, updateTime: Timestamp(rfc3339: "2026-11-25T00:00:00Z")!),
        ]
        noncurrent.cloudStorage.retention = ObjectRetention(
            mode: .unlocked, retainUntilTime: Timestamp(rfc3339: "2030-01-01T00:00:00Z")!)
        noncurrent.cloudStorage.acl = #"[{"entity":"allUsers","role":"READER"}]"#
        let kept = ObjectResource.cloudStorage(noncurrent, baseURL: "http://127.0.0.1:9199")
        #expect(try CloudStorageJSON.metadata(data(kept), bucket: "other", what: "a test") == noncurrent)
        // A soft-deleted generation's times (rule B6), and the hash of a customer-supplied key, shown to a request
        // that gives it.
        var soft = noncurrent
        soft.cloudStorage.softDeleteTime = Timestamp(rfc3339: "2026-11-28T11:00:00Z")
        soft.cloudStorage.hardDeleteTime = Timestamp(rfc3339: "2026-12-05T11:00:00Z")
        soft.cloudStorage.customerKeySHA256 = "a2V5IGhhc2g="
        let softly = ObjectResource.cloudStorage(soft, baseURL: "", customerKey: "a2V5IGhhc2g=")
        #expect(try CloudStorageJSON.metadata(data(softly), bucket: "other", what: "a test") == soft)
        // Malformed members are refused with the member named, never read as something else.
        for bad in [
            #"{"name":"x","generation":"1","metageneration":"1","size":"1","timeCreated":"soon","updated":"2026-11-21T09:30:00Z"}"#,
            #"{"name":"x","generation":"one","metageneration":"1","size":"1"}"#,
            #"{"name":"x","generation":"1","metageneration":"1","size":"1","timeCreated":"2026-11-21T09:30:00Z","updated":"2026-11-21T09:30:00Z","retention":{"mode":"Forever"}}"#,
        ] {
            #expect(throws: StorageError.self) {
                try CloudStorageJSON.metadata(Data(bad.utf8), bucket: "b", what: "a test")
            }
        }
    }

    @Test("objects.list's document reads back as the page it was written from: prefixes, items, the next token")
    func listDocuments() throws {
        var second = Self.object
        second.fullPath = "photos/e\u{301}/b.jpg"  // NFD beside the NFC item: two names, both kept
        let page = StoredListingPage(
            prefixes: ["photos/é/sub/", "photos/x/"], items: [Self.object, second], continuation: "CgV0b2tlbg==")
        let read = try CloudStorageJSON.listPage(
            data(CloudStorageJSON.listDocument(page, baseURL: "http://127.0.0.1:9199")), bucket: "other")
        #expect(read.prefixes == page.prefixes)
        #expect(read.items.map { Array($0.fullPath.utf8) } == page.items.map { Array($0.fullPath.utf8) })
        #expect(read.items == page.items)
        #expect(read.continuation == page.continuation)
        // The last page: no token, no prefixes, no items are written, and read back as none.
        let last = try CloudStorageJSON.listPage(
            data(
                CloudStorageJSON.listDocument(
                    StoredListingPage(prefixes: [], items: [], continuation: nil), baseURL: "")), bucket: "other")
        #expect(last.prefixes.isEmpty && last.items.isEmpty && last.continuation == nil)
        #expect(throws: StorageError.self) {
            try CloudStorageJSON.listPage(Data(#"{"items": "x"}"#.utf8), bucket: "other")
        }
    }

    @Test("a PATCH body the clients send is read by the server as the update from the state it was made from")
    func patches() throws {
        var after = Self.object
        after.cacheControl = "no-cache"
        after.contentLanguage = nil
        after.customMetadata["a"] = nil
        after.customMetadata["new"] = "x"
        let body = try ObjectMetadataBody(
            json: CloudStorageJSON.patchBody(from: Self.object, to: after), what: "a test")
        let (applied, changed) = try Self.object.applying(body.update, now: Self.object.updated)
        #expect(changed)
        #expect(applied.differences(to: after).isEmpty)
        // Download tokens are not sent, so they are kept (rule G7).
        #expect(body.update.customMetadata[ObjectMetadata.downloadTokensKey] == nil)
        // Cloud Storage's own fields (rule M9): set, then released and removed, each read as the change it is.
        var held = Self.object
        held.cloudStorage.customTime = Self.object.updated
        held.cloudStorage.temporaryHold = true
        held.cloudStorage.contexts = [
            "k": ObjectContext(value: "v", createTime: Self.object.updated, updateTime: Self.object.updated)
        ]
        let holding = try ObjectMetadataBody(
            json: CloudStorageJSON.patchBody(from: Self.object, to: held), what: "a test")
        let applied2 = try Self.object.applying(holding.update, now: Self.object.updated).metadata
        #expect(applied2.differences(to: held).isEmpty && applied2.cloudStorage.temporaryHold)
        let releasing = try ObjectMetadataBody(
            json: CloudStorageJSON.patchBody(from: held, to: Self.object.with(customTime: held)), what: "a test")
        let released = try applied2.applying(releasing.update, now: Self.object.updated).metadata
        #expect(
            !released.cloudStorage.temporaryHold && released.cloudStorage.contexts.isEmpty
                && released.cloudStorage.customTime == held.cloudStorage.customTime)
    }

    @Test("an upload's resource is read by the server as the metadata it asked for")
    func uploads() throws {
        var options = WriteOptions(expectedMD5: "XUFAKrxLKna5cZ2REBfFkg==")
        options.properties[.contentType] = "image/jpeg"
        options.properties[.cacheControl] = "public, max-age=60"
        options.customMetadata = ["b": "2", "a": "1"]
        let resource = CloudStorageJSON.uploadResource(name: "photos/a.jpg", options: options)
        let body = try ObjectMetadataBody(json: data(resource), what: "a test")
        #expect(body.name == "photos/a.jpg")
        #expect(body.writeOptions.properties == options.properties)
        #expect(body.writeOptions.customMetadata == options.customMetadata)
        #expect(body.writeOptions.expectedMD5 == options.expectedMD5)
    }
}

extension ObjectMetadata {
    /// `self` with `other`'s custom time (which no change removes).
    fileprivate func with(customTime other: ObjectMetadata) -> ObjectMetadata {
        var copy = self
        copy.cloudStorage.customTime = other.cloudStorage.customTime
        return copy
    }
}
