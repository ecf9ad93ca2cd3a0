/// The storage classes one service gives objects (rule M9), by the names its API uses. Cloud Storage changes an
/// object's class by rewriting it; S3 by copying it onto itself. STANDARD is both services' and the default; every
/// other name is one service's only, and a bucket refuses a name its service does not have before anything is sent.
public struct StorageClasses: Sendable, Equatable {
    /// The service, as messages name it.
    public let service: String
    /// The names, in the order the service's documentation lists them (cheapest access first).
    public let names: [String]

    public static let cloudStorage = StorageClasses(
        service: "Cloud Storage",
        names: [
            "STANDARD", "NEARLINE", "COLDLINE", "ARCHIVE", "MULTI_REGIONAL", "REGIONAL", "DURABLE_REDUCED_AVAILABILITY",
        ])
    /// The classes a CopyObject may give an object in a general-purpose bucket (S3's `StorageClass` values less
    /// OUTPOSTS, SNOW and EXPRESS_ONEZONE, which belong to other kinds of bucket).
    public static let s3 = StorageClasses(
        service: "S3",
        names: [
            "STANDARD", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "GLACIER", "DEEP_ARCHIVE",
            "REDUCED_REDUNDANCY",
        ])
    /// A bucket whose API carries no storage class (the Firebase Storage API's v0).
    public static let none = StorageClasses(service: "the Firebase Storage API", names: [])

    /// S3's classes whose objects can be neither read nor copied (so neither changed nor moved) until restored
    /// (RestoreObject): GLACIER_IR is read at once, these two are not.
    public static let s3Archived: Set<String> = ["GLACIER", "DEEP_ARCHIVE"]

    public func contains(_ name: String) -> Bool { names.contains(name) }

    /// The class `text` names in any service storesh knows (any case: `nearline` is NEARLINE): what a script may
    /// write before its bucket is known; nil for no class of any.
    public static func named(_ text: String) -> String? {
        let name = text.uppercased()
        return cloudStorage.contains(name) || s3.contains(name) ? name : nil
    }

    /// Every name storesh knows, each service's in turn (for a message).
    public static var allNamesDescribed: String {
        "\(cloudStorage.names.joined(separator: ", ")) (Cloud Storage) or \(s3.names.dropFirst().joined(separator: ", ")) (S3)"
    }

    /// Refuses `name` when this service has no such class, naming those it has (invalid-argument).
    public func check(_ name: String, bucket: String) throws(StorageError) {
        guard !contains(name) else { return }
        guard !names.isEmpty else {
            throw .invalidArgument("\(bucket): \(service) does not carry a storage class; nothing was changed.")
        }
        let owner =
            Self.cloudStorage.contains(name)
            ? " (\(name) is Cloud Storage's)" : Self.s3.contains(name) ? " (\(name) is S3's)" : ""
        throw .invalidArgument(
            "\(bucket) is on \(service), whose storage classes are \(names.joined(separator: ", "))\(owner); nothing was changed."
        )
    }
}
