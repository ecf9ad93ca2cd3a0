import StoreshTestSupport
import Testing

@testable import StoreshCore

@Suite("Listing (rules L1–L10)")
struct ListingTests {
    static let seed = SortedNames(["correctPrefix/happyItem", "wrongPrefix//sadItem", "lonelyItem/"])

    @Test("rule L1: a reference lists its fullPath plus /, the root lists everything")
    func l1Prefix() throws {
        let names = SortedNames(["photos", "photos/a.jpg", "photosX/b.jpg", "photos/2024/c.jpg", "top.txt"])
        let photos = try names.page("photos")
        #expect(photos.items == ["photos/a.jpg"])
        #expect(photos.prefixes == ["photos/2024"])
        let root = try names.page("")
        #expect(root.prefixes == ["photos", "photosX"])
        #expect(root.items == ["photos", "top.txt"])
        #expect(StoragePath.root.listingPrefix == "")
        #expect(StoragePath(normalizing: "a/b").listingPrefix == "a/b/")
    }

    @Test("rule L2: names with another / collapse into one prefix")
    func l2Collapse() throws {
        let names = SortedNames(["a/1", "a/2", "a/deep/3", "b", "c/x/y/z"])
        let root = try names.page("")
        #expect(root.prefixes == ["a", "c"])
        #expect(root.items == ["b"])
        let a = try names.page("a")
        #expect(a.prefixes == ["a/deep"])
        #expect(a.items == ["a/1", "a/2"])
    }

    @Test("rule L3: the seed example, reference by reference")
    func l3SeedExample() throws {
        let root = try Self.seed.page("")
        #expect(root.prefixes == ["correctPrefix", "lonelyItem", "wrongPrefix"])
        #expect(root.items == [])
        #expect(try Self.seed.page("correctPrefix") == ListPage(items: ["correctPrefix/happyItem"]))
        #expect(try Self.seed.page("wrongPrefix") == ListPage())
        #expect(try Self.seed.page("lonelyItem") == ListPage())
    }

    @Test("rule L3: the validity filter on full names")
    func l3Filter() {
        func shown(_ kind: ListPosition.EntryKind, _ name: String) -> Bool { Lister.isShown((kind, name)) }
        #expect(shown(.item, "a/b"))
        #expect(shown(.item, "/a"))  // at most one leading / is removed
        #expect(!shown(.item, "//a"))
        #expect(!shown(.item, "a//b"))
        #expect(!shown(.item, "a/"))
        #expect(!shown(.item, "/"))
        #expect(shown(.prefix, "a/"))
        #expect(shown(.prefix, "a/b/"))
        #expect(!shown(.prefix, "a//"))
        #expect(!shown(.prefix, "/"))
    }

    @Test("rule L4: prefixes and items each in UTF-8 byte order, prefixes without their trailing /")
    func l4ByteOrder() throws {
        let names = SortedNames(["é/1", "a/1", "B/1", "Z", "b", "ä", "_"])
        let root = try names.page("")
        // Byte order: uppercase before lowercase, '_' (0x5F) between them, multi-byte UTF-8 last.
        #expect(root.prefixes == ["B", "a", "é"])
        #expect(root.items == ["Z", "_", "b", "ä"])
    }

    @Test("rule L5: nothing under a reference is an empty page; an object's name lists what is under name/")
    func l5Empty() throws {
        let names = SortedNames(["photo.jpg", "docs/a"])
        #expect(try names.page("nothing/here") == ListPage())
        #expect(try names.page("photo.jpg") == ListPage())
        #expect(try SortedNames([]).page("") == ListPage())
    }

    @Test("rule L6: maxResults must be 1…1000, with the exact message", arguments: [0, -1, 1001, 5000])
    func l6Bounds(maxResults: Int) {
        let error = storageError { _ = try Self.seed.page("", maxResults: maxResults) }
        #expect(error == StorageError(.invalidArgument, "Argument 'maxResults' must be between 1 and 1000 inclusive."))
    }

    @Test("rule L6: without maxResults a page holds up to 1000 entries")
    func l6DefaultPage() throws {
        let names = SortedNames((0..<1001).map { String(format: "f/%04d", $0) })
        let first = try names.page("f")
        #expect(first.items.count == 1000)
        #expect(first.nextPageToken != nil)
        let second = try names.page("f", token: first.nextPageToken)
        #expect(second.items == ["f/1000"])
        #expect(second.nextPageToken == nil)
        #expect(try names.page("f", maxResults: 1).items == ["f/0000"])
        #expect(try names.page("f", maxResults: 1000).items.count == 1000)
    }

    @Test("rule L7: maxResults bounds prefixes and items together, in name order")
    func l7CombinedPages() throws {
        let pages = try SortedNames(["a/1", "b/1", "c", "d", "e/1"]).pages("", maxResults: 2)
        #expect(pages.count == 3)
        #expect(pages[0].prefixes == ["a", "b"] && pages[0].items == [])
        #expect(pages[1].prefixes == [] && pages[1].items == ["c", "d"])
        #expect(pages[2].prefixes == ["e"] && pages[2].items == [])
        #expect(pages[0].nextPageToken != nil && pages[1].nextPageToken != nil && pages[2].nextPageToken == nil)
    }

    @Test("rule L7: a collapsed prefix takes one slot, at the position of its first object")
    func l7PrefixPosition() throws {
        let pages = try SortedNames(["a", "b/1", "b/2", "b/3", "c"]).pages("", maxResults: 2)
        #expect(pages.map(\.items) == [["a"], ["c"]])
        #expect(pages.map(\.prefixes) == [["b"], []])
    }

