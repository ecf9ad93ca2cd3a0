import Foundation
import StoreshCore
import StoreshWire

/// The Firebase Storage emulator's export layout, as firebase-tools writes it (`firebase emulators:export DIR`,
/// `--export-on-exit DIR`) and reads it (`--import DIR`), so that a developer's exported data moves between the
/// emulator and storesh both ways:
///
/// ```
/// DIR/firebase-export-metadata.json        {"version": …, "storage": {"version": …, "path": "storage_export"}}
/// DIR/storage_export/buckets.json          {"buckets": [{"id": "BUCKET"}]}
/// DIR/storage_export/blobs/X               an object's content
/// DIR/storage_export/metadata/X.json       its metadata: name, bucket, generations, properties,
///                                          customMetadata, downloadTokens (an array), times, size, md5Hash,
///                                          crc32c (a decimal string), etag
/// ```
/// The emulator pairs `metadata/X.json` with `blobs/X` by path (X is a UUID in its exports; any name, in any
/// subfolder, pairs the same way) and checks no version. JSON is written as it writes it: two-space indents, no
/// newline at the end, and the metadata's keys in its order.
public enum FirebaseEmulatorExport {
    public static let metadataFileName = "firebase-export-metadata.json"
    /// The firebase-tools version an export by storesh names (the emulator's own exports name theirs).
    public static let toolsVersion = "15.28.1"

    /// What an export holds: the buckets it lists, and each object, its content checked but not kept.
    public struct Contents: Sendable {
        public var buckets: [String]
        public var objects: [Entry]
    }

    /// One object of an export: its metadata, and where its content is, read when it is imported (so that an
    /// import holds one object's content at a time, not the export's).
    public struct Entry: Sendable {
        public var bucket: String
        /// The object without its content.
        public var object: ArchivedObject
        let blob: URL
        let metadataFile: String
        /// The MD5 the content had when the export was read.
        let md5: String

        /// The object with its content, which must still be what it was when the export was read.
        public func withContent() throws(StorageError) -> ArchivedObject {
            var loaded = object
            do {
                loaded.content = try Data(contentsOf: blob)
            } catch {
                throw .invalidArgument("\(metadataFile) has no content beside it any more: \(blob.path) cannot be read.")
            }
            guard ContentHash.md5Base64(loaded.content) == md5 else {
                throw .invalidArgument("\(blob.path) changed while it was imported; nothing was imported.")
            }
            return loaded
        }
    }

    // MARK: Reading

    /// Reads the export in `directory`. Bad input is an error naming the file and what is wrong in it; nothing is
    /// half-read.
    public static func read(directory: String) throws(StorageError) -> Contents {
        let root = URL(fileURLWithPath: directory)
        let hub = try document(at: root.appendingPathComponent(metadataFileName), what: "the export's metadata file")
        guard let storage = hub["storage"] as? [String: Any] else {
            throw .invalidArgument("\(root.appendingPathComponent(metadataFileName).path) has no \"storage\" entry: the export holds no Cloud Storage data.")
        }
        let storagePath = (storage["path"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? "storage_export"
        let storageRoot = storagePath.hasPrefix("/") ? URL(fileURLWithPath: storagePath) : root.appendingPathComponent(storagePath)
        let bucketsFile = storageRoot.appendingPathComponent("buckets.json")
        let bucketList = try document(at: bucketsFile, what: "the export's bucket list")
        guard let entries = bucketList["buckets"] as? [[String: Any]] else {
            throw .invalidArgument("\(bucketsFile.path) has no \"buckets\" array.")
        }
        let buckets = entries.compactMap { $0["id"] as? String }
        var objects: [Entry] = []
        let metadataRoot = storageRoot.appendingPathComponent("metadata")
        let blobsRoot = storageRoot.appendingPathComponent("blobs")
        for relative in try metadataFiles(under: metadataRoot) {
            let file = metadataRoot.appendingPathComponent(relative)
            let blob = blobsRoot.appendingPathComponent(String(relative.dropLast(".json".count)))
            let fields = try document(at: file, what: "an object's metadata")
            let (size, md5) = try measure(blob, for: file)
            let (bucket, archived) = try object(fields, contentSize: size, contentMD5: md5, file: file.path)
            objects.append(Entry(bucket: bucket, object: archived, blob: blob, metadataFile: file.path, md5: md5))
        }
        // Name order, as a listing gives them, whatever order the directory gave.
        objects.sort { lhs, rhs in
            lhs.bucket != rhs.bucket
                ? lhs.bucket < rhs.bucket : lhs.object.name.rawValue.utf8.lexicographicallyPrecedes(rhs.object.name.rawValue.utf8)
        }
        return Contents(buckets: buckets, objects: objects)
    }

    /// The `.json` files under `metadata/`, at any depth, as paths relative to it (none when it is missing, as the
    /// emulator allows).
    static func metadataFiles(under root: URL) throws(StorageError) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else { return [] }
        guard let walker = FileManager.default.enumerator(atPath: root.path) else {
            throw .invalidArgument("\(root.path) cannot be read.")
        }
        var files: [String] = []
        while let relative = walker.nextObject() as? String {
            let name = (relative as NSString).lastPathComponent
            guard name.hasSuffix(".json"), name != ".json" else { continue }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.appendingPathComponent(relative).path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(relative)
            }
        }
        return files.sorted()
    }

