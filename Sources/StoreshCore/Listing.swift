/// Options of one list call (rules L6, L10).
public struct ListOptions: Sendable, Equatable {
    public static let maximumResults = 1000

    /// 1…1000; `nil` means a page of up to 1000 entries.
    public var maxResults: Int?
    public var pageToken: String?
    /// Start at the first name at or after this one (Cloud Storage's `startOffset`; the Firebase SDKs do not
    /// expose it). Completion uses it to read only the page where the typed name would be.
    public var startOffset: String?
    /// Stop before the first name at or after this one (Cloud Storage's `endOffset`).
    public var endOffset: String?
    /// Give each item's metadata with the page (`ls -l`), as the service's list does.
    public var includeMetadata: Bool

    public init(
        maxResults: Int? = nil, pageToken: String? = nil, startOffset: String? = nil, endOffset: String? = nil,
        includeMetadata: Bool = false
    ) {
        self.maxResults = maxResults
        self.pageToken = pageToken
        self.startOffset = startOffset
        self.endOffset = endOffset
        self.includeMetadata = includeMetadata
    }

    /// The page size, or the exact error of rule L6.
    public func validatedMaxResults() throws(StorageError) -> Int {
        guard let maxResults else { return Self.maximumResults }
        guard (1...Self.maximumResults).contains(maxResults) else {
            throw .invalidArgument("Argument 'maxResults' must be between 1 and 1000 inclusive.")
        }
        return maxResults
    }
}

/// One page of a listing (rules L2, L4, L9).
public struct ListPage: Sendable, Equatable {
    /// Full paths of prefixes, without their trailing `/`, in byte order.
    public var prefixes: [String]
    /// Full names of items, in byte order.
    public var items: [String]
    /// Present exactly when another non-empty page follows.
    public var nextPageToken: String?
    /// Each item's metadata, in the order of `items`, when the listing asked for it.
    public var itemMetadata: [ObjectMetadata]?

    public init(
        prefixes: [String] = [], items: [String] = [], nextPageToken: String? = nil,
        itemMetadata: [ObjectMetadata]? = nil
    ) {
        self.prefixes = prefixes
        self.items = items
        self.nextPageToken = nextPageToken
        self.itemMetadata = itemMetadata
    }
}

/// How a listing shows the names it finds (rule V2).
public enum ListingView: Sendable {
    /// As Cloud Storage for Firebase shows them: names that the SDK could not make are hidden (rule L3).
    case firebase
    /// As the Cloud Storage JSON API shows them: every name as it is (rule G6).
    case asStored
}

/// A position in the byte order of object names.
public enum NameBound: Sendable, Equatable {
    case atOrAfter(String)
    case after(String)

    /// Whether every name at or after `name` is also at or after this bound (so `name` is the later start).
    func precedes(_ name: String) -> Bool {
        switch self {
        case .atOrAfter(let start): start.utf8.lexicographicallyPrecedes(name.utf8)
        case .after(let start): start.utf8.lexicographicallyPrecedes(name.utf8)
        }
    }

    /// The smallest name that sorts after every name starting with `prefix`, for a prefix ending in `/`:
    /// the same bytes with the final `/` (0x2F) raised to `0` (0x30).
    public static func successor(ofPrefix prefix: String) -> String {
        precondition(prefix.utf8.last == UInt8(ascii: "/"), "a listing prefix ends with /")
        return NameBytes.prefix(of: prefix, byteCount: prefix.utf8.count - 1) + "0"
    }
}

/// What an engine with a sorted index of names provides, so that it can share the listing algorithm.
public protocol ObjectNameIndex {
    /// The first object name, in byte order, at or after `bound` that starts with `prefix`, or nil.
    func firstName(from bound: NameBound, withPrefix prefix: String) throws -> String?
}

/// Names held in memory as the listing's index (a plan's objects, a test's bucket).
public struct SortedNameIndex: ObjectNameIndex, Sendable {
    /// In byte order.
    public let names: [String]

