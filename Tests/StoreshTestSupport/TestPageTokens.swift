import Foundation
import StoreshCore

/// Page tokens for in-memory test buckets and listings: the position, readable (a backend's own format is tested
/// with that backend).
public struct TestPageTokens: PageTokenFormat {
    public init() {}

    public func token(for position: ListPosition, bucket: String) -> String {
        "\(bucket)|\(position.prefix)|\(position.lastEntryKind.rawValue)|\(position.lastEntry)"
    }

    public func position(decoding token: String, bucket: String, prefix: String) throws(StorageError) -> ListPosition {
        let fields = token.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 4, fields[0] == bucket, fields[1] == prefix, let kindByte = UInt8(fields[2]),
            let kind = ListPosition.EntryKind(rawValue: kindByte)
        else { throw .malformedPageToken }
        return ListPosition(prefix: prefix, lastEntryKind: kind, lastEntry: fields[3])
    }

    public func contents(of token: String) throws(StorageError) -> (bucket: String, position: ListPosition) {
        let fields = token.split(separator: "|", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 4 else { throw .malformedPageToken }
        return (fields[0], try position(decoding: token, bucket: fields[0], prefix: fields[1]))
    }
}
