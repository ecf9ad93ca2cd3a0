import StoreshCore
import StoreshTestSupport

/// A sorted list of names standing in for an engine's index, so the listing rules are tested on their own (on
/// the core's in-memory index, which plans list with).
struct SortedNames: ObjectNameIndex {
    private(set) var index: SortedNameIndex
    var names: [String] { index.names }

    init(_ names: [String]) {
        index = SortedNameIndex(names)
    }

    mutating func insert(_ name: String) { index = SortedNameIndex(names + [name]) }
    mutating func remove(_ name: String) { index = SortedNameIndex(names.filter { !$0.utf8.elementsEqual(name.utf8) }) }

    func firstName(from bound: NameBound, withPrefix prefix: String) -> String? {
        index.firstName(from: bound, withPrefix: prefix)
    }

    func page(
        _ path: String, maxResults: Int? = nil, token: String? = nil, bucket: String = "teaching"
    ) throws
        -> ListPage
    {
        try Lister.page(
            of: StoragePath(normalizing: path), bucket: bucket,
            options: ListOptions(maxResults: maxResults, pageToken: token), index: self, tokens: TestPageTokens())
    }

    /// Every page of a listing, following tokens.
    func pages(_ path: String, maxResults: Int) throws -> [ListPage] {
        var pages: [ListPage] = []
        var token: String?
        repeat {
            let page = try self.page(path, maxResults: maxResults, token: token)
            pages.append(page)
            token = page.nextPageToken
        } while token != nil && pages.count < 10_000
        return pages
    }
}
