import Foundation
import StoreshTestSupport
import Testing

@testable import StoreshCore

@Suite("Metadata (rules M1–M8) and errors (E)")
struct MetadataTests {
    static let t0 = Timestamp(rfc3339: "2026-11-21T09:30:00.000Z")!
    static let t1 = Timestamp(rfc3339: "2026-11-21T09:31:00.000Z")!

    static func sample(
        custom: CustomMetadata = ["location": "Yosemite, CA, USA", "activity": "Hiking"]
    )
        -> ObjectMetadata
    {
        ObjectMetadata.newObject(
            bucket: "teaching", name: try! ObjectName("images/forest.jpg"), content: Array("pixels".utf8),
            generation: 1_795_000_000_000_000, now: t0, customMetadata: custom)
    }

    @Test("rule M1: read-only properties are refused by name, writable ones accepted")
    func m1Table() throws {
        let readOnly: [MetadataProperty] = [
            .bucket, .generation, .metageneration, .fullPath, .name, .size,
            .timeCreated, .updated,
        ]
        #expect(MetadataProperty.allCases.filter { $0.access == .readOnly } == readOnly)
        #expect(MetadataProperty.md5Hash.access == .atUploadOnly)
        for property in readOnly {
            var update = MetadataUpdate()
            let error = storageError { try update.set(property.rawValue, to: "x") }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("'\(property.rawValue)'") == true)
        }
        for property in WritableProperty.allCases {
            var update = MetadataUpdate()
            try update.set(property.rawValue, to: "x")
            #expect(update.properties[property] == .set("x"))
        }
    }

    @Test("rule M4: a value or key changed from NFC to NFD is a change, stored as the bytes given")
    func m4ValuesAreBytes() throws {
        let nfc = "caf\u{E9}"
        let nfd = "cafe\u{301}"
        let object = Self.sample(custom: ["k": nfc, nfc: "v"])
        var update = MetadataUpdate()
        try update.set("custom.k", to: nfd)
        try update.set("contentLanguage", to: nfd)
        let (next, changed) = try object.applying(update, now: Self.t1)
        #expect(changed)
        #expect(next.customMetadata["k"].map { Array($0.utf8) } == Array(nfd.utf8))
        #expect(next != object)
        // A key is its bytes (rule M5), as a name is: the NFC key renamed to its NFD spelling is a change of key.
        var rename = MetadataUpdate()
        try rename.set("custom.\(nfd)", to: "v")
        try rename.unset("custom.\(nfc)")
        let (renamed, keyChanged) = try object.applying(rename, now: Self.t1)
        #expect(keyChanged)
        #expect(renamed.customMetadata.keys.map { Array($0.utf8) } == [nfd, "k"].map { Array($0.utf8) })
        #expect(
            object.differences(to: renamed) == [
                PropertyDifference(key: "custom.\(nfd)", old: nil, new: "v"),
                PropertyDifference(key: "custom.\(nfc)", old: "v", new: nil),
            ])
        // Both spellings at once are refused, naming both.
        var both = MetadataUpdate()
        try both.set("custom.\(nfd)", to: "v")
        let refusal = storageError { _ = try object.applying(both, now: Self.t1) }
        #expect(refusal?.code == .invalidArgument && refusal?.message.contains("(not NFC)") == true)
        // The same bytes again are no change (rule M4).
        #expect(try next.applying(update, now: Self.t1).changed == false)
    }

    @Test("rule M2: RFC 3339 in UTC with milliseconds")
    func m2Dates() throws {
        #expect(Self.t0.rfc3339 == "2026-11-21T09:30:00.000Z")
        #expect(Timestamp(microseconds: 0).rfc3339 == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp(microseconds: 1_999).rfc3339 == "1970-01-01T00:00:00.001Z")
        #expect(Timestamp(microseconds: -1).rfc3339 == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp(rfc3339: "2024-02-29T23:59:59.5+02:00")?.rfc3339 == "2024-02-29T21:59:59.500Z")
        #expect(Timestamp(rfc3339: "2026-11-21T09:30:00Z") == Self.t0)
        for bad in [
            "", "2026-11-21", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-21T09:30:00",
            "2026-11-21T09:30:00.Z", "2026-11-21T25:00:00Z",
        ] {
            #expect(Timestamp(rfc3339: bad) == nil, "\(bad)")
        }
    }

    @Test("rule M2: formatting agrees with Foundation's ISO 8601 formatter across centuries")
    func m2AgreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            // Whole milliseconds, so Foundation's Double arithmetic cannot round differently.
            let millis = Int64.random(in: -2_000_000_000_000...7_000_000_000_000, using: &generator)
            let timestamp = Timestamp(microseconds: millis * 1000)
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
            #expect(timestamp.rfc3339 == expected)
            #expect(Timestamp(rfc3339: timestamp.rfc3339) == timestamp)
        }
    }

    @Test("rule M2: md5Hash is the base64 of the MD5 of the content")
    func m2MD5() {
        #expect(ContentHash.md5Base64([UInt8]()) == "1B2M2Y8AsgTpgAmY7PhCfg==")
        #expect(ContentHash.md5Base64(Array("hello".utf8)) == "XUFAKrxLKna5cZ2REBfFkg==")
        #expect(ContentHash.md5Base64(Data("hello".utf8)) == "XUFAKrxLKna5cZ2REBfFkg==")
        #expect(ContentHash.isMD5Base64("XUFAKrxLKna5cZ2REBfFkg=="))
        #expect(!ContentHash.isMD5Base64("hello"))
    }

    @Test("rule M3: new content gets metageneration 1, equal times, size, MD5 and a guessed contentType")
    func m3NewObject() throws {
        let metadata = Self.sample()
        #expect(metadata.metageneration == 1)
        #expect(metadata.generation == 1_795_000_000_000_000)
        #expect(metadata.timeCreated == Self.t0 && metadata.updated == Self.t0)
        #expect(metadata.size == 6)
        #expect(metadata.md5Hash == ContentHash.md5Base64(Array("pixels".utf8)))
        #expect(metadata.contentType == "image/jpeg")
        #expect(metadata.name == "forest.jpg" && metadata.fullPath == "images/forest.jpg")
        #expect(ContentType.guess(forName: "a/b.PNG") == "image/png")
        #expect(ContentType.guess(forName: "a/b") == "application/octet-stream")
        #expect(ContentType.guess(forName: "a.d/README") == "application/octet-stream")
        #expect(ContentType.guess(forName: "x/.json") == "application/octet-stream")
        let given = ObjectMetadata.newObject(
            bucket: "b", name: try ObjectName("x.jpg"), content: [UInt8](), generation: 1, now: Self.t0,
            properties: [.contentType: "text/plain"])
        #expect(given.contentType == "text/plain")
    }

    @Test("rule M4: not named is unchanged, set sets, unset removes")
    func m4PartialUpdate() throws {
        var start = Self.sample()
        start.cacheControl = "no-cache"
        start.contentLanguage = "en"
        var update = MetadataUpdate()
        try update.set("cacheControl", to: "public, max-age=60")
        try update.unset("contentLanguage")
        let (next, changed) = try start.applying(update, now: Self.t1)
        #expect(changed)
        #expect(next.cacheControl == "public, max-age=60")
        #expect(next.contentLanguage == nil)
        #expect(next.contentType == start.contentType)
        #expect(next.customMetadata == start.customMetadata)
    }

    @Test("rule M5: customMetadata merges per key; unsetting all clears; an empty map is absent")
    func m5CustomMerge() throws {
        let start = Self.sample()
        var setOne = MetadataUpdate()
        try setOne.set("custom.season", to: "summer")
        try setOne.set("custom.activity", to: "Camping")
        let merged = try start.applying(setOne, now: Self.t1).metadata
        #expect(merged.customMetadata == ["location": "Yosemite, CA, USA", "activity": "Camping", "season": "summer"])

        var unsetOne = MetadataUpdate()
        try unsetOne.unset("custom.location")
        #expect(try start.applying(unsetOne, now: Self.t1).metadata.customMetadata == ["activity": "Hiking"])

        var clear = MetadataUpdate()
        try clear.unset("custom")
        let cleared = try start.applying(clear, now: Self.t1).metadata
        #expect(cleared.customMetadata.isEmpty)

        var unsetBoth = MetadataUpdate()
        try unsetBoth.unset("customMetadata.location")
        try unsetBoth.unset("custom.activity")
        #expect(try start.applying(unsetBoth, now: Self.t1).metadata.customMetadata.isEmpty)

        var emptyKey = MetadataUpdate()
        #expect(storageError { try emptyKey.set("custom.", to: "x") }?.code == .invalidArgument)
    }

    @Test("rule M5: keys and values together stay within 8 KiB")
    func m5SizeLimit() throws {
        let key = "k"
        let fits = String(repeating: "v", count: 8192 - key.utf8.count)
        var update = MetadataUpdate()
        try update.set("custom.\(key)", to: fits)
        #expect(try Self.sample(custom: [:]).applying(update, now: Self.t1).metadata.customMetadata[key] == fits)
        try update.set("custom.\(key)", to: fits + "v")
        let error = storageError { _ = try Self.sample(custom: [:]).applying(update, now: Self.t1) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("8193 bytes") == true)
    }

    /// A merge target that records what the merge says, over stored entries given as they are (in any order).
    struct RecordingTarget: MetadataMergeTarget {
        var properties: [WritableProperty: String] = [:]
        var stored: [(key: String, value: String)]
        var events: [String] = []
        var position = 0

        func value(of property: WritableProperty) -> String? { properties[property] }

        mutating func nextCustomEntry() -> (key: String, value: String)? {
            guard position < stored.count else { return nil }
            defer { position += 1 }
            return stored[position]
        }

        mutating func rewindCustomEntries() { position = 0 }

        mutating func change(_ property: WritableProperty, from old: String?, to new: String?) {
            events.append("\(property.rawValue): \(old ?? "-") -> \(new ?? "-")")
        }

        mutating func custom(_ entry: MergedCustomEntry<String>) {
            switch entry {
            case .kept(let key, let value): events.append("kept \(key)=\(value)")
            case .set(let index, let key, let value, let old):
                events.append("set #\(index) \(key)=\(value) was \(old ?? "-")")
            case .removed(let index, let key, let old):
                events.append("removed #\(index.map(String.init) ?? "-") \(key) was \(old)")
            }
        }
    }

    @Test("rules M4, M5: one merge, in byte order of the keys, says what each property and key becomes")
    func mergeOnce() throws {
        let (nfc, nfd) = ("caf\u{E9}", "cafe\u{301}")
        var update = MetadataUpdate()
        try update.set("contentType", to: "text/plain")
        try update.set("cacheControl", to: "no-cache")
        try update.set("custom.b", to: "2")
        try update.set("custom.\(nfd)", to: "d")
        try update.unset("custom.\(nfc)")
        try update.unset("custom.z")
        try update.set("custom.a", to: "same")
        let stored: [(key: String, value: String)] = [("a", "same"), (nfc, "c"), ("z", "gone")]
        var target = RecordingTarget(
            properties: [.cacheControl: "no-cache", .contentType: "image/png"], stored: stored)
        #expect(try update.merge(into: &target))
        // The NFD key sorts before the NFC one (0x65 before 0xC3): a key is its bytes, and the NFC one is renamed.
        #expect(
            target.events == [
                "contentType: image/png -> text/plain", "kept a=same", "set #1 b=2 was -", "set #2 \(nfd)=d was -",
                "removed #3 \(nfc) was c", "removed #4 z was gone",
            ])
        // Both spellings in one map are refused (rule M5): plans, journals and the APIs carry a map as JSON, whose
        // readers take them for one key. So is a key canonically equal to an ASCII one (KELVIN SIGN and K).
        var both = MetadataUpdate()
        try both.set("custom.\(nfd)", to: "d")
        var twice = RecordingTarget(stored: stored)
        #expect(throws: MetadataMergeFailure.equivalentKeys(nfd, nfc)) { try both.merge(into: &twice) }
        var kelvin = MetadataUpdate()
        try kelvin.set("custom.\u{212A}", to: "v")
        var ascii = RecordingTarget(stored: [("K", "1")])
        #expect(throws: MetadataMergeFailure.equivalentKeys("\u{212A}", "K")) { try kelvin.merge(into: &ascii) }
        var asciiSet = MetadataUpdate()
        try asciiSet.set("custom.K", to: "v")
        var kelvinStored = RecordingTarget(stored: [("\u{212A}", "1")])
        #expect(throws: MetadataMergeFailure.equivalentKeys("K", "\u{212A}")) {
            try asciiSet.merge(into: &kelvinStored)
        }
        // Nothing that differs: no change.
        var same = MetadataUpdate()
        try same.set("custom.a", to: "same")
        var unchanged = RecordingTarget(stored: [("a", "same")])
        #expect(try same.merge(into: &unchanged) == false)
        // Clearing removes what the update does not set again.
        var clear = MetadataUpdate()
        try clear.unset("custom")
        try clear.set("custom.k", to: "v")
        var cleared = RecordingTarget(stored: [("a", "1"), ("k", "v")])
        #expect(try clear.merge(into: &cleared))
        #expect(cleared.events == ["removed #- a was 1", "kept k=v"])
        // Stored keys out of order, or empty, are not a map the merge can take.
        var disordered = RecordingTarget(stored: [("b", "1"), ("a", "2")])
        #expect(throws: MetadataMergeFailure.unreadable) { try MetadataUpdate().merge(into: &disordered) }
        var emptyKey = RecordingTarget(stored: [("", "1")])
        #expect(throws: MetadataMergeFailure.emptyKey) { try MetadataUpdate().merge(into: &emptyKey) }
        // The limit counts the map the update leaves, changed or not.
        var big = RecordingTarget(stored: [("k", String(repeating: "v", count: 8192))])
        #expect(throws: MetadataMergeFailure.tooLarge(bytes: 8193)) { try MetadataUpdate().merge(into: &big) }
    }

    @Test("rule M5: custom metadata keys are bytes, kept in byte order, compared and decoded as bytes")
    func customMetadataAsBytes() throws {
        let (nfc, nfd) = ("caf\u{E9}", "cafe\u{301}")
        var map: CustomMetadata = ["z": "1", nfc: "2"]
        map[nfd] = "3"
        #expect(map.count == 3)
        #expect(map.keys.map { Array($0.utf8) } == [nfd, nfc, "z"].map { Array($0.utf8) })
        #expect(map[nfc] == "2" && map[nfd] == "3")
        #expect(map.removeValue(forKey: nfd) == "3")
        #expect(map[nfd] == nil && map[nfc] == "2")
        // Equal as bytes only: the same text in NFD is another map.
        #expect(map == ["z": "1", nfc: "2"])
        #expect(map != ["z": "1", nfd: "2"])
        #expect(map != ["z": "1", nfc: "cafe\u{301}"] && (["v": nfc] as CustomMetadata) != ["v": nfd])
        // Pairs in any order: sorted once, a later pair replacing an earlier one of the same bytes only.
        let pairs = CustomMetadata([("b", "1"), (nfc, "2"), ("a", "3"), ("b", "4"), (nfd, "5")])
        #expect(pairs.keys.map { Array($0.utf8) } == ["a", "b", nfd, nfc].map { Array($0.utf8) })
        #expect(pairs["b"] == "4" && pairs[nfc] == "2" && pairs[nfd] == "5")
        // A JSON object's members, in byte order of their keys.
        let decoded = try JSONDecoder().decode(CustomMetadata.self, from: Data(#"{"b":"2","a":"1","B":"3"}"#.utf8))
        #expect(decoded.keys == ["B", "a", "b"] && decoded.values == ["3", "1", "2"])
    }

    @Test("rule M6: a change bumps metageneration by 1 and sets updated; no change changes nothing")
    func m6Metageneration() throws {
        let start = Self.sample()
        var update = MetadataUpdate()
        try update.set("contentType", to: "image/png")
        let (next, changed) = try start.applying(update, now: Self.t1)
        #expect(changed)
        #expect(next.metageneration == start.metageneration + 1)
        #expect(next.updated == Self.t1)
        #expect(next.generation == start.generation && next.timeCreated == start.timeCreated)
        #expect(next.size == start.size && next.md5Hash == start.md5Hash)

        let (again, changedAgain) = try next.applying(update, now: Self.t1)
        #expect(!changedAgain)
        #expect(again == next)

        var unsetMissing = MetadataUpdate()
        try unsetMissing.unset("contentDisposition")
        try unsetMissing.set("custom.activity", to: "Hiking")
        #expect(try start.applying(unsetMissing, now: Self.t1).changed == false)
    }

    @Test("rule M7: writing read-only properties is refused; unknown names get a suggestion")
    func m7Errors() {
        var update = MetadataUpdate()
        let md5 = storageError { try update.set("md5Hash", to: "x") }
        #expect(md5?.code == .invalidArgument)
        #expect(md5?.message.contains("md5Hash") == true)
        for (typo, suggestion) in [
            ("contentTyp", "contentType"), ("cachecontrol", "cacheControl"),
            ("contnetLanguage", "contentLanguage"), ("costum", "custom"),
        ] {
            let error = storageError { try update.set(typo, to: "x") }
            #expect(error?.code == .invalidArgument)
            #expect(error?.message.contains("did you mean '\(suggestion)'?") == true, "\(typo)")
        }
        let far = storageError { try update.set("zzzzzzzz", to: "x") }
        #expect(far?.message.contains("writable properties are") == true)
        #expect(update.isEmpty)
    }

    @Test("rule M8: the root is not an object")
    func m8Root() {
        let error = storageError { _ = try StoragePath.root.objectName() }
        #expect(error?.code == .invalidArgument)
        #expect(StorageError.objectNotFound("a/b").message == "Object a/b does not exist.")
    }

    @Test("spec E: codes, numbers and fixed messages")
    func errorCodes() {
        let expected: [(StorageErrorCode, String, Int)] = [
            (.unknown, "unknown", -13000), (.objectNotFound, "object-not-found", -13010),
            (.bucketNotFound, "bucket-not-found", -13011), (.unauthenticated, "unauthenticated", -13020),
            (.unauthorized, "unauthorized", -13021), (.nonMatchingChecksum, "non-matching-checksum", -13031),
            (.cancelled, "cancelled", -13040), (.invalidArgument, "invalid-argument", -13050),
            (.bucketMismatch, "bucket-mismatch", -13051), (.internalError, "internal-error", -13052),
            (.pathError, "path-error", -13053),
            // storesh's own, apart from the SDK's numbers.
            (.preconditionFailed, "precondition-failed", -13900), (.unavailable, "unavailable", -13901),
        ]
        #expect(expected.count == StorageErrorCode.allCases.count)
        for (code, name, number) in expected {
            #expect(code.name == name && code.number == number)
        }
        #expect(
            StorageError.unauthorized(bucket: "teaching", path: "files/uid/a").message
                == "User does not have permission to access gs://teaching/files/uid/a.")
        #expect(StorageError.bucketNotFound("x").message == "Bucket x does not exist.")
        #expect(
            StorageError.unauthenticated.message
                == "User is not authenticated, please authenticate using Firebase Authentication and try again.")
    }

    @Test("the stepping clock advances 1 ms per change")
    func steppingClock() {
        let clock = SteppingClock(start: Self.t0)
        #expect(clock.nextChangeTime() == Self.t0)
        #expect(clock.nextChangeTime().rfc3339 == "2026-11-21T09:30:00.001Z")
    }
}
