/// A normalised reference into a bucket: the SDK's `fullPath` (spec P1–P3).
///
/// A `StoragePath` never has empty segments or leading/trailing `/`; the empty path is the root.
/// Names that the SDK cannot produce (spec P6) are `ObjectName`s, not paths.
public struct StoragePath: ByteOrderedName, Sendable, CustomStringConvertible {
    /// The whole path without leading or trailing `/` (`""` at the root).
    public let fullPath: String

    public static let root = StoragePath(unchecked: "")

    private init(unchecked fullPath: String) {
        self.fullPath = fullPath
    }

    /// Normalises a path the way the SDK's `child()` does (rule P1): runs of `/` become one `/`,
    /// leading and trailing `/` are dropped. `.` and `..` are kept as literal segments here;
    /// `resolve(_:from:bucket:)` is the navigator that interprets them (rule P2).
    public init(normalizing path: String) {
        self.fullPath = NameBytes.path(of: NameBytes.segments(of: path, omittingEmpty: true))
    }

    /// The segments of the path (none at the root).
    public var segments: [Substring] {
        NameBytes.segments(of: fullPath, omittingEmpty: true)
    }

    public var isRoot: Bool { fullPath.isEmpty }

    /// The last segment, `""` at the root (rule P3).
    public var name: String { NameBytes.lastSegment(of: fullPath) }

    /// The parent reference; the root is its own parent (rule P2).
    public var parent: StoragePath {
        StoragePath(unchecked: NameBytes.beforeLastSlash(of: fullPath) ?? "")
    }

    /// The reference `path` below this one, normalised (rule P1).
    public func child(_ path: String) -> StoragePath {
        let tail = StoragePath(normalizing: path)
        if tail.isRoot { return self }
        if isRoot { return tail }
        return StoragePath(unchecked: fullPath + "/" + tail.fullPath)
    }

    /// The prefix that lists this reference (rule L1): `fullPath + "/"`, or nothing at the root.
    public var listingPrefix: String { isRoot ? "" : fullPath + "/" }

    /// The reference as the SDK prints it (rule P3): `gs://BUCKET/FULLPATH` (`s3://…` on an S3 bucket).
    public func url(bucket: String, scheme: String = "gs") -> String { "\(scheme)://\(bucket)/\(fullPath)" }

    /// This path as an object name, for operations on one object. The root is not an object (rule M8),
    /// and the name must satisfy rule P5.
    public func objectName() throws(StorageError) -> ObjectName {
        if isRoot {
            throw .invalidArgument("The root of the bucket is not an object; name an object below it.")
        }
        return try ObjectName(fullPath)
    }

    public var description: String { fullPath }

    public var utf8Text: String { fullPath }

    /// Resolves what a user typed against the current reference (rules P1, P2, P4).
    ///
    /// - `/x` and `gs://BUCKET/x` are absolute; anything else is relative to `current`.
    /// - `.` is the current reference and `..` its parent; `..` at the root stays at the root.
    /// - `gs://OTHER/…` is `bucket-mismatch`.
    public static func resolve(
        _ input: String, from current: StoragePath, bucket: String, scheme: String = "gs"
    )
        throws(StorageError) -> StoragePath
    {
        var base = current
        var rest = Substring(input)
        let urlStart = scheme + "://"
        if rest.hasPrefix(urlStart) {
            let afterScheme = rest.dropFirst(urlStart.count)
            let bucketPart = Substring(afterScheme.utf8.prefix { $0 != NameBytes.slash })
            if bucketPart.isEmpty {
                throw .invalidArgument("\(urlStart) needs a bucket name: \(urlStart)\(bucket)/PATH.")
            }
            if !bucketPart.utf8.elementsEqual(bucket.utf8) {
                throw .bucketMismatch(provided: String(bucketPart), current: bucket)
            }
            rest = Substring(afterScheme.utf8.dropFirst(bucketPart.utf8.count))
            base = .root
        } else if rest.hasPrefix("/") {
            base = .root
        }
        var segments = base.segments
        for segment in NameBytes.segments(of: rest, omittingEmpty: true) {
            switch segment {
            case ".": continue
            case "..": if !segments.isEmpty { segments.removeLast() }
            default: segments.append(segment)
            }
        }
        return StoragePath(unchecked: NameBytes.path(of: segments))
    }
}

/// The name of one object exactly as stored: 1–1024 bytes of UTF-8 without CR or LF (rule P5).
///
/// Unlike a `StoragePath` it is not normalised, so it can hold names that only other tools write,
/// such as `wrongPrefix//sadItem` or `lonelyItem/` (rule P6).
public struct ObjectName: ByteOrderedName, Sendable, CustomStringConvertible {
    public static let maximumByteCount = 1024

    public let rawValue: String

    public init(_ rawValue: String) throws(StorageError) {
        let byteCount = rawValue.utf8.count
        if byteCount == 0 {
            throw .invalidArgument("Object names must not be empty (rule P5).")
        }
        if byteCount > Self.maximumByteCount {
            throw .invalidArgument(
                "Object name is \(byteCount) bytes long; names are at most \(Self.maximumByteCount) bytes of UTF-8 (rule P5)."
            )
        }
        if rawValue.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            throw .invalidArgument(
                "Object names must not contain a carriage return or line feed (rule P5).")
        }
        self.rawValue = rawValue
    }

    /// A name read back from a bucket, taken as it is: it was valid when it was stored (a listing's or a scan's
    /// names; never what a user typed).
    public init(stored rawValue: String) {
        self.rawValue = rawValue
    }

    /// Refuses the names Cloud Storage refuses for a new object beyond rule P5 (rule P7): exactly `.` or `..`, and
    /// names under `.well-known/acme-challenge/`. An object another tool stored under such a name can still be
    /// read, listed and deleted; only writing one is refused.
    public func checkNewObjectName() throws(StorageError) {
        if rawValue == "." || rawValue == ".." {
            throw .invalidArgument(
                "An object cannot be named exactly '\(rawValue)' (rule P7): Cloud Storage refuses it.")
        }
        if rawValue.utf8.starts(with: "/.well-known/acme-challenge/".utf8.dropFirst()) {
            throw .invalidArgument(
                "Object names cannot start with '.well-known/acme-challenge/' (rule P7): Cloud Storage keeps them for domain verification."
            )
        }
    }

    /// What is wrong with this stored name by Cloud Storage's rules (rule P7), for `storesh check`: a name it refuses,
    /// or control characters (NUL among them) it advises against; nil for a good name.
    public var ruleNote: String? {
        if (try? checkNewObjectName()) == nil { return "Cloud Storage refuses this name (rule P7)" }
        if rawValue.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            return "holds control characters, which Cloud Storage advises against (rule P7)"
        }
        return nil
    }

    /// The last segment of the name, as the SDK's `name` (rule P3).
    public var lastSegment: String { NameBytes.lastSegment(of: rawValue) }

    public var description: String { rawValue }

    public var utf8Text: String { rawValue }
}
