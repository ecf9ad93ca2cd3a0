/// A named, read-only state of a whole bucket, kept until it is removed.
public struct SnapshotInfo: Sendable, Equatable {
    public var name: String
    /// When it was taken (the bucket's clock).
    public var created: Timestamp
    /// How many objects the bucket held then.
    public var objectCount: Int

    public init(name: String, created: Timestamp, objectCount: Int) {
        self.name = name
        self.created = created
        self.objectCount = objectCount
    }

    /// Names a user can type without quotes and read in a list: letters, digits, `.`, `_`, `-`, starting
    /// with a letter or digit, at most 100 bytes.
    public static func validate(name: String) throws(StorageError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard let first = name.utf8.first, allowed, name.utf8.count <= 100,
            first != UInt8(ascii: "."), first != UInt8(ascii: "_"), first != UInt8(ascii: "-")
        else {
            throw .invalidArgument(
                "\(MessageText.oneLine(name).debugDescription) is not a snapshot name: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit."
            )
        }
    }
}

extension SnapshotInfo {
    /// A save under the name of an existing snapshot.
    public static func nameTaken(_ existing: SnapshotInfo) -> StorageError {
        .invalidArgument(
            "A snapshot named \(existing.name) already exists (taken \(existing.created.rfc3339)); choose another name, or `snapshot rm \(existing.name)` first."
        )
    }
}

/// One side of a comparison: a snapshot, or the bucket as it is now.
public enum BucketState: Sendable, Equatable {
    case snapshot(String)
    case current
}

/// How one object differs between two states of a bucket.
public struct ObjectChange: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case added, removed, changed
    }

    public var kind: Kind
    /// The object's name (full path).
    public var name: String
    /// The object as it is in the newer state (`added`, `changed`) or was in the older one (`removed`).
    public var metadata: ObjectMetadata
    /// For `changed`: each property old → new, as in a dry-run plan. Content is shown by `generation`, `size`
    /// and `md5Hash`, then the writable properties and custom keys.
    public var differences: [PropertyDifference]

    public init(kind: Kind, name: String, metadata: ObjectMetadata, differences: [PropertyDifference] = []) {
        self.kind = kind
        self.name = name
        self.metadata = metadata
        self.differences = differences
    }

    /// The change from `old` to `new` (either may be absent), or nil when they are the same object.
    public static func between(_ old: ObjectMetadata?, _ new: ObjectMetadata?) -> ObjectChange? {
        switch (old, new) {
        case (nil, nil):
            return nil
        case (nil, let new?):
            return ObjectChange(kind: .added, name: new.fullPath, metadata: new)
        case (let old?, nil):
            return ObjectChange(kind: .removed, name: old.fullPath, metadata: old)
        case (let old?, let new?):
            var differences: [PropertyDifference] = []
            if old.generation != new.generation {
                differences.append(
                    PropertyDifference(key: "generation", old: String(old.generation), new: String(new.generation)))
            }
            if old.size != new.size {
                differences.append(PropertyDifference(key: "size", old: String(old.size), new: String(new.size)))
            }
            if old.md5Hash != new.md5Hash {
                differences.append(PropertyDifference(key: "md5Hash", old: old.md5Hash, new: new.md5Hash))
            }
            differences += old.differences(to: new)
            return differences.isEmpty
                ? nil : ObjectChange(kind: .changed, name: new.fullPath, metadata: new, differences: differences)
        }
    }
}

/// Named snapshots of a bucket (local buckets keep them inside the bucket file).
///
/// Snapshots are bucket administration, like loading rules: security rules do not apply to them.
public protocol SnapshotStore {
    /// Saves the bucket's current state (in a transaction: the state it sees) under a new name.
    func saveSnapshot(named name: String) async throws -> SnapshotInfo
    /// Every snapshot, oldest first.
    func snapshots() async throws -> [SnapshotInfo]
    /// Each object that differs from `old` to `new`, in name byte order, told to `body` as it is found (memory
    /// holds no more than a page of them, however many there are).
    func changes(from old: BucketState, to new: BucketState, each body: (ObjectChange) throws -> Void) async throws
    /// Makes the bucket as it was in the snapshot (rule N2): each object that differs from it, as `changes` from
    /// now to the snapshot reports, gets the snapshot's version back exactly (content, metadata, generation,
    /// metageneration, times), or goes when the snapshot had none; `body` is told each change as it is made.
    /// The snapshot itself is kept.
    func restoreSnapshot(named name: String, each body: (ObjectChange) throws -> Void) async throws
    /// Forgets a snapshot, and the object versions that only it kept.
    func removeSnapshot(named name: String) async throws -> SnapshotInfo
    /// How many objects the bucket holds now (what a snapshot taken now would count).
    func objectCount() async throws -> Int
}

extension SnapshotStore {
    /// Every object that differs from `old` to `new`, gathered: for a plan, which holds them anyway, and tests.
    public func changes(from old: BucketState, to new: BucketState) async throws -> [ObjectChange] {
        var all: [ObjectChange] = []
        try await changes(from: old, to: new) { all.append($0) }
        return all
    }
}
