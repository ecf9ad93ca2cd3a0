import CStoreshXML
import Foundation
import StoreshCore

/// One element of an XML document, read with libxml2's streaming parser (`CStoreshXML`): its name, text and children.
/// The documents read are small and flat (S3's answers, the XML API's requests: a page of a listing, an error, a list
/// of parts), so a tree is simplest to read.
package struct XMLElement: Sendable {
    package var name: String
    package var text = ""
    package var children: [XMLElement] = []

    /// The first child named `name`.
    package func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in order.
    package func all(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    package func text(of name: String) -> String? { child(name)?.text }

    /// The document's root element; nil when `data` is not well-formed XML. Throws when libxml2 cannot be loaded.
    package static func parse(_ data: Data) throws(StorageError) -> XMLElement? {
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
