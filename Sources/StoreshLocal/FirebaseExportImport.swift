import Foundation
import StoreshCore

/// Which of an emulator export's objects go into a local bucket (it holds one bucket; an export may list several),
/// and putting them there: `storesh import` of an export, and `storesh serve --import`.
package enum FirebaseExportImport {
    /// The objects of the export's bucket named as the local one; or, when there is no such bucket and the export
    /// holds one bucket's objects only, those (the emulator's default bucket, imported under the local name).
    package static func objects(
        of contents: FirebaseEmulatorExport.Contents, for bucket: String, directory: String
    ) throws
        -> (objects: [FirebaseEmulatorExport.Entry], from: String)
    {
        let named = Set(contents.objects.map(\.bucket))
        if named.contains(bucket) || named.isEmpty { return (contents.objects.filter { $0.bucket == bucket }, bucket) }
        if named.count == 1, let only = named.first { return (contents.objects, only) }
        throw UsageError(
            "\(directory) holds objects of \(named.sorted().map { "gs://\($0)" }.joined(separator: ", ")), none of gs://\(bucket): import it into a bucket named as one of them (storesh import --bucket NEW.bucket … names a new bucket after none, so give serve --name)."
        )
    }

    /// Imports the export's objects in one transaction, reading each one's content in its turn.
    package static func load(
        _ objects: [FirebaseEmulatorExport.Entry], into bucket: LocalBucket, replacingEverything: Bool,
        counting: (any WorkCounter)? = nil
    ) throws {
        try bucket.importObjects(count: objects.count, replacingEverything: replacingEverything, counting: counting) {
            index throws(StorageError) in
            try objects[index].withContentSource()
        }
    }

    /// The bucket an export is of, when it is of one: the one its objects name, else the one it lists.
    package static func bucketName(of contents: FirebaseEmulatorExport.Contents) -> String? {
        let named = Set(contents.objects.map(\.bucket))
        return named.count == 1
            ? named.first : named.isEmpty && contents.buckets.count == 1 ? contents.buckets.first : nil
    }

    /// The bucket `storesh serve --import` serves first: the export's only one, else the first its bucket list names
    /// (then the first its objects name).
    package static func firstBucket(of contents: FirebaseEmulatorExport.Contents) -> String? {
        bucketName(of: contents) ?? contents.buckets.first
            ?? contents.objects.map(\.bucket).min { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    /// Puts each bucket of the export in the bucket file `storesh serve` serves it from (rule V6): the export's
    /// bucket named as `first` (or, when the export holds one bucket, that one) into `first`, every other into
    /// `NAME.bucket` in `others`, made if missing; each as `serve(_:from:directory:in:replace:)` decides. Returns
    /// what was done, a sentence per bucket.
    package static func serve(
        _ contents: FirebaseEmulatorExport.Contents, directory: String, first: LocalBucket, others: String,
        options: LocalBucketOptions, replace: Bool
    ) throws -> [String] {
        var names = contents.buckets
        for object in contents.objects where !names.contains(object.bucket) { names.append(object.bucket) }
        if names.count <= 1 || !names.contains(first.name) && bucketName(of: contents) != nil {
            let (objects, from) = try objects(of: contents, for: first.name, directory: directory)
            return [try serve(objects, from: from, directory: directory, in: first, replace: replace)]
        }
        var summaries: [String] = []
        for name in names {
            let objects = contents.objects.filter { $0.bucket == name }
            if name == first.name {
                summaries.append(try serve(objects, from: name, directory: directory, in: first, replace: replace))
                continue
            }
            let path = (others as NSString).appendingPathComponent(name + ".bucket")
            var options = options
            options.nameForNewBucket = name
            let bucket = try LocalBucket.open(at: path, options: options)
            defer { bucket.close() }
            guard bucket.name == name else {
                throw UsageError(
                    "\(path) holds gs://\(bucket.name), not gs://\(name) of \(directory); move it away (or give --buckets another directory). Nothing more was imported."
                )
            }
            summaries.append(try serve(objects, from: name, directory: directory, in: bucket, replace: replace))
        }
        return summaries
    }

    /// Puts the export's objects in the bucket `storesh serve` serves, and says what it did. A bucket that holds
    /// nothing takes them; one that holds exactly them (the same names, generations, metagenerations and MD5s: an
    /// earlier serve of this export, exported on exit) is served as it is; one that holds anything else is not
    /// replaced unless `replace` (rule V9).
    package static func serve(
        _ objects: [FirebaseEmulatorExport.Entry], from: String, directory: String, in bucket: LocalBucket,
        replace: Bool
    ) throws -> String {
        let held = try bucket.objectCount()
        if held == 0 || replace {
            try load(objects, into: bucket, replacingEverything: true)
            return summary(count: objects.count, from: from, into: bucket.name, replace: true) + " from \(directory)"
        }
        if try holdsExactly(objects, bucket) {
            return
                "gs://\(bucket.name) (\(bucket.path)) already holds the \(MessageText.counted(objects.count, "object")) of \(directory); served as they are"
        }
        throw UsageError(
            "\(bucket.path) already holds \(MessageText.counted(held, "object")) of gs://\(bucket.name) that are not the export's; storesh will not replace them. Give --replace to serve exactly the export's objects (the file's are then gone; storesh backup keeps a copy first), or --bucket NEW.bucket to serve the export from a new file."
        )
    }

    /// Whether `bucket` holds exactly `objects`: the same names (as bytes), generations, metagenerations and content.
    package static func holdsExactly(_ objects: [FirebaseEmulatorExport.Entry], _ bucket: LocalBucket) throws -> Bool {
        var expected = objects.makeIterator()
        var after: String?
        repeat {
            let page = try bucket.scanPage(prefix: "", after: after, limit: 1000)
            for held in page.objects {
                guard let entry = expected.next(), NameBytes.sameBytes(entry.object.name.rawValue, held.fullPath),
                    entry.object.generation == held.generation,
                    entry.object.metageneration.map({ $0 == held.metageneration }) ?? true,
                    entry.md5 == held.md5Hash
                else { return false }
            }
            after = page.resumeAfter
        } while after != nil
        return expected.next() == nil
    }

    package static func summary(count: Int, from: String, into bucket: String, replace: Bool) -> String {
        let objects = MessageText.counted(count, "object")
        let source = from == bucket ? "" : " (gs://\(from) in the export)"
        return replace
            ? "gs://\(bucket) now holds exactly the export's \(objects)\(source)"
            : "imported \(objects)\(source) into gs://\(bucket)"
    }
}