    public init(_ names: some Sequence<String>) {
        self.names = names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    public func firstName(from bound: NameBound, withPrefix prefix: String) -> String? {
        // Binary search for the first name at or after the bound.
        var low = 0
        var high = names.count
        while low < high {
            let middle = (low + high) / 2
            let before: Bool
            switch bound {
            case .atOrAfter(let start): before = names[middle].utf8.lexicographicallyPrecedes(start.utf8)
            case .after(let start): before = !start.utf8.lexicographicallyPrecedes(names[middle].utf8)
            }
            if before { low = middle + 1 } else { high = middle }
        }
        guard low < names.count, names[low].utf8.starts(with: prefix.utf8) else { return nil }
        return names[low]
    }
}

/// Where a listing resumes (rule L10): strictly after the last entry of the page before.
public struct ListPosition: Sendable, Equatable {
    public enum EntryKind: UInt8, Sendable {
        case item = 0
        case prefix = 1
    }

    /// The listing's prefix (rule L1), e.g. `photos/` or `""` at the root.
    public var prefix: String
    public var lastEntryKind: EntryKind
    /// The last entry returned, as a full name; a prefix keeps its trailing `/`.
    public var lastEntry: String
    /// In a listing of every generation (rule B5), the last item's generation: the listing resumes after it, at
    /// the same name's later generations.
    public var lastGeneration: Int64?

    public init(prefix: String, lastEntryKind: EntryKind, lastEntry: String, lastGeneration: Int64? = nil) {
        self.prefix = prefix
        self.lastEntryKind = lastEntryKind
        self.lastEntry = lastEntry
        self.lastGeneration = lastGeneration
    }

    /// Where the next page starts: after everything under a prefix entry, or strictly after an item.
    public var resumeBound: NameBound {
        switch lastEntryKind {
        case .item: .after(lastEntry)
        case .prefix: .atOrAfter(NameBound.successor(ofPrefix: lastEntry))
        }
    }

    /// Whether a listing of its prefix could have ended a page here (a forged position could not).
    var couldBeIssued: Bool {
        lastEntry.utf8.starts(with: prefix.utf8) && lastEntry.utf8.count > prefix.utf8.count
            && (lastEntryKind == .item || lastEntry.utf8.last == UInt8(ascii: "/"))
    }
}

/// How a bucket writes the positions of its listings into page tokens and reads them back. Each backend has its
/// own format (the local bucket's is `LocalPageTokens`); the listing rules need only the position.
public protocol PageTokenFormat: Sendable {
    func token(for position: ListPosition, bucket: String) -> String
    /// The position a token holds, for a listing of `prefix` in `bucket`; a token of another listing, or one
    /// this format did not issue, is invalid-argument (rule L10).
    func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition
    /// What a token holds, whatever listing it belongs to (`page token`, for a class to see).
    func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition)
}

extension StorageError {
    /// A page token that no listing issued (rule L10).
    public static let malformedPageToken = StorageError.invalidArgument(
        "Invalid page token: it is not a token storesh issued, or it was cut short or mistyped (rule L10).")
}

/// The delimiter listing of Cloud Storage for Firebase over a sorted name index (rules L1–L10).
public enum Lister {
    /// One page of the listing of `reference` in `bucket`.
    ///
    /// Each step seeks the next name; a prefix found is then skipped as a whole, so listing a folder
    /// that collapses to a few prefixes over millions of objects costs one seek per entry returned.
    public static func page(
        of reference: StoragePath, bucket: String, options: ListOptions, index: some ObjectNameIndex,
        tokens: some PageTokenFormat
    ) throws -> ListPage {
        try page(
            prefix: reference.listingPrefix, delimited: true, view: .firebase, bucket: bucket, options: options,
            index: index, tokens: tokens)
    }

