import Foundation
import StoreshCore

import CStoreshXML

/// One element of an S3 answer, read with libxml2's streaming parser (`CStoreshXML`): its name, text and children.
/// S3's documents are small and flat (a page of a listing, an error), so a tree is simplest to read.
struct XMLElement {
    var name: String
    var text = ""
    var children: [XMLElement] = []

    /// The first child named `name`.
    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in order.
    func all(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    func text(of name: String) -> String? { child(name)?.text }

    /// The document's root element; nil when `data` is not well-formed XML. Throws when libxml2 cannot be loaded.
    static func parse(_ data: Data) throws(StorageError) -> XMLElement? {
        // An empty answer is no document (and has no address to give the parser).
        if data.isEmpty { return nil }
        let builder = TreeBuilder()
        let parsed = data.withUnsafeBytes { bytes in
            withExtendedLifetime(builder) {
                storesh_xml_parse(
                    bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(clamping: bytes.count),
                    Unmanaged.passUnretained(builder).toOpaque(),
                    { context, name in TreeBuilder.of(context).start(String(cString: name!)) },
                    { context, text, length in
                        TreeBuilder.of(context).append(UnsafeRawBufferPointer(start: text, count: Int(length)))
                    },
                    { context in TreeBuilder.of(context).end() })
            }
        }
        if parsed < 0 { throw StorageError.internalError(String(cString: storesh_xml_problem())) }
        return parsed == 1 ? builder.root : nil
    }

    private final class TreeBuilder {
        /// The open elements, each with its text's bytes so far: text arrives in pieces, decoded once whole.
        var stack: [(element: XMLElement, text: [UInt8])] = []
        var root: XMLElement?

        static func of(_ context: UnsafeMutableRawPointer?) -> TreeBuilder {
            Unmanaged<TreeBuilder>.fromOpaque(context!).takeUnretainedValue()
        }

        func start(_ name: String) { stack.append((XMLElement(name: name), [])) }

        func append(_ bytes: UnsafeRawBufferPointer) {
            if !stack.isEmpty { stack[stack.count - 1].text.append(contentsOf: bytes) }
        }

        func end() {
            guard case (var element, let text)? = stack.popLast() else { return }
            element.text = String(decoding: text, as: UTF8.self)
            if stack.isEmpty { root = element } else { stack[stack.count - 1].element.children.append(element) }
        }
    }
}

/// S3's answers: listings, errors, uploads.
enum S3XML {
    /// An error document's code and message (`<Error><Code>NoSuchKey</Code><Message>…</Message></Error>`).
    static func error(_ body: Data) throws(StorageError) -> (code: String, message: String?)? {
        guard let root = try XMLElement.parse(body), root.name == "Error", let code = root.text(of: "Code") else { return nil }
        return (code, root.text(of: "Message"))
    }

    /// A ListObjectsV2 page, asked with `encoding-type=url` (keys percent-encoded, so that any byte survives XML).
    static func listing(_ body: Data, bucket: String) throws -> (prefixes: [String], items: [S3ListedObject], continuation: String?) {
        guard let root = try XMLElement.parse(body), root.name == "ListBucketResult" else {
            throw StorageError.internalError("The service's listing is not the XML of ListObjectsV2.")
        }
        let encoded = root.text(of: "EncodingType") == "url"
        func key(_ text: String) throws -> String {
            guard encoded else { return text }
            // Form encoding: a `+` is a space.
            guard let decoded = text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                throw StorageError.internalError("The service listed a key that is not percent-encoded UTF-8: \(text).")
            }
            return decoded
        }
        let prefixes = try root.all("CommonPrefixes").compactMap { try $0.text(of: "Prefix").map(key) }
        let items = try root.all("Contents").map { entry -> S3ListedObject in
            guard let name = entry.text(of: "Key") else { throw StorageError.internalError("The service listed an object without a key.") }
            return S3ListedObject(
                key: try key(name), size: Int64(entry.text(of: "Size") ?? "") ?? 0, etag: entry.text(of: "ETag") ?? "",
                lastModified: entry.text(of: "LastModified").flatMap { Timestamp(rfc3339: $0) })
        }
        let truncated = root.text(of: "IsTruncated") == "true"
        let next = root.text(of: "NextContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        return (prefixes, items, truncated ? next : nil)
    }

    /// The text of one element of an answer (`UploadId`, `ETag`), anywhere under the root.
    static func value(_ name: String, in body: Data) throws(StorageError) -> String? {
        func find(_ element: XMLElement) -> String? {
            if element.name == name { return element.text }
            for child in element.children { if let found = find(child) { return found } }
            return nil
        }
        return try XMLElement.parse(body).flatMap(find)
    }
}

/// What a ListObjectsV2 entry says of an object: no content type or custom metadata (a HEAD reads those).
struct S3ListedObject {
    var key: String
    var size: Int64
    var etag: String
    var lastModified: Timestamp?
}
