import Foundation

/// The sample rules of `samples/rules/`, compiled in, so that a class can load them with `rules load --sample NAME`
/// from any directory, and a lone binary has them.
package enum SampleRules {
    /// The samples by name, in the order `help` lists them.
    package static let all: [(name: String, source: String)] = [
        ("owner-only", String(decoding: PackageResources.owner_only_rules, as: UTF8.self)),
        ("version1", String(decoding: PackageResources.version1_rules, as: UTF8.self)),
        ("open", String(decoding: PackageResources.open_rules, as: UTF8.self)),
    ]

    package static var names: [String] { all.map(\.name) }

    package static func source(named name: String) -> String? { all.first { $0.name == name }?.source }
}
