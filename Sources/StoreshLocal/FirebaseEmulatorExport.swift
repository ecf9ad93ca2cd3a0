import CStoreshFiles
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
        public let md5: String

        /// The object (without content) and its content, read a piece at a time when it is written; the content
        /// must still be what it was when the export was read.
        public func withContentSource() throws(StorageError) -> (ArchivedObject, any ContentSource) {
            let source: FileContentSource
            do {
                source = try FileContentSource(path: blob.path, what: "an object's content", followingLinks: false)
            } catch {
                throw .invalidArgument("\(metadataFile) has no content beside it any more: \(error.message)")
            }
            guard source.md5Base64 == md5 else {
                throw .invalidArgument("\(blob.path) changed while it was imported; nothing was imported.")
            }
            return (object, source)
        }
    }

    // MARK: Reading

    /// Reads the export in `directory` (rule V9). Bad input is an error naming the file and what is wrong in it;
    /// nothing is half-read. Only regular files inside the export are read: a symbolic link, a FIFO or a device
    /// where a file should be, a storage path outside the directory, a file name that is not UTF-8, two files of
    /// one object, or a content larger than `maximumObjectBytes` is refused, never skipped.
    public static func read(directory: String, maximumObjectBytes: Int64? = nil) throws(StorageError) -> Contents {
        let root = URL(fileURLWithPath: directory)
        let hub = try document(
            HubMetadata.self, at: root.appendingPathComponent(metadataFileName), what: "the export's metadata file")
        guard hub.hasStorage else {
            throw .invalidArgument(
                "\(root.appendingPathComponent(metadataFileName).path) has no \"storage\" entry: the export holds no Cloud Storage data."
            )
        }
        let storagePath = hub.storagePath.flatMap { $0.isEmpty ? nil : $0 } ?? storageFolder
        if storagePath.hasPrefix("/") || storagePath.split(separator: "/").contains("..") {
            throw .invalidArgument(
                "\(root.appendingPathComponent(metadataFileName).path): storage.path \"\(storagePath)\" leads outside the export; it must be a folder inside \(directory), such as \"storage_export\"."
            )
        }
        let storageRoot = root.appendingPathComponent(storagePath)
        let bucketsFile = storageRoot.appendingPathComponent("buckets.json")
        guard let buckets = try document(BucketList.self, at: bucketsFile, what: "the export's bucket list").ids else {
            throw .invalidArgument("\(bucketsFile.path) has no \"buckets\" array.")
        }
        // A bucket's name becomes a file's name where it is imported (NAME.bucket beside the served bucket): one the
        // service would refuse (`../../escaped`) is refused here, before any path is made from it.
        for bucket in buckets {
            if let problem = BucketNames.problem(with: bucket) {
                throw .invalidArgument(
                    "\(bucketsFile.path) names the bucket \"\(MessageText.oneLine(bucket))\", which is not a bucket name: \(problem) Nothing was imported."
                )
            }
        }
        var objects: [Entry] = []
        let metadataRoot = storageRoot.appendingPathComponent("metadata")
        let blobsRoot = storageRoot.appendingPathComponent("blobs")
        for relative in try metadataFiles(under: metadataRoot) {
            let file = metadataRoot.appendingPathComponent(relative)
            let blob = blobsRoot.appendingPathComponent(String(relative.dropLast(".json".count)))
            let fields = try document(ObjectFile.self, at: file, what: "an object's metadata")
            try refuseLinkedFolders(on: relative, under: blobsRoot, for: file)
            let (size, md5) = try measure(blob, for: file)
            if let maximumObjectBytes, size > maximumObjectBytes {
                throw .invalidArgument(
                    "\(blob.path) holds \(MessageText.byteCount(size)), more than the largest object this server takes (\(MessageText.byteCount(maximumObjectBytes)), --max-object-size); nothing was imported."
                )
            }
            let (bucket, archived) = try object(fields, contentSize: size, contentMD5: md5, file: file.path)
            if let problem = BucketNames.problem(with: bucket) {
                throw .invalidArgument(
                    "\(file.path) is of the bucket \"\(MessageText.oneLine(bucket))\", which is not a bucket name: \(problem) Nothing was imported."
                )
            }
            objects.append(Entry(bucket: bucket, object: archived, blob: blob, metadataFile: file.path, md5: md5))
        }
        // Name order, as a listing gives them, whatever order the directory gave.
        objects.sort { lhs, rhs in
            !lhs.bucket.utf8.elementsEqual(rhs.bucket.utf8)
                ? lhs.bucket.utf8.lexicographicallyPrecedes(rhs.bucket.utf8) : lhs.object.name < rhs.object.name
        }
        // Two files of one object: which one the export meant cannot be told, so neither is taken.
        for (previous, next) in zip(objects, objects.dropFirst())
        where previous.bucket.utf8.elementsEqual(next.bucket.utf8) && previous.object.name == next.object.name {
            throw .invalidArgument(
                "\(previous.metadataFile) and \(next.metadataFile) are both gs://\(next.bucket)/\(MessageText.oneLine(next.object.name.rawValue)); an export holds each object once. Nothing was imported."
            )
        }
        return Contents(buckets: buckets, objects: objects)
    }

    /// The `.json` files under `metadata/`, at any depth, as paths relative to it (none when it is missing, as the
    /// emulator allows). Every entry is looked at without following links: a link, a FIFO or a device is refused,
    /// and so is a name that is not UTF-8 (it could not be named back), rather than skipped.
    static func metadataFiles(under root: URL) throws(StorageError) -> [String] {
        var status = stat()
        guard lstat(root.path, &status) == 0 else { return [] }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw .invalidArgument(
                "\(root.path) is \(RegularFile.kindName(status.st_mode)), not the export's metadata folder.")
        }
        var files: [String] = []
        var folders = [""]
        while let folder = folders.popLast() {
            let path = folder.isEmpty ? root.path : root.path + "/" + folder
            guard let stream = opendir(path) else {
                throw .invalidArgument("\(path) cannot be read: \(String(cString: strerror(errno))).")
            }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    throw .invalidArgument(
                        "\(path) holds a file whose name is not UTF-8 (\(String(decoding: bytes, as: UTF8.self).debugDescription)); storesh cannot import it by name. Rename it, or remove it from the export."
                    )
                }
                let relative = folder.isEmpty ? name : folder + "/" + name
                guard lstat(root.path + "/" + relative, &status) == 0 else { continue }
                switch status.st_mode & S_IFMT {
                case S_IFDIR: folders.append(relative)
                case S_IFREG: if name.hasSuffix(".json") && name != ".json" { files.append(relative) }
                default:
                    throw .invalidArgument(
                        "\(root.path)/\(relative) is \(RegularFile.kindName(status.st_mode)); an export holds only regular files and folders."
                    )
                }
            }
        }
        return files.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }

    /// Refuses a blob whose folders on the way (`blobs/a/b/X`) are symbolic links, which could lead outside the
    /// export; the blob itself is opened without following a link.
    static func refuseLinkedFolders(on relative: String, under blobsRoot: URL, for file: URL) throws(StorageError) {
        var status = stat()
        var folder = blobsRoot.path
        guard lstat(folder, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw .invalidArgument("\(file.path) has no content beside it: \(folder) is not a folder.")
        }
        for segment in relative.split(separator: "/").dropLast() {
            folder += "/" + segment
            guard lstat(folder, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                throw .invalidArgument(
                    "\(file.path) has no content beside it: \(folder) is not a folder (a link out of the export is not followed)."
                )
            }
        }
    }

    /// One of the export's JSON files, read as `type` reads it (every member it knows, each where it has the type
    /// the emulator writes, others left: the file is the emulator's, and may carry more than storesh reads).
    static func document<Document: Decodable>(
        _ type: Document.Type, at file: URL, what: String
    ) throws(StorageError) -> Document {
        let data: Data
        do {
            data = try RegularFile.read(
                file.path, maximumBytes: RegularFile.maximumDocumentBytes, what: what, followingLinks: false)
        } catch {
            throw .invalidArgument("\(error.message) Is this a Firebase emulator export?")
        }
        guard let document = try? JSONDecoder().decode(Document.self, from: data) else {
            throw .invalidArgument("\(file.path) (\(what)) is not a JSON object.")
        }
        return document
    }

    /// `firebase-export-metadata.json`: each emulator's entry; storesh reads the `storage` one, and its `path`.
    struct HubMetadata: Decodable {
        var hasStorage = false
        var storagePath: String?

        init(from decoder: any Decoder) throws {
            let root = try decoder.container(keyedBy: JSONMemberKey.self)
            guard let storage = try? root.nestedContainer(keyedBy: JSONMemberKey.self, forKey: JSONMemberKey("storage"))
            else { return }
            hasStorage = true
            storagePath = (try? storage.decodeIfPresent(String.self, forKey: JSONMemberKey("path"))) ?? nil
        }
    }

    /// `buckets.json`: `{"buckets": [{"id": NAME}, …]}`; `ids` nil without the array (an entry without an id is
    /// no bucket).
    struct BucketList: Decodable {
        var ids: [String]?

        init(from decoder: any Decoder) throws {
            let root = try decoder.container(keyedBy: JSONMemberKey.self)
            guard var list = try? root.nestedUnkeyedContainer(forKey: JSONMemberKey("buckets")) else { return }
            var ids: [String] = []
            while !list.isAtEnd {
                guard let entry = try? list.nestedContainer(keyedBy: JSONMemberKey.self) else { return }
                if let id = (try? entry.decodeIfPresent(String.self, forKey: JSONMemberKey("id"))) ?? nil {
                    ids.append(id)
                }
            }
            self.ids = ids
        }
    }

    /// An object's metadata file, as the emulator writes it: each member storesh reads where it has the type it
    /// should (numbers as numbers or as strings of digits); a custom metadata value that is not a string is named.
    struct ObjectFile: Decodable {
        var name: String?
        var bucket: String?
        var size: Int64?
        var generation: Int64?
        var metageneration: Int64?
        var md5Hash: String?
        var properties: [WritableProperty: String] = [:]
        var customMetadata: CustomMetadata?
        /// The first custom metadata key whose value is not a string.
        var customMetadataNotText: String?
        var downloadTokens: [String]?
        var timeCreated: String?
        var updated: String?
        var storageClass: String?

        init(from decoder: any Decoder) throws {
            let root = try decoder.container(keyedBy: JSONMemberKey.self)
            func text(_ key: String) -> String? {
                (try? root.decodeIfPresent(String.self, forKey: JSONMemberKey(key))) ?? nil
            }
            func number(_ key: String) -> Int64? {
                let member = JSONMemberKey(key)
                if let whole = (try? root.decodeIfPresent(Int64.self, forKey: member)) ?? nil { return whole }
                if let digits = text(key) { return Int64(digits) }
                return ((try? root.decodeIfPresent(Double.self, forKey: member)) ?? nil).flatMap { Int64(exactly: $0) }
            }
            (name, bucket, md5Hash, timeCreated, updated) = (
                text("name"), text("bucket"), text("md5Hash"), text("timeCreated"), text("updated")
            )
            storageClass = text("storageClass")
            (size, generation, metageneration) = (number("size"), number("generation"), number("metageneration"))
            for property in WritableProperty.allCases {
                if let value = text(property.rawValue) { properties[property] = value }
            }
            if let custom = try? root.nestedContainer(
                keyedBy: JSONMemberKey.self, forKey: JSONMemberKey("customMetadata"))
            {
                var metadata: [(String, String)] = []
                for key in custom.allKeys {
                    guard let value = try? custom.decode(String.self, forKey: key) else {
                        customMetadataNotText = customMetadataNotText ?? key.stringValue
                        continue
                    }
                    metadata.append((key.stringValue, value))
                }
                customMetadata = CustomMetadata(metadata)
            }
            downloadTokens = (try? root.decodeIfPresent([String].self, forKey: JSONMemberKey("downloadTokens"))) ?? nil
        }
    }

    /// The size and MD5 of a content file, read a piece at a time.
    static func measure(_ blob: URL, for file: URL) throws(StorageError) -> (size: Int64, md5: String) {
        do {
            let content = try FileContentSource(path: blob.path, what: "an object's content", followingLinks: false)
            return (content.size, content.md5Base64)
        } catch {
            throw .invalidArgument("\(file.path) has no content beside it: \(error.message)")
        }
    }

    /// One object of the export, checked against its content's size and MD5: a size or MD5 that does not match is
    /// refused rather than imported wrong (the emulator would pad or cut the content to the size). The object comes
    /// without its content.
    static func object(
        _ fields: ObjectFile, contentSize: Int64, contentMD5: String, file: String
    ) throws(StorageError)
        -> (bucket: String, object: ArchivedObject)
    {
        guard let name = fields.name, let bucket = fields.bucket else {
            throw .invalidArgument("\(file): an object needs \"name\" and \"bucket\".")
        }
        let objectName: ObjectName
        do {
            objectName = try ObjectName(name)
        } catch {
            throw .invalidArgument("\(file): \(error.message)")
        }
        if let size = fields.size, size != contentSize {
            throw .invalidArgument("\(file): size is \(size) but the content beside it has \(contentSize) bytes.")
        }
        if let md5 = fields.md5Hash, md5 != contentMD5 {
            throw .invalidArgument("\(file): md5Hash \(md5) is not the MD5 of the content beside it (\(contentMD5)).")
        }
        var archived = ArchivedObject(name: objectName, content: Data())
        archived.properties = fields.properties
        // What the emulator reports for an object imported without one (storesh would guess from the name).
        if archived.properties[.contentType] == nil { archived.properties[.contentType] = "application/octet-stream" }
        if let key = fields.customMetadataNotText {
            throw .invalidArgument("\(file): customMetadata.\(key) must be a string.")
        }
        archived.customMetadata = fields.customMetadata ?? [:]
        // Tokens are an array in the file; the bucket keeps them as the SDKs' comma-separated custom key (G7).
        var tokens = fields.downloadTokens ?? []
        if let listed = archived.customMetadata[ObjectMetadata.downloadTokensKey] {
            tokens += listed.split(separator: ",").map(String.init).filter { !tokens.contains($0) }
        }
        archived.customMetadata[ObjectMetadata.downloadTokensKey] = tokens.isEmpty ? nil : tokens.joined(separator: ",")
        // The class the emulator keeps (STANDARD, the default, is no class of the object's own).
        if let storageClass = fields.storageClass, storageClass != CloudStorageFields.defaultStorageClass {
            archived.cloudStorage.storageClass = storageClass
        }
        archived.generation = fields.generation.flatMap { $0 > 0 ? $0 : nil }
        archived.metageneration = fields.metageneration.flatMap { $0 > 0 ? $0 : nil }
        func time(_ text: String?, _ key: String) throws(StorageError) -> Timestamp? {
            guard let text else { return nil }
            guard let time = Timestamp(rfc3339: text) else {
                throw .invalidArgument("\(file): \(key) '\(text)' is not an RFC 3339 time.")
            }
            return time
        }
        archived.timeCreated = try time(fields.timeCreated, "timeCreated")
        archived.updated = try time(fields.updated, "updated")
        return (bucket, archived)
    }

    // MARK: Writing

    /// The folder of `directory` an export by storesh writes, and the only one it replaces.
    public static let storageFolder = "storage_export"

    /// Writes `bucket` as the Cloud Storage part of an export in `directory` (rule V9): `storage_export/` and the
    /// `storage` entry of `firebase-export-metadata.json`, nothing else. The directory is shared with the other
    /// emulators' exports (`auth_export/`, `firestore_export/`, …) and may hold anything else, the bucket file
    /// among them: all of it is left as it is. The new `storage_export/` is made beside the old one and renamed into
    /// place, so a failure leaves the previous export; other buckets' objects in the previous one are carried over.
    @discardableResult
    public static func write(
        _ bucket: LocalBucket, to directory: String, counting: (any WorkCounter)? = nil
    ) throws -> LeftOut {
        try write([bucket], to: directory, counting: counting)
    }

    /// What an export in the emulator's layout has no place for, and so did not carry (the emulator keeps neither
    /// Cloud Storage's own fields nor generations other than the live one, nor bucket settings).
    public struct LeftOut: Sendable, Equatable {
        /// Objects with a hold, a retention, a custom time, contexts, a component count or an access control list.
        public var objectsWithFields = 0
        public var noncurrent = 0
        public var softDeleted = 0
        /// Buckets with settings of their own (versioning, soft delete, retention…).
        public var bucketsWithSettings = 0

        public init() {}

        public var isEmpty: Bool { self == LeftOut() }

        /// "left out, as the Firebase emulator's export has no place for them: …; storesh export (json) keeps them";
        /// nil when nothing was.
        public var described: String? {
            var parts: [String] = []
            if objectsWithFields > 0 {
                parts.append(
                    "Cloud Storage's own fields (holds, retention, custom time, contexts) of \(MessageText.counted(objectsWithFields, "object"))"
                )
            }
            if noncurrent > 0 { parts.append(MessageText.counted(noncurrent, "noncurrent generation")) }
            if softDeleted > 0 { parts.append(MessageText.counted(softDeleted, "soft-deleted generation")) }
            if bucketsWithSettings > 0 {
                parts.append(bucketsWithSettings == 1 ? "the bucket's settings" : "the buckets' settings")
            }
            guard !parts.isEmpty else { return nil }
            return
                "left out, as the Firebase emulator's export has no place for them: \(MessageText.listed(parts)) (storesh export, as JSON, keeps them)"
        }
    }

    /// What `write(files:to:options:counting:)` exported and left.
    public struct ExportedFiles: Sendable {
        /// The buckets exported, the first first.
        public var buckets: [String] = []
        public var objects = 0
        public var leftOut = LeftOut()
        /// The files not exported, each with why: not a bucket file this process can trust.
        public var skipped: [String] = []
    }

    /// Writes the bucket files a server served (`files`: each bucket's name and file, the first the server's own) as
    /// one export, once the server has closed them: each file opened again as it now is. The first must export; any
    /// other file that is not a bucket file to trust (gone, a link, not a regular file, not readable as a bucket)
    /// is left out and named, never followed, and one that holds another bucket than its name says is not one the
    /// server served; the clients' acknowledged writes to the others are exported all the same.
    public static func write(
        files: [(name: String, path: String)], to directory: String, options: LocalBucketOptions,
        counting: (any WorkCounter)? = nil
    ) throws -> ExportedFiles {
        var opened: [LocalBucket] = []
        defer { for bucket in opened { bucket.close() } }
        var exported = ExportedFiles()
        var options = options
        options.createIfMissing = false
        for (index, (name, file)) in files.enumerated() {
            var status = stat()
            if index > 0, lstat(file, &status) != 0 || (status.st_mode & S_IFMT) != S_IFREG {
                exported.skipped.append("\(file) (\(lstat(file, &status) != 0 ? "gone" : "not a regular file"))")
                continue
            }
            let opening = Result { () throws(StorageError) -> LocalBucket in
                try LocalBucket.open(at: file, options: options)
            }
            if case .failure(let error) = opening, index > 0 {
                exported.skipped.append("\(file) (\(error.message))")
                continue
            }
            let bucket = try opening.get()
            guard bucket.name == name else {
                bucket.close()
                continue
            }
            opened.append(bucket)
        }
        exported.leftOut = try write(opened, to: directory, counting: counting)
        exported.objects = try opened.reduce(0) { try $0 + $1.objectCount() }
        exported.buckets = opened.map(\.name)
        return exported
    }

    /// Writes `buckets` (one server's, rule V6) as one export, as `write(_:to:)` writes one: the previous export's
    /// objects of other buckets are carried over.
    @discardableResult
    public static func write(
        _ buckets: [LocalBucket], to directory: String, counting: (any WorkCounter)? = nil
    ) throws -> LeftOut {
        let fileManager = FileManager.default
        let root = URL(fileURLWithPath: directory).standardizedFileURL
        var status = stat()
        if lstat(root.path, &status) == 0 {
            if (status.st_mode & S_IFMT) == S_IFLNK, stat(root.path, &status) != 0 {
                throw StorageError.invalidArgument(
                    "\(directory) is a symbolic link to nothing; an export is written into a directory.")
            }
            guard (status.st_mode & S_IFMT) == S_IFDIR else {
                throw StorageError.invalidArgument(
                    "\(directory) is a file, not a directory; an export is a directory (firebase-export-metadata.json and storage_export/): give another path."
                )
            }
        } else {
            try fileManager.createDirectory(at: root, withIntermediateDirectories: true)
        }
        let target = root.appendingPathComponent(storageFolder)
        for bucket in buckets where isInside(bucket.path, folder: target.path) {
            throw StorageError.invalidArgument(
                "The bucket file \(bucket.path) is inside \(target.path), which an export replaces; move the bucket file elsewhere first."
            )
        }
        // Checked before anything is written: a hub file storesh cannot read is not rewritten.
        let hubFile = root.appendingPathComponent(metadataFileName)
        let hub = try mergedHub(at: hubFile)
        removeStaleStaging(in: root)
        let unique = "\(getpid())-\(UUID().uuidString)"
        let staging = root.appendingPathComponent(".\(storageFolder).storesh-\(unique)")
        let hubStaging = root.appendingPathComponent(".\(metadataFileName).storesh-\(unique)")
        let retired = root.appendingPathComponent(".\(storageFolder).storesh-old-\(unique)")
        defer {
            try? fileManager.removeItem(at: staging)
            unlink(hubStaging.path)
        }
        try fileManager.createDirectory(at: staging.appendingPathComponent("blobs"), withIntermediateDirectories: true)
        try fileManager.createDirectory(
            at: staging.appendingPathComponent("metadata"), withIntermediateDirectories: true)
        let names = buckets.map(\.name)
        let others = try carryOverOtherBuckets(from: target, into: staging, except: Set(names))
        let bucketIDs = names + others.filter { !names.contains($0) }
        let bucketList = JSONValue.object([("buckets", .array(bucketIDs.map { .object([("id", .string($0))]) }))])
        try writeDurably(Data(bucketList.indented.utf8), to: staging.appendingPathComponent("buckets.json"))
        counting?.begin("exporting", total: buckets.reduce(0) { $0 + ((try? $1.objectCount()) ?? 0) })
        defer { counting?.end() }
        var leftOut = LeftOut()
        for bucket in buckets {
            let kept = try bucket.keptGenerationCounts()
            (leftOut.noncurrent, leftOut.softDeleted) = (
                leftOut.noncurrent + kept.noncurrent, leftOut.softDeleted + kept.softDeleted
            )
            if let settings = try bucket.storedSettings(), !settings.areANewBucketsSettings {
                leftOut.bucketsWithSettings += 1
            }
            // Each object's content a piece at a time, its CRC32C taken as it passes: an object as large as a bucket
            // file holds is never in memory whole (a 999 MB one once took 1.98 GB).
            try bucket.forEachObject { metadata, pieces in
                var fields = metadata.cloudStorage
                (fields.storageClass, fields.timeStorageClassUpdated) = (nil, nil)
                if !fields.isEmpty { leftOut.objectsWithFields += 1 }
                let file = UUID().uuidString.lowercased()
                var crc = CRC32C()
                let blob = try DurableFile(creating: staging.appendingPathComponent("blobs/\(file)"))
                defer { blob.close() }
                try pieces { piece in
                    crc.update(piece)
                    try blob.write(piece)
                }
                try blob.synchronize()
                try writeDurably(
                    Data(document(for: metadata, crc32c: crc.value).indented.utf8),
                    to: staging.appendingPathComponent("metadata/\(file).json"))
                counting?.advance()
            }
        }
        try writeDurably(Data(hub.utf8), to: hubStaging)
        // The swap: the new export and the old one exchange names in one step (renameat2), so that at no moment is
        // there no storage_export/ (a kill between two renames once left none); the old one then goes. Where the
        // file system cannot exchange, the old export steps aside first and is put back if the second rename fails.
        let hadPrevious = lstat(target.path, &status) == 0
        if hadPrevious && storesh_rename_exchange(staging.path, target.path) == 0 {
            try? fileManager.removeItem(at: staging)
        } else {
            if hadPrevious {
                guard rename(target.path, retired.path) == 0 else {
                    throw StorageError.internalError(
                        "Cannot replace \(target.path): \(String(cString: strerror(errno))).")
                }
            }
            guard rename(staging.path, target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                if hadPrevious { rename(retired.path, target.path) }
                throw StorageError.internalError("Cannot write \(target.path): \(reason).")
            }
            if hadPrevious {
                try? fileManager.removeItem(at: retired)
            }
        }
        guard rename(hubStaging.path, hubFile.path) == 0 else {
            throw StorageError.internalError("Cannot write \(hubFile.path): \(String(cString: strerror(errno))).")
        }
        BucketFileLog.synchronizeDirectory(of: hubFile.path)
        return leftOut
    }

    /// Removes what an export that was killed left in `root`: its staging and retired folders and its metadata
    /// file's staging copy (`.storage_export.storesh-PID-UUID`, `.storage_export.storesh-old-PID-UUID`,
    /// `.firebase-export-metadata.json.storesh-PID-UUID`), when that process is gone. Nothing else is touched.
    static func removeStaleStaging(in root: URL) {
        BucketFileLog.removeLeftovers(in: root.path, folders: true) { name in
            name.wholeMatch(
                of:
                    #/\.(?:storage_export|firebase-export-metadata\.json)\.storesh-(?:old-)?(\d{1,10})-[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}/#
            )
            .flatMap { Int32($0.1) }
        }
    }

    /// Whether `path` is `folder` or lies under it, by their real paths (a symbolic link on the way counts).
    static func isInside(_ path: String, folder: String) -> Bool {
        guard let real = realpath(path, nil) else { return false }
        defer { free(real) }
        guard let realFolder = realpath(folder, nil) else { return false }
        defer { free(realFolder) }
        let file = String(cString: real)
        let directory = String(cString: realFolder)
        return file == directory || file.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/")
    }

    /// `data` in a new file at `url`, on disk before the export is renamed into place.
    static func writeDurably(_ data: Data, to url: URL) throws {
        let file = try DurableFile(creating: url)
        defer { file.close() }
        try file.write(data)
        try file.synchronize()
    }

    /// The export's metadata file with its `storage` entry set to storesh's export, every other entry (the other
    /// emulators') kept as its text was; a new one when there is none. A file that is not a JSON object is
    /// refused, not replaced.
    static func mergedHub(at file: URL) throws(StorageError) -> String {
        var status = stat()
        let storage =
            "{\n    \"version\": \(JSONValue.quoted(toolsVersion)),\n    \"path\": \(JSONValue.quoted(storageFolder))\n  }"
        guard lstat(file.path, &status) == 0 else {
            return "{\n  \"version\": \(JSONValue.quoted(toolsVersion)),\n  \"storage\": \(storage)\n}"
        }
        // Only over a regular file storesh can read: a link, a FIFO or a device there is refused, not replaced.
        let data = try RegularFile.read(
            file.path, maximumBytes: RegularFile.maximumDocumentBytes, what: "the export's metadata file",
            followingLinks: false)
        guard let text = String(data: data, encoding: .utf8), let members = JSONMembers(text) else {
            throw .invalidArgument(
                "\(file.path) is not a JSON object; storesh will not replace it. Move it away, or export into another directory."
            )
        }
        var output = "{"
        var wroteStorage = false
        var first = true
        func append(_ key: String, _ value: String) {
            output += (first ? "\n  " : ",\n  ") + JSONValue.quoted(key) + ": " + value
            first = false
        }
        if !members.contains(where: { $0.key == "version" }) { append("version", JSONValue.quoted(toolsVersion)) }
        for member in members {
            if member.key == "storage" {
                if !wroteStorage { append("storage", storage) }
                wroteStorage = true
            } else {
                append(member.key, member.rawValue)
            }
        }
        if !wroteStorage { append("storage", storage) }
        return output + "\n}"
    }

    /// Links (or copies) into `staging` the objects of the previous export at `previous` that belong to other
    /// buckets than those `written` (bucket names are ASCII), so that an export of some buckets loses no other's; returns the previous
    /// export's bucket list. A previous export whose files cannot be read is refused, not dropped.
    static func carryOverOtherBuckets(
        from previous: URL, into staging: URL, except written: Set<String>
    ) throws -> [String] {
        var status = stat()
        guard stat(previous.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else { return [] }
        var buckets: [String] = []
        let bucketsFile = previous.appendingPathComponent("buckets.json")
        if lstat(bucketsFile.path, &status) == 0 {
            buckets =
                try document(BucketList.self, at: bucketsFile, what: "the previous export's bucket list").ids ?? []
        }
        let metadataRoot = previous.appendingPathComponent("metadata")
        for relative in try metadataFiles(under: metadataRoot) {
            let file = metadataRoot.appendingPathComponent(relative)
            let fields = try document(ObjectFile.self, at: file, what: "an object's metadata in the previous export")
            guard let owner = fields.bucket else {
                throw StorageError.invalidArgument(
                    "\(file.path) names no bucket; storesh cannot tell whether the new export replaces it. Move \(previous.path) away first."
                )
            }
            guard !written.contains(owner) else { continue }
            if !buckets.contains(owner) { buckets.append(owner) }
            let blob = String(relative.dropLast(".json".count))
            for (source, destination) in [
                (file, staging.appendingPathComponent("metadata").appendingPathComponent(relative)),
                (
                    previous.appendingPathComponent("blobs").appendingPathComponent(blob),
                    staging.appendingPathComponent("blobs").appendingPathComponent(blob)
                ),
            ] {
                try FileManager.default.createDirectory(
                    at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
                guard lstat(source.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
                    throw StorageError.invalidArgument(
                        "\(source.path), of gs://\(owner) in the previous export, is not a regular file; move \(previous.path) away first."
                    )
                }
                if link(source.path, destination.path) != 0 {
                    try FileManager.default.copyItem(at: source, to: destination)
                }
            }
        }
        return buckets
    }

    /// An object's metadata file, with the emulator's keys in its order.
    /// An object's metadata file, as the emulator writes it; `crc32c` is its content's (as the file beside says).
    static func document(for metadata: ObjectMetadata, crc32c: UInt32) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(metadata.fullPath)),
            ("bucket", .string(metadata.bucket)),
            ("metageneration", .integer(metadata.metageneration)),
            ("generation", .integer(metadata.generation)),
            ("contentType", .string(metadata.contentType ?? "application/octet-stream")),
            ("storageClass", .string(metadata.cloudStorage.storageClass ?? CloudStorageFields.defaultStorageClass)),
        ]
        for property in [WritableProperty.contentDisposition, .cacheControl, .contentLanguage, .contentEncoding] {
            if let value = metadata[property] { members.append((property.rawValue, .string(value))) }
        }
        let tokens = (metadata.customMetadata[ObjectMetadata.downloadTokensKey] ?? "").split(separator: ",").map {
            JSONValue.string(String($0))
        }
        members.append(("downloadTokens", .array(tokens)))
        // The same etag storesh serve's answers give.
        members.append(("etag", .string(ObjectResource.etag(metadata))))
        var custom = metadata.customMetadata
        custom[ObjectMetadata.downloadTokensKey] = nil
        if !custom.isEmpty {
            members.append(("customMetadata", .object(custom.sortedByKeyBytes.map { ($0.key, .string($0.value)) })))
        }
        members += [
            ("timeCreated", .string(metadata.timeCreated.rfc3339)),
            ("updated", .string(metadata.updated.rfc3339)),
            ("size", .integer(metadata.size)),
            ("md5Hash", .string(metadata.md5Hash)),
            ("crc32c", .string(String(crc32c))),
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

/// A new file of an export, written a piece at a time and forced to the disk before the export is renamed into
/// place.
private final class DurableFile {
    private let descriptor: Int32
    private let path: String

    init(creating url: URL) throws {
        path = url.path
        descriptor = Foundation.open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.failure(path) }
    }

    func write(_ data: Data) throws {
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) throws in
            var written = 0
            while written < bytes.count {
                let count = Foundation.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw Self.failure(path) }
                written += count
            }
        }
    }

    func synchronize() throws {
        guard fsync(descriptor) == 0 else { throw Self.failure(path) }
    }

    func close() { Foundation.close(descriptor) }

    private static func failure(_ path: String) -> StorageError {
        .internalError("Cannot write \(path): \(String(cString: strerror(errno))).")
    }
}
