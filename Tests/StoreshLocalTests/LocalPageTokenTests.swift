import Foundation
import StoreshCore
import StoreshTestSupport
import Testing

@testable import StoreshWire

/// The local bucket's page tokens (rule L10), on an index of names in memory.
@Suite("Local page tokens (rule L10)")
struct LocalPageTokenTests {
    func page(
        _ names: SortedNameIndex, _ path: String, maxResults: Int? = nil, token: String? = nil,
        bucket: String = "teaching"
    )
        throws -> ListPage
    {
        try Lister.page(
            of: StoragePath(normalizing: path), bucket: bucket,
            options: ListOptions(maxResults: maxResults, pageToken: token),
            index: names, tokens: LocalPageTokens())
    }

    @Test("rule L10: malformed tokens and tokens of other listings are invalid-argument")
    func l10BadTokens() throws {
        let names = SortedNameIndex(["a/1", "a/2", "a/3", "b/1", "b/2"])
        let token = try #require(try page(names, "a", maxResults: 1).nextPageToken)
        var mangled = Array(token)
        mangled[mangled.count / 2] = mangled[mangled.count / 2] == "A" ? "B" : "A"
        for bad in ["", "garbage", "!!!!", String(token.dropLast(3)), String(mangled), token + "A", "AAAAAAAAAAAA"] {
            let error = storageError { _ = try page(names, "a", maxResults: 1, token: bad) }
            #expect(error?.code == .invalidArgument, "token \(bad)")
            #expect(error?.message.hasPrefix("Invalid page token") == true)
        }
        let otherPrefix = storageError { _ = try page(names, "b", maxResults: 1, token: token) }
        #expect(otherPrefix?.code == .invalidArgument)
        #expect(otherPrefix?.message.contains("issued for a listing of '/a', not '/b'") == true)
        let otherBucket = storageError { _ = try page(names, "a", maxResults: 1, token: token, bucket: "other") }
        #expect(otherBucket?.message.contains("issued for bucket 'teaching'") == true)
        // A well-formed token whose entry lies outside its own prefix is forged.
        let forged = LocalPageTokens().token(
            for: ListPosition(prefix: "a/", lastEntryKind: .item, lastEntry: "b/1"), bucket: "teaching")
        #expect(storageError { _ = try page(names, "a", token: forged) }?.code == .invalidArgument)
    }

    @Test("rule L10: tokens round-trip and are URL-safe")
    func l10TokenEncoding() throws {
        let position = ListPosition(prefix: "é/", lastEntryKind: .prefix, lastEntry: "é/ü/")
        let text = LocalPageTokens().token(for: position, bucket: "teaching")
        #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
        #expect(try LocalPageTokens().position(decoding: text, bucket: "teaching", prefix: "é/") == position)
    }
}