    @Test("rule L8: hidden entries take no slot, so every page but the last is full")
    func l8HiddenTakeNoSlot() throws {
        let names = SortedNames(["x//1", "x//2", "x/a", "x/b", "x/c", "x/d//e", "x/f"])
        // Shown, in order: x/a, x/b, x/c, prefix x/d (from "x/d//e"), x/f; "x//1" and "x//2" are hidden.
        let pages = try names.pages("x", maxResults: 2)
        #expect(pages.map(\.items) == [["x/a", "x/b"], ["x/c"], ["x/f"]])
        #expect(pages.map(\.prefixes) == [[], ["x/d"], []])
        let all = try names.page("x")
        #expect(all.items == ["x/a", "x/b", "x/c", "x/f"])
        #expect(all.prefixes == ["x/d"])
    }

    @Test("rule L9: no token on the last page, even when hidden entries follow it")
    func l9NoTokenBeforeNothing() throws {
        // "x/-a" sorts before "x//b" ('-' is 0x2D, '/' 0x2F); "x//b" is hidden.
        let hiddenAfter = try SortedNames(["x/-a", "x//b"]).page("x", maxResults: 1)
        #expect(hiddenAfter.items == ["x/-a"])
        #expect(hiddenAfter.nextPageToken == nil)
        let rootHiddenAfter = try SortedNames(["!a", "/foo", "//bar"]).page("", maxResults: 1)
        #expect(rootHiddenAfter.items == ["!a"])
        #expect(rootHiddenAfter.nextPageToken == nil)
        let exact = try SortedNames(["a", "b", "c", "d"]).pages("", maxResults: 2)
        #expect(exact.count == 2)
        #expect(exact.last?.items == ["c", "d"])
        #expect(exact.last?.nextPageToken == nil)
    }

    @Test("rule L10: the token resumes strictly after its entry, whatever was added or deleted")
    func l10TokenSurvivesChanges() throws {
        var names = SortedNames(["a", "b", "c", "d/1", "e"])
        let first = try names.page("", maxResults: 2)
        #expect(first.items == ["a", "b"])
        names.insert("aa")  // before the token's position: not seen
        names.insert("bb")  // after it: seen
        names.remove("b")  // the token's own entry: the listing goes on
        let second = try names.page("", maxResults: 2, token: first.nextPageToken)
        #expect(second.items == ["bb", "c"])
        let third = try names.page("", maxResults: 2, token: second.nextPageToken)
        #expect(third.prefixes == ["d"])
        #expect(third.items == ["e"])
        #expect(third.nextPageToken == nil)
    }

    @Test("rule L10: a token after a prefix skips everything under that prefix")
    func l10TokenAfterPrefix() throws {
        var names = SortedNames(["p/1", "p/2", "q"])
        let first = try names.page("", maxResults: 1)
        #expect(first.prefixes == ["p"])
        names.insert("p/3")
        let second = try names.page("", maxResults: 1, token: first.nextPageToken)
        #expect(second.prefixes == [] && second.items == ["q"])
    }

    @Test("rule L10: a token of another listing, or one no listing could issue, is invalid-argument")
    func l10ForeignPositions() throws {
        let names = SortedNames(["a/1", "a/2", "a/3", "b/1", "b/2"])
        let token = try #require(try names.page("a", maxResults: 1).nextPageToken)
        #expect(storageError { _ = try names.page("b", maxResults: 1, token: token) }?.code == .invalidArgument)
        // A well-formed token whose entry lies outside its own prefix is forged.
        let forged = TestPageTokens().token(
            for: ListPosition(prefix: "a/", lastEntryKind: .item, lastEntry: "b/1"), bucket: "teaching")
        #expect(storageError { _ = try names.page("a", token: forged) } == .malformedPageToken)
        let prefixWithoutSlash = TestPageTokens().token(
            for: ListPosition(prefix: "a/", lastEntryKind: .prefix, lastEntry: "a/x"), bucket: "teaching")
        #expect(storageError { _ = try names.page("a", token: prefixWithoutSlash) } == .malformedPageToken)
    }

    @Test("startOffset starts the listing at a name, inside the listing's prefix only")
    func startOffset() throws {
        let names = SortedNames(["u/a1", "u/b1", "u/b2/x", "u/c", "v"])
        let page = try Lister.page(
            of: StoragePath(normalizing: "u"), bucket: "teaching", options: ListOptions(startOffset: "u/b"),
            index: names,
            tokens: TestPageTokens())
        #expect(page.items == ["u/b1", "u/c"] && page.prefixes == ["u/b2"])
        let outside = try Lister.page(
            of: StoragePath(normalizing: "u"), bucket: "teaching", options: ListOptions(startOffset: "a"), index: names,
            tokens: TestPageTokens())
        #expect(outside.items == ["u/a1", "u/b1", "u/c"])
    }

    @Test("listing is complete and in order across pages of every size")
    func pagesPartitionTheListing() throws {
        var names: [String] = []
        for user in 0..<7 { for photo in 0..<3 { names.append("u/\(user)/\(photo)") } }
        names += ["u/a", "u/b", "u/c//x", "u/z/"]
        let index = SortedNames(names)
        let whole = try index.page("u")
        for size in 1...12 {
            let pages = try index.pages("u", maxResults: size)
            #expect(pages.flatMap(\.prefixes) == whole.prefixes)
            #expect(pages.flatMap(\.items) == whole.items)
            #expect(pages.dropLast().allSatisfy { $0.prefixes.count + $0.items.count == size })
        }
    }
}
