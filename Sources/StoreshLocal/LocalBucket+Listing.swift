import Foundation
import StoreshCore
import StoreshSQLite

extension LocalBucket {
    /// How many pages one listing with a `matchGlob` or a `filter` reads at most before it answers: a glob that matches little in a
    /// large bucket answers a short page (or none) with a token, as the service does, rather than read it all at once.
    static let globbedPagesPerAnswer = 10

    /// A page of the names under `prefix` as the JSON API lists them with its options beyond rule V2's: `matchGlob`
    /// keeps the items it matches, `filter` those whose contexts pass it (pages may then be short, a token saying
    /// where to go on); `includeTrailingDelimiter` adds, beside a prefix `P/`, the object named `P/` itself when there
    /// is one (the service's "folder" objects).
    public func listStoredNames(
        prefix: String, delimited: Bool, options: ListOptions, matchGlob: MatchGlob?,
        filter: ObjectContextFilter? = nil,
        includeTrailingDelimiter: Bool
    ) throws(StorageError) -> ListPage {
        guard matchGlob != nil || filter != nil else {
            var page = try listStoredNames(prefix: prefix, delimited: delimited, options: options)
            if delimited && includeTrailingDelimiter { try addFolderObjects(to: &page) }
            return page
        }
        guard !delimited else {
            throw StorageError.invalidArgument(
                "storesh serve lists with matchGlob or a filter, or with a delimiter, not both.")
        }
        let keeps = { (object: ObjectMetadata) in
            (matchGlob?.matches(object.fullPath) ?? true) && (filter?.admits(object) ?? true)
        }
        let wanted = try options.validatedMaxResults()
        var answer = ListPage()
        var items: [ObjectMetadata] = []
        var next = options
        next.includeMetadata = true
        for _ in 0..<Self.globbedPagesPerAnswer {
            // Never more than the page still has room for: a token then always resumes after the last name read.
            next.maxResults = wanted - items.count
            let page = try listStoredNames(prefix: prefix, delimited: false, options: next)
            items += (page.itemMetadata ?? []).filter(keeps)
            answer.nextPageToken = page.nextPageToken
            guard let token = page.nextPageToken, items.count < wanted else { break }
            next.pageToken = token
            next.startOffset = nil
        }
        answer.items = items.map(\.fullPath)
        answer.itemMetadata = options.includeMetadata ? items : nil
        return answer
    }

    /// Adds to a delimited page the objects named as its prefixes (`P/`), each among the items in byte order.
    private func addFolderObjects(to page: inout ListPage) throws(StorageError) {
        guard !page.prefixes.isEmpty else { return }
        let folders = try read {
            try rows.fetchRows(page.prefixes.map { ObjectName(stored: $0 + "/") }.map(\.rawValue))
        }
        guard !folders.isEmpty else { return }
        var merged: [(name: String, metadata: ObjectMetadata?)] = zip(
            page.items, page.itemMetadata.map { $0.map(Optional.some) } ?? page.items.map { _ in nil }
        )
        .map { ($0, $1) }
        for prefix in page.prefixes {
            guard let row = folders[ObjectName(stored: prefix + "/")] else { continue }
            merged.append((row.metadata.fullPath, row.metadata))
        }
        merged.sort { NameBytes.precedes($0.name, $1.name) }
        page.items = merged.map(\.name)
        if page.itemMetadata != nil { page.itemMetadata = merged.compactMap(\.metadata) }
    }
}
