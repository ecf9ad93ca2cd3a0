import Foundation
import StoreshCore

/// `--where KEY=GLOB`, `KEY!=GLOB`, `KEY exists`, `KEY missing`: which of a command's targets it acts on, by their
/// metadata. KEY is a property (`contentType`, `size`, …), `custom.NAME`, or one of Cloud Storage's own fields
/// (`customTime`, `temporaryHold`, `eventBasedHold`, `context.KEY`, `storageClass`; rule M9); GLOB is a shell pattern on the value
/// (`image/*`), matched by the C library's fnmatch. Several filters must all hold.
package struct MetadataFilter: Sendable, Equatable {
    package enum Test: Sendable, Equatable {
        case matches(String)
        case doesNotMatch(String)
        case exists
        case missing
    }

    package var key: String
    package var test: Test
    /// The expression as written, for messages.
    package var text: String
    package var location: SourceLocation

    /// Parses the word after `--where`.
    package static func parse(_ word: Word) throws(Diagnostic) -> MetadataFilter {
        let text = word.text
        let test: Test
        let key: String
        if let range = text.range(of: "!=") {
            key = String(text[..<range.lowerBound])
            test = .doesNotMatch(String(text[range.upperBound...]))
        } else if let equals = text.firstIndex(of: "=") {
            key = String(text[..<equals])
            test = .matches(String(text[text.index(after: equals)...]))
        } else {
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, ["exists", "missing"].contains(parts[1]) else {
                throw Diagnostic.syntax(
                    "--where takes KEY=GLOB, KEY!=GLOB, 'KEY exists' or 'KEY missing' (e.g. --where contentType=image/*), not '\(text)'",
                    at: word.location)
            }
            key = String(parts[0])
            test = parts[1] == "exists" ? .exists : .missing
        }
        let known =
            MetadataProperty(rawValue: key) != nil || (key.hasPrefix("custom.") && key.count > "custom.".count)
            || CloudStorageWritableField(key: key) != nil
        guard known else {
            var message =
                "--where: '\(key)' is not a metadata property; use one of \(MetadataProperty.allCases.map(\.rawValue).filter { $0 != "customMetadata" }.joined(separator: ", ")) or custom.NAME"
            if let near = Suggestion.nearest(to: key, among: MetadataProperty.allCases.map(\.rawValue)) {
                message = "--where: '\(key)' is not a metadata property; did you mean \(near)?"
            }
            throw Diagnostic.syntax(message, at: word.location)
        }
        return MetadataFilter(key: key, test: test, text: text, location: word.location)
    }

    /// The value the filter reads, as `meta get --json` writes it; nil when the object has none.
    static func value(of key: String, in metadata: ObjectMetadata) -> String? {
        if key.hasPrefix("custom.") { return metadata.customMetadata[String(key.dropFirst("custom.".count))] }
        if let writable = WritableProperty(rawValue: key) { return metadata[writable] }
        switch CloudStorageWritableField(key: key) {
        // A hold is on or off: `temporaryHold=false` matches an object without one.
        case .temporaryHold?: return metadata.cloudStorage.temporaryHold ? "true" : "false"
        case .eventBasedHold?: return metadata.cloudStorage.eventBasedHold ? "true" : "false"
        case let field?: return metadata.cloudStorage.text(of: field)
        case nil: break
        }
        switch MetadataProperty(rawValue: key) {
        case .bucket: return metadata.bucket
        case .fullPath: return metadata.fullPath
        case .name: return metadata.name
        case .size: return String(metadata.size)
        case .generation: return metadata.hasGenerations ? String(metadata.generation) : nil
        case .metageneration: return metadata.hasGenerations ? String(metadata.metageneration) : nil
        case .timeCreated: return metadata.timeCreated.rfc3339
        case .updated: return metadata.updated.rfc3339
        case .md5Hash: return metadata.md5Hash.isEmpty ? nil : metadata.md5Hash
        default: return nil
        }
    }

    package func admits(_ metadata: ObjectMetadata) -> Bool {
        let value = Self.value(of: key, in: metadata)
        switch test {
        case .exists: return value != nil
        case .missing: return value == nil
        case .matches(let glob): return value.map { fnmatch(glob, $0, 0) == 0 } ?? false
        case .doesNotMatch(let glob): return value.map { fnmatch(glob, $0, 0) != 0 } ?? true
        }
    }
}
