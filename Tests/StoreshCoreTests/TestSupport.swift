import StoreshCore

/// A sorted list of names standing in for an engine's index, so the listing rules are tested on their own.
struct SortedNames: ObjectNameIndex {
    private(set) var names: [String]

    init(_ names: [String]) {
        self.names = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    mutating func insert(_ name: String) { self = SortedNames(names + [name]) }
    mutating func remove(_ name: String) { names.removeAll { $0.utf8.elementsEqual(name.utf8) } }

    func firstName(from bound: NameBound, withPrefix prefix: String) -> String? {
        let first = names.first { name in
            switch bound {
            case .atOrAfter(let start): !name.utf8.lexicographicallyPrecedes(start.utf8)
            case .after(let start): start.utf8.lexicographicallyPrecedes(name.utf8)
            }
        }
        guard let first, first.utf8.starts(with: prefix.utf8) else { return nil }
        return first
    }

    func page(_ path: String, maxResults: Int? = nil, token: String? = nil, bucket: String = "teaching") throws
        -> ListPage
    {
        try Lister.page(
            of: StoragePath(normalizing: path), bucket: bucket,
            options: ListOptions(maxResults: maxResults, pageToken: token), index: self)
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
