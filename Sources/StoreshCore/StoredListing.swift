import Foundation

/// One page of a service's own delimiter listing (the Cloud Storage JSON API's, S3's ListObjectsV2): names as the
/// service stores them, nothing hidden, and the service's own continuation.
public struct StoredListingPage: Sendable {
    /// Prefix entries with their trailing `/`, in byte order.
    public var prefixes: [String]
    /// Items with their metadata, in byte order.
    public var items: [ObjectMetadata]
    /// Where the service would go on; nil on its last page.
    public var continuation: String?

    public init(prefixes: [String], items: [ObjectMetadata], continuation: String?) {
        self.prefixes = prefixes
        self.items = items
        self.continuation = continuation
    }
}

/// A service that lists names under a prefix, collapsed at the next `/`, from a start name on.
public protocol StoredListingSource: Sendable {
    /// Up to `maxResults` entries (prefixes and items together) of the names that start with `prefix`, at or
    /// after `startOffset`, or where `continuation` (the service's own, from the page before) says.
    func storedPage(
        prefix: String, startOffset: String?, continuation: String?, maxResults: Int
    ) async throws
        -> StoredListingPage
}

extension Lister {
    /// One page of the listing of `reference` as Cloud Storage for Firebase gives it (rules L1–L10), made from a
    /// service that lists names as stored (rule G6): hidden names are dropped (L3), pages are filled so that they
    /// take no slot (L8), a page is followed by a token only when another shown entry exists (L9), and the token
    /// is storesh's own: the position of the last entry returned, resumed with `startOffset`, so it survives
    /// deletes (L10) and never depends on how long the service keeps its own.
    ///
    /// Usually one request per page: it asks for one entry more than the page holds, to know whether the page is
    /// the last. Entries before the position are dropped here too, so a service that ignores `startOffset` still
    /// gives the right pages (more slowly).
    /// What a page's first request to the stored listing asks (`storedPage`'s start and size), as `page` asks it:
    /// `explain` shows it. Nil when the page is empty without a request.
    public static func firstStoredRequest(
        prefix: String, bucket: String, options: ListOptions, tokens: some PageTokenFormat
    )
        throws -> (startOffset: String?, maxResults: Int)?
    {
        guard let bound = try startBound(prefix: prefix, bucket: bucket, options: options, tokens: tokens) else {
            return nil
        }
        return storedRequest(prefix: prefix, from: bound, pageSize: try options.validatedMaxResults(), held: 0)
    }

    /// A request to the stored listing: from the page's start, for the entries the page still lacks and one more
    /// (to know whether the page is the last).
    static func storedRequest(
        prefix: String, from bound: NameBound, pageSize: Int, held: Int
    ) -> (startOffset: String?, maxResults: Int) {
        (bound.name == prefix ? nil : bound.name, min(ListOptions.maximumResults, pageSize - held + 1))
    }

    public static func page(
        of reference: StoragePath, bucket: String, options: ListOptions, source: some StoredListingSource,
        tokens: some PageTokenFormat
    ) async throws -> ListPage {
        let prefix = reference.listingPrefix
        let maxResults = try options.validatedMaxResults()
        guard let bound = try startBound(prefix: prefix, bucket: bucket, options: options, tokens: tokens) else {
            return ListPage()
        }
        var page = ListPage()
        var metadata: [ObjectMetadata] = []
        var last: (kind: ListPosition.EntryKind, name: String)?
        var continuation: String?
        // Bounded: each request goes on from the service's continuation, which must change every time.
        while true {
            let request = storedRequest(
                prefix: prefix, from: bound, pageSize: maxResults, held: page.prefixes.count + page.items.count)
            let stored = try await source.storedPage(
                prefix: prefix, startOffset: request.startOffset, continuation: continuation,
                maxResults: request.maxResults)
            for entry in merged(stored) {
                guard bound.admits(entry.kind, entry.name) else { continue }
                if let end = options.endOffset, !entry.name.utf8.lexicographicallyPrecedes(end.utf8) {
                    return finished(page, metadata, options)
                }
                guard isShown((entry.kind, entry.name)) else { continue }
                if page.prefixes.count + page.items.count == maxResults, let last {
                    page.nextPageToken = tokens.token(
                        for: ListPosition(prefix: prefix, lastEntryKind: last.kind, lastEntry: last.name),
                        bucket: bucket)
                    return finished(page, metadata, options)
                }
                switch entry.kind {
                case .item:
                    page.items.append(entry.name)
                    if let object = entry.metadata { metadata.append(object) }
                case .prefix:
                    page.prefixes.append(NameBytes.prefix(of: entry.name, byteCount: entry.name.utf8.count - 1))
                }
                last = (entry.kind, entry.name)
            }
            guard let next = stored.continuation else { return finished(page, metadata, options) }
            guard next != continuation else {
                throw StorageError.internalError(
                    "The service gave the same continuation twice while listing \(prefix); the listing stopped.")
            }
            continuation = next
        }
    }