    static func document(at file: URL, what: String) throws(StorageError) -> [String: Any] {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw .invalidArgument("\(file.path) (\(what)) cannot be read: is this a Firebase emulator export?")
        }
        guard let parsed = try? JSONSerialization.jsonObject(with: data), let object = parsed as? [String: Any] else {
            throw .invalidArgument("\(file.path) (\(what)) is not a JSON object.")
        }
        return object
    }

    /// The size and MD5 of a content file, read a piece at a time.
    static func measure(_ blob: URL, for file: URL) throws(StorageError) -> (size: Int64, md5: String) {
        do {
            let content = try FileContentSource(path: blob.path)
            return (content.size, content.md5Base64)
        } catch {
            throw .invalidArgument("\(file.path) has no content beside it: \(error.message)")
        }
    }

    /// One object of the export, checked against its content's size and MD5: a size or MD5 that does not match is
    /// refused rather than imported wrong (the emulator would pad or cut the content to the size). The object comes
    /// without its content.
    static func object(_ fields: [String: Any], contentSize: Int64, contentMD5: String, file: String) throws(StorageError)
        -> (bucket: String, object: ArchivedObject)
    {
        guard let name = fields["name"] as? String, let bucket = fields["bucket"] as? String else {
            throw .invalidArgument("\(file): an object needs \"name\" and \"bucket\".")
        }
        let objectName: ObjectName
        do {
            objectName = try ObjectName(name)
        } catch {
            throw .invalidArgument("\(file): \(error.message)")
        }
        // Numbers as the emulator writes them, or as strings (an older export, or the JSON API's habit).
        func number(_ key: String) -> Int64? {
            if let value = fields[key] as? NSNumber { return value.int64Value }
            return (fields[key] as? String).flatMap { Int64($0) }
        }
        if let size = number("size"), size != contentSize {
            throw .invalidArgument("\(file): size is \(size) but the content beside it has \(contentSize) bytes.")
        }
        if let md5 = fields["md5Hash"] as? String, md5 != contentMD5 {
            throw .invalidArgument("\(file): md5Hash \(md5) is not the MD5 of the content beside it (\(contentMD5)).")
        }
        var archived = ArchivedObject(name: objectName, content: Data())
        for property in WritableProperty.allCases {
            if let value = fields[property.rawValue] as? String { archived.properties[property] = value }
        }
        // What the emulator reports for an object imported without one (storesh would guess from the name).
        if archived.properties[.contentType] == nil { archived.properties[.contentType] = "application/octet-stream" }
        if let custom = fields["customMetadata"] as? [String: Any] {
            for (key, value) in custom {
                guard let text = value as? String else {
                    throw .invalidArgument("\(file): customMetadata.\(key) must be a string.")
                }
                archived.customMetadata[key] = text
            }
        }
        // Tokens are an array in the file; the bucket keeps them as the SDKs' comma-separated custom key (G7).
        var tokens = (fields["downloadTokens"] as? [String]) ?? []
        if let listed = archived.customMetadata[ObjectMetadata.downloadTokensKey] {
            tokens += listed.split(separator: ",").map(String.init).filter { !tokens.contains($0) }
        }
        archived.customMetadata[ObjectMetadata.downloadTokensKey] = tokens.isEmpty ? nil : tokens.joined(separator: ",")
        archived.generation = number("generation").flatMap { $0 > 0 ? $0 : nil }
        archived.metageneration = number("metageneration").flatMap { $0 > 0 ? $0 : nil }
        func time(_ key: String) throws(StorageError) -> Timestamp? {
            guard let text = fields[key] as? String else { return nil }
            guard let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument("\(file): \(key) '\(text)' is not an RFC 3339 time.")
            }
            return time
        }
        archived.timeCreated = try time("timeCreated")
        archived.updated = try time("updated")
        return (bucket, archived)
    }

    // MARK: Writing

    /// Writes `bucket` as an export in `directory`, which it replaces whole, as the emulator does: the new export is
    /// made beside it and moved into place, so a failure leaves the old one.
    public static func write(_ bucket: LocalBucket, to directory: String) throws {
        let target = URL(fileURLWithPath: directory).standardizedFileURL
        let parent = target.deletingLastPathComponent()
        let fileManager = FileManager.default
        let staging = parent.appendingPathComponent(".\(target.lastPathComponent).storesh-\(UUID().uuidString)")
        let storage = staging.appendingPathComponent("storage_export")
        do {
            try fileManager.createDirectory(at: storage.appendingPathComponent("blobs"), withIntermediateDirectories: true)
            try fileManager.createDirectory(at: storage.appendingPathComponent("metadata"), withIntermediateDirectories: true)
            let hub = JSONValue.object([
                ("version", .string(toolsVersion)),
                ("storage", .object([("version", .string(toolsVersion)), ("path", .string("storage_export"))])),
            ])
            try Data(hub.indented.utf8).write(to: staging.appendingPathComponent(metadataFileName))
            let buckets = JSONValue.object([("buckets", .array([.object([("id", .string(bucket.name))])]))])
            try Data(buckets.indented.utf8).write(to: storage.appendingPathComponent("buckets.json"))
            try bucket.forEachObjectWithContent { metadata, content in
                let file = UUID().uuidString.lowercased()
                try content.write(to: storage.appendingPathComponent("blobs/\(file)"))
                try Data(document(for: metadata, content: content).indented.utf8)
                    .write(to: storage.appendingPathComponent("metadata/\(file).json"))
            }
            if fileManager.fileExists(atPath: target.path) { try fileManager.removeItem(at: target) }
            try fileManager.moveItem(at: staging, to: target)
        } catch {
            try? fileManager.removeItem(at: staging)
            throw error
        }
    }

    /// An object's metadata file, with the emulator's keys in its order.
    static func document(for metadata: ObjectMetadata, content: Data) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(metadata.fullPath)),
            ("bucket", .string(metadata.bucket)),
            ("metageneration", .integer(metadata.metageneration)),
            ("generation", .integer(metadata.generation)),
            ("contentType", .string(metadata.contentType ?? "application/octet-stream")),
            ("storageClass", .string("STANDARD")),
        ]
        for property in [WritableProperty.contentDisposition, .cacheControl, .contentLanguage, .contentEncoding] {
            if let value = metadata[property] { members.append((property.rawValue, .string(value))) }
        }
        let tokens = (metadata.customMetadata[ObjectMetadata.downloadTokensKey] ?? "").split(separator: ",").map { JSONValue.string(String($0)) }
        members.append(("downloadTokens", .array(tokens)))
        // The same etag storesh serve's answers give.
        members.append(("etag", .string(ObjectResource.etag(metadata))))
        var custom = metadata.customMetadata
        custom[ObjectMetadata.downloadTokensKey] = nil
        if !custom.isEmpty { members.append(("customMetadata", .object(custom.sortedByKeyBytes.map { ($0.key, .string($0.value)) }))) }
        var crc = CRC32C()
        crc.update(content)
        members += [
            ("timeCreated", .string(metadata.timeCreated.rfc3339)),
            ("updated", .string(metadata.updated.rfc3339)),
            ("size", .integer(metadata.size)),
            ("md5Hash", .string(metadata.md5Hash)),
            ("crc32c", .string(String(crc.value))),
        ]
        return .object(members)
    }
}

extension JSONValue {
    /// As JavaScript's `JSON.stringify(value, undefined, 2)` writes it: two-space indents, `"key": value`, empty
    /// arrays and objects as `[]` and `{}`, no newline at the end.
    public var indented: String {
        var output = ""
        writeIndented(to: &output, depth: 0)
        return output
    }

    private func writeIndented(to output: inout String, depth: Int) {
        let inner = String(repeating: "  ", count: depth + 1)
        let closing = String(repeating: "  ", count: depth)
        switch self {
        case .array(let items) where !items.isEmpty:
            output += "[\n"
            for (index, item) in items.enumerated() {
                output += inner
                item.writeIndented(to: &output, depth: depth + 1)
                output += index < items.count - 1 ? ",\n" : "\n"
            }
            output += closing + "]"
        case .object(let members) where !members.isEmpty:
            output += "{\n"
            for (index, (key, value)) in members.enumerated() {
                output += inner + JSONValue.quoted(key) + ": "
                value.writeIndented(to: &output, depth: depth + 1)
                output += index < members.count - 1 ? ",\n" : "\n"
            }
            output += closing + "}"
        default:
            write(to: &output)
        }
    }
}
