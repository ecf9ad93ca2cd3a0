import StoreshCore

extension WritableProperty {
    /// The HTTP header that carries the property where an API gives properties in headers: S3's objects, the Cloud
    /// Storage XML API's writes, and the fields of its HTML form uploads (those in lower case).
    package var httpHeader: String {
        switch self {
        case .cacheControl: "Cache-Control"
        case .contentDisposition: "Content-Disposition"
        case .contentEncoding: "Content-Encoding"
        case .contentLanguage: "Content-Language"
        case .contentType: "Content-Type"
        }
    }
}
