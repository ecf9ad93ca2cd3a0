import Foundation
import StoreshCore

/// The Cloud Storage XML API's documents (rule V7), both ways: the listings and upload results `storesh serve`
/// answers, and the requests' bodies it reads (the parts a multipart upload completes with).
package enum CloudStorageXML {
    static let declaration = "<?xml version='1.0' encoding='UTF-8'?>"
    /// The namespace of a listing, as the service writes it.
    static let namespace = "http://doc.s3.amazonaws.com/2006-03-01"
    /// The namespace of a multipart upload's documents, S3's, as the service writes them (and clients look them up).
    static let uploadNamespace = "http://s3.amazonaws.com/doc/2006-03-01/"

    /// An object's XML ETag: its MD5 in hexadecimal, quoted (a multipart upload's is the MD5 of its parts' MD5s and
    /// their count, as the service gives it).
    package static func entityTag(md5Base64: String) -> String {
        guard let bytes = Data(base64Encoded: md5Base64) else { return "\"\"" }
        return "\"" + bytes.map { String(format: "%02x", $0) }.joined() + "\""
    }

    /// A page of a bucket's listing (`GET /BUCKET`): version 1 (`marker`) or, with `listType2`, version 2
    /// (`continuation-token`), as the service answers both.
    package static func listBucketResult(
        bucket: String, prefix: String, delimiter: String?, maxKeys: Int, page: StoredListingPage, marker: String?,
        listType2: Bool,
        continuationToken: String?
    ) -> String {
        var xml = declaration + "<ListBucketResult xmlns=\"\(namespace)\">"
        func element(_ name: String, _ value: String) { xml += "<\(name)>\(MarkupText.escaped(value))</\(name)>" }
        element("Name", bucket)
        element("Prefix", prefix)
        if let delimiter { element("Delimiter", delimiter) }
        element("MaxKeys", String(maxKeys))
        if listType2 {
            element("KeyCount", String(page.items.count + page.prefixes.count))
            if let continuationToken { element("ContinuationToken", continuationToken) }
            if let next = page.continuation { element("NextContinuationToken", next) }
        } else {
            element("Marker", marker ?? "")
            if let next = page.continuation { element("NextMarker", next) }
        }
        element("IsTruncated", page.continuation == nil ? "false" : "true")
        for object in page.items {
            xml += "<Contents>"
            element("Key", object.fullPath)
            element("Generation", String(object.generation))
            element("MetaGeneration", String(object.metageneration))
            element("LastModified", object.updated.rfc3339)
            element("ETag", entityTag(md5Base64: object.md5Hash))
            element("Size", String(object.size))
            element("StorageClass", "STANDARD")
            xml += "</Contents>"
        }
        for prefix in page.prefixes {
            xml += "<CommonPrefixes>"
            element("Prefix", prefix)
            xml += "</CommonPrefixes>"
        }
        return xml + "</ListBucketResult>"
    }

    /// The answer to `POST /BUCKET/OBJECT?uploads`.
    package static func initiateMultipartUploadResult(bucket: String, key: String, uploadID: String) -> String {
        declaration
            + "<InitiateMultipartUploadResult xmlns=\"\(uploadNamespace)\"><Bucket>\(MarkupText.escaped(bucket))</Bucket>"
            + "<Key>\(MarkupText.escaped(key))</Key><UploadId>\(MarkupText.escaped(uploadID))</UploadId></InitiateMultipartUploadResult>"
    }

    /// The answer to `GET /BUCKET?uploads`: the multipart uploads in progress.
    package static func listMultipartUploadsResult(bucket: String, uploads: [(key: String, uploadID: String)]) -> String
    {
        var xml =
            declaration
            + "<ListMultipartUploadsResult xmlns=\"\(uploadNamespace)\"><Bucket>\(MarkupText.escaped(bucket))</Bucket>"
            + "<IsTruncated>false</IsTruncated>"
        for upload in uploads {
            xml +=
                "<Upload><Key>\(MarkupText.escaped(upload.key))</Key><UploadId>\(MarkupText.escaped(upload.uploadID))</UploadId></Upload>"
        }
        return xml + "</ListMultipartUploadsResult>"
    }

    /// The answer to `POST /BUCKET/OBJECT?uploadId=…` once the object is written.
    package static func completeMultipartUploadResult(
        location: String, bucket: String, key: String, entityTag: String
    ) -> String {
        declaration
            + "<CompleteMultipartUploadResult xmlns=\"\(uploadNamespace)\"><Location>\(MarkupText.escaped(location))</Location>"
            + "<Bucket>\(MarkupText.escaped(bucket))</Bucket><Key>\(MarkupText.escaped(key))</Key>"
            + "<ETag>\(MarkupText.escaped(entityTag))</ETag></CompleteMultipartUploadResult>"
    }

    /// The answer to a form upload that asked for `success_action_status` 201.
    package static func postResponse(location: String, bucket: String, key: String, entityTag: String) -> String {
        declaration
            + "<PostResponse><Location>\(MarkupText.escaped(location))</Location><Bucket>\(MarkupText.escaped(bucket))</Bucket>"
            + "<Key>\(MarkupText.escaped(key))</Key><ETag>\(MarkupText.escaped(entityTag))</ETag></PostResponse>"
    }

    /// One part of a multipart upload, as a listing of parts gives it.
    package struct UploadedPart: Sendable, Equatable {
        package var number: Int
        /// The part's ETag, quoted.
        package var entityTag: String
        package var size: Int64

        package init(number: Int, entityTag: String, size: Int64) {
            self.number = number
            self.entityTag = entityTag
            self.size = size
        }
    }

    /// The most parts one listing gives, as on the service.
    package static let largestPartsPage = 1000

    /// Where a page of a listing of parts starts and how long it may be: `PartNumberMarker` (the part it starts after),
    /// `MaxParts`, and whether more parts follow it (`IsTruncated`, and then `NextPartNumberMarker`, its last part).
    package struct PartsPage: Sendable, Equatable {
        package var marker: Int
        package var maximum: Int
        package var truncated: Bool

        package init(marker: Int, maximum: Int, truncated: Bool) {
            self.marker = marker
            self.maximum = maximum
            self.truncated = truncated
        }
    }

    /// The answer to `GET /BUCKET/OBJECT?uploadId=…`: a page of the parts received so far.
    package static func listPartsResult(
        bucket: String, key: String, uploadID: String, parts: [UploadedPart], page: PartsPage
    ) -> String {
        var xml =
            declaration + "<ListPartsResult xmlns=\"\(uploadNamespace)\"><Bucket>\(MarkupText.escaped(bucket))</Bucket>"
            + "<Key>\(MarkupText.escaped(key))</Key><UploadId>\(MarkupText.escaped(uploadID))</UploadId>"
            + "<PartNumberMarker>\(page.marker)</PartNumberMarker>"
        if page.truncated, let last = parts.last {
            xml += "<NextPartNumberMarker>\(last.number)</NextPartNumberMarker>"
        }
        xml += "<MaxParts>\(page.maximum)</MaxParts><IsTruncated>\(page.truncated ? "true" : "false")</IsTruncated>"
        for part in parts {
            xml +=
                "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(MarkupText.escaped(part.entityTag))</ETag><Size>\(part.size)</Size></Part>"
        }
        return xml + "</ListPartsResult>"
    }

    /// The parts a `CompleteMultipartUpload` body names, in its order, each with the ETag the client was given.
    package static func completedParts(_ body: Data) throws(StorageError) -> [(number: Int, entityTag: String)] {
        guard let root = try XMLElement.parse(body), root.name == "CompleteMultipartUpload" else {
            throw .invalidArgument("The body is not a CompleteMultipartUpload document.")
        }
        var parts: [(number: Int, entityTag: String)] = []
        for part in root.all("Part") {
            guard let text = part.text(of: "PartNumber") else {
                throw .invalidArgument("A Part of the CompleteMultipartUpload document has no PartNumber.")
            }
            guard let number = Int(text.trimmingCharacters(in: .whitespaces)) else {
                throw .invalidArgument(
                    "The PartNumber '\(text.prefix(40))' of the CompleteMultipartUpload document is not a part number (1 to 10000)."
                )
            }
            parts.append((number, part.text(of: "ETag")?.trimmingCharacters(in: .whitespaces) ?? ""))
        }
        guard !parts.isEmpty else { throw .invalidArgument("The CompleteMultipartUpload document names no part.") }
        return parts
    }
}
