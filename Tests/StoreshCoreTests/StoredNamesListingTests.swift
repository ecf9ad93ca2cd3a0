import Foundation
import StoreshTestSupport
import Testing

@testable import StoreshCore

/// The listing of the Cloud Storage JSON API (rules V2, G6): any prefix, with or without the `/` delimiter, and
/// every name as it is stored. `storesh serve` answers with it; the Firebase view (L3) hides what it shows.
@Suite("Listing as stored (rules V2, G6)")
struct StoredNamesListingTests {
    static let seed = SortedNames(["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"])

    func page(
        _ names: SortedNames, prefix: String, delimited: Bool = true, options: ListOptions = ListOptions()
    ) throws -> ListPage {
        try Lister.page(
            prefix: prefix, delimited: delimited, view: .asStored, bucket: "b", options: options, index: names,
            tokens: TestPageTokens())
    }

    @Test("rule G6: the seed example as the JSON API lists it: nothing hidden, prefixes without their final /")
    func seedAsStored() throws {
        let root = try page(Self.seed, prefix: "")
        #expect(root.prefixes == ["correctPrefix", "lonelyItem", "wrongPrefix"])
        #expect(try page(Self.seed, prefix: "wrongPrefix/") == ListPage(prefixes: ["wrongPrefix/"]))
        #expect(try page(Self.seed, prefix: "lonelyItem/") == ListPage(items: ["lonelyItem/"]))
        let flat = try page(Self.seed, prefix: "", delimited: false)
        #expect(
            flat.items == ["correctPrefix/happyItem", "lonelyItem/", "wrongPrefix//sadItem"] && flat.prefixes.isEmpty)
    }

    @Test("rule V2: a prefix need not end at a /, and pages count prefixes and items together (L7)")
    func anyPrefixAndPages() throws {
        let names = SortedNames(["photos/a/1", "photos/a/2", "photos/ab", "photos/b/1", "photosX", "pics/c"])
        let first = try page(names, prefix: "photos/a", options: ListOptions(maxResults: 1))
        #expect(first.prefixes == ["photos/a"] && first.items.isEmpty)
        let second = try page(
            names, prefix: "photos/a", options: ListOptions(maxResults: 1, pageToken: first.nextPageToken))
        #expect(second == ListPage(items: ["photos/ab"]))
        #expect(
            try page(names, prefix: "photos", delimited: false).items == [
                "photos/a/1", "photos/a/2", "photos/ab", "photos/b/1", "photosX",
            ])
        #expect(try page(names, prefix: "p").prefixes == ["photos", "pics"])
    }

    @Test("startOffset and endOffset bound the names listed; a start past the prefix lists nothing")
    func offsets() throws {
        let names = SortedNames(["a/1", "a/2", "a/3", "b/1"])
        let middle = try page(names, prefix: "a/", options: ListOptions(startOffset: "a/2", endOffset: "a/3"))
        #expect(middle.items == ["a/2"])
        #expect(try page(names, prefix: "a/", options: ListOptions(startOffset: "b")) == ListPage())
        #expect(try page(names, prefix: "a/", options: ListOptions(startOffset: "0")).items == ["a/1", "a/2", "a/3"])
        #expect(try page(names, prefix: "", options: ListOptions(endOffset: "a/2")).prefixes == ["a"])
    }
}

@Suite("CRC32C")
struct CRC32CTests {
    @Test("the Castagnoli check value and Cloud Storage's base64 form")
    func knownValues() {
        var crc = CRC32C()
        crc.update(Array("123456789".utf8))
        #expect(crc.value == 0xE306_9283)  // the published check value of CRC-32C
        #expect(CRC32C.base64(of: Data("hello world".utf8)) == "yZRlqg==")  // as GCS reports it
        #expect(CRC32C().value == 0 && CRC32C.base64(of: Data()) == "AAAAAA==")
        var split = CRC32C()
        split.update(Array("1234".utf8))
        split.update(Array("56789".utf8))
        #expect(split.value == crc.value)
    }

    @Test("the C implementation agrees with the definition, at every length and alignment, in pieces or whole")
    func agreesWithTheDefinition() {
        func bitwise(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return crc ^ 0xFFFF_FFFF
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for start in 0..<9 {
            for end in stride(from: start, through: bytes.count, by: 7) {
                var whole = CRC32C()
                whole.update(Array(bytes[start..<end]))
                #expect(whole.value == bitwise(bytes[start..<end]))
                var pieces = CRC32C()
                let middle = (start + end) / 2
                pieces.update(Array(bytes[start..<middle]))
                pieces.update(Array(bytes[middle..<end]))
                #expect(pieces.value == whole.value)
            }
        }
    }
}
