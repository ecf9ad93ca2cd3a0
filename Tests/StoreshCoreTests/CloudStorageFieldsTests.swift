import Foundation
import StoreshCore
import Testing

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
        fields.contexts = [
            "k": ObjectContext(value: "v", createTime: t0, updateTime: t1),
            "é": ObjectContext(value: "", createTime: t0, updateTime: t0),
        ]
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
        #expect(
            made.contexts["a"] == ObjectContext(value: "1", createTime: t0, updateTime: t0) && made.customTime == t1)
        var change = CloudStorageFieldsUpdate()
        change.contexts = ["a": "3", "b": String?.none]
        change.temporaryHold = true
        let changed = try change.applied(to: made, now: t1)
        #expect(changed.contexts == ["a": ObjectContext(value: "3", createTime: t0, updateTime: t1)] && changed.isHeld)
        // Through a metadata update, a change of these fields alone is a change (rule M4): metageneration moves.
        let object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 1, metageneration: 1, size: 0, timeCreated: t0, updated: t0,
            md5Hash: "")
        var update = MetadataUpdate()
        update.cloudStorage = change
        let result = try object.applying(update, now: t1)
        #expect(result.changed && result.metadata.metageneration == 2 && result.metadata.cloudStorage.temporaryHold)
        #expect(try !result.metadata.applying(update, now: t1).changed)
    }

    @Test(
        "rule M9: an update names customTime, the holds and context.KEY; each is checked, and a custom time cannot be removed"
    )
    func namedInUpdates() throws {
        var update = MetadataUpdate()
        try update.set("customTime", to: "2026-01-31T12:00:00Z")
        try update.set("temporaryHold", to: "true")
        try update.set("context.team", to: "blue")
        try update.unset("eventBasedHold")
        #expect(update.cloudStorage.customTime == Timestamp(rfc3339: "2026-01-31T12:00:00Z"))
        #expect(update.cloudStorage.temporaryHold == true && update.cloudStorage.eventBasedHold == false)
        #expect(update.cloudStorage.contexts["team"] == .some("blue"))
        for (key, value) in [
            ("customTime", "yesterday"), ("temporaryHold", "yes"), ("context.", "x"), ("context.a\u{1}", "x"),
            ("context.k", String(repeating: "v", count: 257)),
        ] {
            var refused = MetadataUpdate()
            #expect(throws: StorageError.self, "\(key)=\(value)") { try refused.set(key, to: value) }
        }
        var removal = MetadataUpdate()
        let error = #expect(throws: StorageError.self) { try removal.unset("customTime") }
        #expect(error?.message.contains("only moves forward") == true)
        #expect(throws: StorageError.self) { try removal.set("customTim", to: "2026-01-31T12:00:00Z") }
    }

    @Test(
        "rule M9: the fields are differences like any property: said by a plan, and made into the update that makes them"
    )
    func differences() throws {
        let before = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 5, metageneration: 2, size: 3, timeCreated: t0, updated: t1,
            md5Hash: "bWQ1")
        var update = MetadataUpdate()
        try update.set("customTime", to: "2026-11-28T12:00:00Z")
        try update.set("eventBasedHold", to: "true")
        try update.set("context.k", to: "v")
        try update.set("contentType", to: "text/plain")
        let (after, changed) = try before.applying(update, now: t1)
        #expect(changed && after.metageneration == 3)
        #expect(
            before.differences(to: after).map(\.key) == ["contentType", "context.k", "customTime", "eventBasedHold"])
        #expect(before.differences(to: after).last?.new == "true")
        // The update made from the two states makes the same state, and applying the state itself does too.
        #expect(try before.applying(MetadataUpdate(from: before, to: after), now: t1).metadata == after)
        #expect(try before.replacingWritableMetadata(with: after, now: t1).metadata == after)
        // Released and removed: a hold that is off and a context that is gone are "not set".
        var release = MetadataUpdate()
        try release.unset("eventBasedHold")
        try release.unset("context.k")
        let released = try after.applying(release, now: t1).metadata
        #expect(
            after.differences(to: released).map { [$0.key, $0.old, $0.new] } == [
                ["context.k", "v", nil], ["eventBasedHold", "true", nil],
            ])
        // Going back in time is refused, as the service refuses it: an undo of a custom time cannot be made.
        var earlier = before
        earlier.cloudStorage.customTime = t0
        #expect(throws: StorageError.self) { try after.replacingWritableMetadata(with: earlier, now: self.t1) }
    }

    @Test(
        "rule M9: a retention keeps an object until its time; Locked only lengthens; Unlocked shortens only when overridden"
    )
    func retention() throws {
        var object = ObjectMetadata(
            bucket: "b", fullPath: "r", generation: 5, metageneration: 1, size: 1, timeCreated: t0, updated: t0,
            md5Hash: "bWQ1")
        #expect(object.protection(against: .deleted, now: t0) == nil)
        object.cloudStorage.retention = ObjectRetention(mode: .unlocked, retainUntilTime: t1)
        #expect(CloudStorageFields(packed: object.cloudStorage.packed) == object.cloudStorage)
        #expect(object.protection(against: .deleted, now: t0)?.code == .unauthorized)
        #expect(object.protection(against: .overwritten, now: t1) == nil)
        // Shortened or removed: only with the override; lengthened or locked: always.
        var shorten = CloudStorageFieldsUpdate()
        shorten.retention = .some(nil)
        #expect(throws: StorageError.self) { try shorten.applied(to: object.cloudStorage, now: self.t0) }
        shorten.overridesUnlockedRetention = true
        #expect(try shorten.applied(to: object.cloudStorage, now: t0).retention == nil)
        var lock = CloudStorageFieldsUpdate()
        lock.retention = .some(ObjectRetention(mode: .locked, retainUntilTime: t1))
        let locked = try lock.applied(to: object.cloudStorage, now: t0)
        for change in [
            ObjectRetention(mode: .unlocked, retainUntilTime: t1), ObjectRetention(mode: .locked, retainUntilTime: t0),
            nil,
        ] {
            var undo = CloudStorageFieldsUpdate()
            undo.retention = .some(change)
            undo.overridesUnlockedRetention = true
            #expect(throws: StorageError.self) { try undo.applied(to: locked, now: self.t0) }
        }
        // The bucket's policy, as a read answers it: kept until then, and named in the refusal.
        var young = ObjectMetadata(
            bucket: "b", fullPath: "p", generation: 5, metageneration: 1, size: 1, timeCreated: t0, updated: t0,
            md5Hash: "bWQ1")
        young.cloudStorage.retentionExpirationTime = t1
        #expect(
            young.protection(against: .deleted, now: t0)?.message.contains("retention policy until 2026-11-28T11:00:00")
                == true)
        #expect(young.cloudStorage.packed.isEmpty)
    }

    @Test(
        "rule M9: a change of storage class is a rewrite: a new generation of the same content, made now, metageneration 1"
    )
    func storageClassRewrite() throws {
        var update = MetadataUpdate()
        try update.set("storageClass", to: "nearline")
        #expect(update.cloudStorage.storageClass == "NEARLINE")
        #expect(throws: StorageError.self) { try update.set("storageClass", to: "cold") }
        var unset = MetadataUpdate()
        #expect(throws: StorageError.self) { try unset.unset("storageClass") }
        let object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 7, metageneration: 3, size: 3, timeCreated: t0, updated: t0,
            md5Hash: "bWQ1")
        let (rewritten, changed) = try object.applying(update, now: t1)
        #expect(changed && object.rewrites(to: rewritten))
        #expect(rewritten.generation > object.generation && rewritten.metageneration == 1)
        #expect(rewritten.timeCreated == t1 && rewritten.updated == t1 && rewritten.md5Hash == object.md5Hash)
        #expect(
            rewritten.cloudStorage.storageClass == "NEARLINE" && rewritten.cloudStorage.timeStorageClassUpdated == t1)
        #expect(
            object.differences(to: rewritten) == [
                PropertyDifference(key: "storageClass", old: "STANDARD", new: "NEARLINE")
            ])
        // The class it has already: no change. STANDARD again: no class kept, a rewrite all the same.
        #expect(try !rewritten.applying(update, now: t1).changed)
        var standard = MetadataUpdate()
        try standard.set("storageClass", to: "STANDARD")
        let back = try rewritten.applying(standard, now: t1).metadata
        #expect(
            back.cloudStorage.storageClass == nil && back.cloudStorage.timeStorageClassUpdated == nil
                && rewritten.rewrites(to: back))
        // The update that makes one state the other names the class; a metadata change alone is no rewrite.
        #expect(MetadataUpdate(from: rewritten, to: object).cloudStorage.storageClass == "STANDARD")
        var cached = MetadataUpdate()
        try cached.set("cacheControl", to: "no-cache")
        #expect(!object.rewrites(to: try object.applying(cached, now: t1).metadata))
        // A generation at the end of the numbers cannot be rewritten, and does not trap.
        var last = object
        last.generation = .max
        #expect(throws: StorageError.self) { try last.applying(update, now: self.t1) }
    }

    @Test(
        "rule M9: a listing's filter on contexts: a key with a value, a key at all, either negated; anything else refused"
    )
    func contextFilters() throws {
        var object = ObjectMetadata(
            bucket: "b", fullPath: "x", generation: 1, metageneration: 1, size: 0, timeCreated: t0, updated: t0,
            md5Hash: "")
        object.cloudStorage.contexts = ["target": ObjectContext(value: "match", createTime: t0, updateTime: t0)]
        let plain = ObjectMetadata(
            bucket: "b", fullPath: "y", generation: 1, metageneration: 1, size: 0, timeCreated: t0, updated: t0,
            md5Hash: "")
        for (text, admitsObject, admitsPlain) in [
            (#"contexts."target"="match""#, true, false), (#"contexts."target"="other""#, false, false),
            (#"contexts."target":*"#, true, false), (#"-contexts."target"="match""#, false, true),
            (#"-contexts."target":*"#, false, true),
        ] {
            let filter = try ObjectContextFilter(parsing: text)
            #expect(filter.admits(object) == admitsObject && filter.admits(plain) == admitsPlain, "\(text)")
        }
        for bad in [
            #"contexts.target="match""#, #"contexts."target"=match"#, #"contexts."target"="a" AND x"#, #"name="x""#,
            #"contexts."":*"#, "",
        ] {
            #expect(throws: StorageError.self, "\(bad)") { try ObjectContextFilter(parsing: bad) }
        }
    }
}