    /// One page of a listing of the names that start with `prefix` (any string), collapsed at the next `/` when
    /// `delimited`, shown as `view` says. Prefixes are given without their final `/`, as in every listing.
    public static func page(
        prefix: String, delimited: Bool, view: ListingView, bucket: String, options: ListOptions,
        index: some ObjectNameIndex, tokens: some PageTokenFormat
    ) throws -> ListPage {
        let maxResults = try options.validatedMaxResults()
        guard var bound = try startBound(prefix: prefix, bucket: bucket, options: options, tokens: tokens) else {
            return ListPage()
        }
        var page = ListPage()
        var returned = 0
        var last: (kind: ListPosition.EntryKind, name: String)?
        // Bounded: `bound` strictly increases at each step through a finite set of names.
        while let name = try index.firstName(from: bound, withPrefix: prefix) {
            if let end = options.endOffset, !name.utf8.lexicographicallyPrecedes(end.utf8) { break }
            let entry = delimited ? Self.entry(forName: name, prefixLength: prefix.utf8.count) : (.item, name)
            switch entry.kind {
            case .item: bound = .after(name)
            case .prefix: bound = .atOrAfter(NameBound.successor(ofPrefix: entry.name))
            }
            // rules L3, L8: hidden entries take no slot
            guard view == .asStored || isShown(entry) else { continue }
            if returned == maxResults, let last {
                // Another shown entry exists, so this page is not the last (rule L9).
                page.nextPageToken = tokens.token(
                    for: ListPosition(prefix: prefix, lastEntryKind: last.kind, lastEntry: last.name), bucket: bucket)
                break
            }
            switch entry.kind {
            case .item: page.items.append(entry.name)
            case .prefix: page.prefixes.append(NameBytes.prefix(of: entry.name, byteCount: entry.name.utf8.count - 1))
            }
            returned += 1
            last = entry
        }
        return page
    }

    /// Where a page starts (rule L10): after the page token's position, at `startOffset` when later; nil when every
    /// name with the prefix sorts before `startOffset` (an empty page). A token of another listing is refused.
    public static func startBound(
        prefix: String, bucket: String, options: ListOptions, tokens: some PageTokenFormat
    ) throws
        -> NameBound?
    {
        var bound = NameBound.atOrAfter(prefix)
        if let token = options.pageToken {
            let position = try tokens.position(decoding: token, bucket: bucket, prefix: prefix)
            guard position.prefix.utf8.elementsEqual(prefix.utf8), position.couldBeIssued else {
                throw StorageError.malformedPageToken
            }
            bound = position.resumeBound
        }
        if let start = options.startOffset {
            if start.utf8.starts(with: prefix.utf8) {
                if bound.precedes(start) { bound = .atOrAfter(start) }
            } else if prefix.utf8.lexicographicallyPrecedes(start.utf8) {
                return nil
            }
        }
        return bound
    }

    /// Rule L2: the rest of the name after the prefix either holds a `/`, making it a prefix entry
    /// (up to and including that first `/`), or it is an item.
    public static func entry(forName name: String, prefixLength: Int) -> (kind: ListPosition.EntryKind, name: String) {
        let utf8 = name.utf8
        let restStart = utf8.index(utf8.startIndex, offsetBy: prefixLength)
        if let slash = utf8[restStart...].firstIndex(of: UInt8(ascii: "/")) {
            return (.prefix, NameBytes.prefix(of: name, byteCount: utf8.distance(from: utf8.startIndex, to: slash) + 1))
        }
        return (.item, name)
    }

    /// The validity filter (rule L3), on an entry's full name (a prefix with its trailing `/`).
    public static func isShown(_ entry: (kind: ListPosition.EntryKind, name: String)) -> Bool {
        var name = Substring(entry.name).utf8[...]
        if entry.kind == .prefix { name = name.dropLast() }
        return hasOnlyNonEmptySegments(name)
    }

    /// After removing at most one leading `/`: non-empty, and no segment empty.
    static func hasOnlyNonEmptySegments(_ name: Substring.UTF8View) -> Bool {
        var utf8 = name
        if utf8.first == UInt8(ascii: "/") { utf8 = utf8.dropFirst() }
        guard let first = utf8.first, first != UInt8(ascii: "/"), utf8.last != UInt8(ascii: "/") else {
            return false
        }
        var previousWasSlash = false
        for byte in utf8 {
            let isSlash = byte == UInt8(ascii: "/")
            if isSlash && previousWasSlash { return false }
            previousWasSlash = isSlash
        }
        return true
    }
}
