import Foundation
import StoreshCore

/// Files storesh reads that it did not write (an export's files, a project's firebase.json, a rules file, a plan or
/// a journal): only regular files, opened without waiting (a FIFO with no writer is refused, not waited on), and
/// read up to a stated size, so that `/dev/zero`, a pipe or a huge file is a clear error instead of a hang or
/// memory without end.
public enum RegularFile {
    /// The most storesh reads of a document it did not write and reads whole (an export's JSON files, firebase.json,
    /// a rules file): far above what any holds (a rules file is at most 256 KB, and the rules check says so).
    public static let maximumDocumentBytes = 1 << 20

    /// Whether two paths name one file (its device and inode): a link, or another spelling of the same path.
    public static func isSameFile(_ first: String, _ second: String) -> Bool {
        var a = stat()
        var b = stat()
        guard stat(first, &a) == 0, stat(second, &b) == 0 else { return false }
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino
    }

    /// A descriptor open for reading on `path`, which must be a regular file. With `followingLinks` false a
    /// symbolic link is refused too (an export's file must not lead outside the export).
    public static func open(_ path: String, what: String, followingLinks: Bool = true) throws(StorageError) -> Int32 {
        let descriptor = Foundation.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (followingLinks ? 0 : O_NOFOLLOW))
        guard descriptor >= 0 else {
            if errno == ELOOP && !followingLinks {
                throw .invalidArgument("\(path) (\(what)) is a symbolic link; storesh reads only regular files here.")
            }
            throw .invalidArgument("Cannot read \(path) (\(what)): \(String(cString: strerror(errno))).")
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            let kind = kindName(status.st_mode)
            Foundation.close(descriptor)
            throw .invalidArgument(
                "\(path) (\(what)) is \(kind), not a regular file; storesh reads only regular files here.")
        }
        // Reads from here on may block as any file read does.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    /// The whole of the regular file `path`, refused when it holds more than `maximumBytes`.
    public static func read(
        _ path: String, maximumBytes: Int, what: String, followingLinks: Bool = true
    ) throws(StorageError) -> Data {
        let descriptor = try open(path, what: what, followingLinks: followingLinks)
        defer { Foundation.close(descriptor) }
        var data = Data()
        var piece = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = piece.withUnsafeMutableBytes { Foundation.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw .invalidArgument("Cannot read \(path) (\(what)): \(String(cString: strerror(errno))).")
            }
            if count == 0 { return data }
            guard data.count + count <= maximumBytes else {
                throw .invalidArgument(
                    "\(path) (\(what)) is larger than \(MessageText.byteCount(Int64(maximumBytes))), more than such a file ever holds; storesh will not read it."
                )
            }
            data.append(contentsOf: piece[0..<count])
        }
    }

    static func kindName(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a pipe (FIFO)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "not a regular file"
        }
    }
}

/// The members of a JSON object's text, each value as the text it was written with, in their order: a document
/// storesh rewrites in part (the `storage` entry of an export's metadata file) keeps every other member as it was.
struct JSONMembers: Sequence {
    struct Member {
        var key: String
        var rawValue: String
    }

    private var members: [Member] = []

    /// nil when `text` is not one JSON object.
    init?(_ text: String) {
        guard (try? JSONDecoder().decode(AnyJSONObject.self, from: Data(text.utf8))) != nil else { return nil }
        let bytes = Array(text.utf8)
        var index = 0
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        // The end of the string starting at `index` (a quote), just past its closing quote.
        func skipString() {
            index += 1
            while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
                index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
            }
            index += 1
        }
        // Past one value: a string, an object or array with everything inside, or a number or literal.
        func skipValue() {
            var depth = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    skipString()
                    if depth == 0 { return }
                    continue
                }
                if depth == 0
                    && (byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}")
                        || [0x20, 0x09, 0x0A, 0x0D].contains(byte))
                {
                    return
                }
                if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") { depth += 1 }
                if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                    depth -= 1
                    if depth == 0 {
                        index += 1
                        return
                    }
                }
                index += 1
            }
        }
        skipSpace()
        index += 1  // {
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { break }
            let keyStart = index
            skipString()
            guard
                let key = try? JSONSerialization.jsonObject(
                    with: Data(bytes[keyStart..<index]), options: .fragmentsAllowed) as? String
            else { return nil }
            skipSpace()
            index += 1  // :
            skipSpace()
            let valueStart = index
            skipValue()
            members.append(Member(key: key, rawValue: String(decoding: bytes[valueStart..<index], as: UTF8.self)))
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { break }
            index += 1
        }
    }

    func makeIterator() -> IndexingIterator<[Member]> { members.makeIterator() }
}

/// A JSON object, whatever its members: decoding one checks the text's syntax and that it is an object, and reads
/// nothing.
private struct AnyJSONObject: Decodable {
    init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: JSONMemberKey.self)
    }
}

/// Which file a path named, as it was: its device and inode (an editor may put another file in its place), size, and
/// times of modification and of status change (which no program sets back, as `touch -r` sets the first).
package struct FileIdentity: Equatable, Sendable {
    package var device: UInt64
    package var inode: UInt64
    package var size: Int64
    package var modified: timespec
    package var changed: timespec

    package init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self.init(status)
    }

    package init?(descriptor: Int32) {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        self.init(status)
    }

    private init(_ status: stat) {
        (device, inode, size) = (UInt64(status.st_dev), UInt64(status.st_ino), Int64(status.st_size))
        (modified, changed) = (status.st_mtim, status.st_ctim)
    }

    package static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        (a.device, a.inode, a.size) == (b.device, b.inode, b.size)
            && (a.modified.tv_sec, a.modified.tv_nsec) == (b.modified.tv_sec, b.modified.tv_nsec)
            && (a.changed.tv_sec, a.changed.tv_nsec) == (b.changed.tv_sec, b.changed.tv_nsec)
    }
}