    private static func finished(_ page: ListPage, _ metadata: [ObjectMetadata], _ options: ListOptions) -> ListPage {
        var page = page
        if options.includeMetadata { page.itemMetadata = metadata }
        return page
    }

    /// A stored page's prefixes and items in one byte order (a page covers one range of names).
    private static func merged(
        _ page: StoredListingPage
    ) -> [(kind: ListPosition.EntryKind, name: String, metadata: ObjectMetadata?)] {
        var entries = page.prefixes.map {
            (kind: ListPosition.EntryKind.prefix, name: $0, metadata: ObjectMetadata?.none)
        }
        entries += page.items.map { (kind: .item, name: $0.fullPath, metadata: $0) }
        return entries.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}

extension NameBound {
    /// The name itself, for a service's `startOffset` (inclusive; an `after` bound drops the name itself).
    var name: String {
        switch self {
        case .atOrAfter(let name), .after(let name): name
        }
    }

    /// Whether a listing entry lies past the bound: an item by its name, a prefix entry when some name under it
    /// can (its names run up to the prefix's successor).
    func admits(_ kind: ListPosition.EntryKind, _ entry: String) -> Bool {
        switch (kind, self) {
        case (.item, .atOrAfter(let start)): !entry.utf8.lexicographicallyPrecedes(start.utf8)
        case (.item, .after(let start)): start.utf8.lexicographicallyPrecedes(entry.utf8)
        case (.prefix, _): name.utf8.lexicographicallyPrecedes(NameBound.successor(ofPrefix: entry).utf8)
        }
    }
}

/// Tokens of one of two formats: written in the first, read in whichever issued them.
public struct EitherPageTokens: PageTokenFormat {
    public let first: any PageTokenFormat
    public let second: any PageTokenFormat

    public init(first: any PageTokenFormat, second: any PageTokenFormat) {
        self.first = first
        self.second = second
    }

    public func token(for position: ListPosition, bucket: String) -> String {
        first.token(for: position, bucket: bucket)
    }

    public func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        do {
            return try first.position(decoding: token, bucket: bucket, prefix: prefix)
        } catch {
            return try second.position(decoding: token, bucket: bucket, prefix: prefix)
        }
    }

    public func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        do {
            return try first.contents(of: token)
        } catch {
            return try second.contents(of: token)
        }
    }
}

/// Page tokens that hold the position itself, readable once decoded: the bucket, the listing's prefix and the
/// last entry, marked as one kind's (a plan's, a real bucket's). Real buckets resume from the position, so a
/// token outlives the service's own continuation and any delete (rule L10).
public struct PositionPageTokens: PageTokenFormat {
    public let mark: String

    public init(mark: String) { self.mark = mark }

    /// `BUCKET \0 KIND \0 N \0 PREFIX LAST`: the prefix's length in bytes says where the last entry starts, so that
    /// names holding NUL (which Cloud Storage allows) cannot be mistaken for a separator.
    public func token(for position: ListPosition, bucket: String) -> String {
        let head = [bucket, String(position.lastEntryKind.rawValue), String(position.prefix.utf8.count), ""].joined(
            separator: "\u{0}")
        return mark + Data((head + position.prefix + position.lastEntry).utf8).base64EncodedString()
    }

    public func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        let (tokenBucket, position) = try contents(of: token)
        guard NameBytes.sameBytes(tokenBucket, bucket), NameBytes.sameBytes(position.prefix, prefix) else {
            throw .malformedPageToken
        }
        return position
    }

    public func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        guard token.hasPrefix(mark), let data = Data(base64Encoded: String(token.dropFirst(mark.count))) else {
            throw .malformedPageToken
        }
        let fields = Array(data).split(separator: 0, maxSplits: 3, omittingEmptySubsequences: false)
        guard fields.count == 4, let kindByte = UInt8(String(decoding: fields[1], as: UTF8.self)),
            let kind = ListPosition.EntryKind(rawValue: kindByte),
            let prefixLength = Int(String(decoding: fields[2], as: UTF8.self)),
            prefixLength >= 0, prefixLength <= fields[3].count,
            let prefix = String(validating: fields[3].prefix(prefixLength), as: UTF8.self),
            let last = String(validating: fields[3].dropFirst(prefixLength), as: UTF8.self)
        else {
            throw .malformedPageToken
        }
        return (
            String(decoding: fields[0], as: UTF8.self),
            ListPosition(prefix: prefix, lastEntryKind: kind, lastEntry: last)
        )
    }
}
