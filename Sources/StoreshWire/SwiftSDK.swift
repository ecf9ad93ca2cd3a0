/// The Firebase SDK for Apple platforms' calls, written in Swift as the Firebase documentation writes them: what
/// `explain` shows for a command, and what `storesh serve`'s request log shows for a request that reached it.
/// Each call is the expression after `try await` (a reference, then the method).
package enum SwiftSDK {
    /// A Swift string literal.
    package static func literal(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.properties.generalCategory == .control:
                output += "\\u{\(String(scalar.value, radix: 16))}"
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }

    /// The reference to `path`: `storage.reference().child("images/forest.jpg")`.
    package static func reference(_ path: String) -> String {
        path.isEmpty ? "storage.reference()" : "storage.reference().child(\(literal(path)))"
    }

    /// `listAll()` when `maxResults` is nil (it pages without a size), else one page of `list(maxResults:)`.
    package static func list(_ path: String, maxResults: Int?, pageToken: String?) -> String {
        guard let maxResults else { return "\(reference(path)).listAll()" }
        let token = pageToken.map { ", pageToken: \(literal($0))" } ?? ""
        return "\(reference(path)).list(maxResults: \(maxResults)\(token))"
    }

    package static func getMetadata(_ name: String) -> String { "\(reference(name)).getMetadata()" }

    /// `newMetadata`: the name of the `StorageMetadata` holding the change.
    package static func updateMetadata(_ name: String, _ newMetadata: String = "newMetadata") -> String {
        "\(reference(name)).updateMetadata(\(newMetadata))"
    }

    package static func putData(_ name: String, data: String = "data", metadata: String? = nil) -> String {
        "\(reference(name)).putDataAsync(\(data)\(metadata.map { ", metadata: \($0)" } ?? ""))"
    }

    package static func data(_ name: String) -> String { "\(reference(name)).data(maxSize: 10 * 1024 * 1024)" }

    package static func delete(_ name: String) -> String { "\(reference(name)).delete()" }
}
