/// Guessing a content type from an object name's extension (rule M3).
public enum ContentType {
    public static let fallback = "application/octet-stream"

    // The common types of web and mobile apps; anything else is `fallback`.
    static let byExtension: [String: String] = [
        "aac": "audio/aac", "avif": "image/avif", "bmp": "image/bmp", "css": "text/css", "csv": "text/csv",
        "doc": "application/msword", "gif": "image/gif", "gz": "application/gzip", "heic": "image/heic",
        "htm": "text/html", "html": "text/html", "ico": "image/vnd.microsoft.icon", "jpeg": "image/jpeg",
        "jpg": "image/jpeg", "js": "text/javascript", "json": "application/json", "m4a": "audio/mp4",
        "md": "text/markdown", "mjs": "text/javascript", "mov": "video/quicktime", "mp3": "audio/mpeg",
        "mp4": "video/mp4", "mpeg": "video/mpeg", "oga": "audio/ogg", "ogg": "audio/ogg",
        "ogv": "video/ogg", "otf": "font/otf", "pdf": "application/pdf", "png": "image/png",
        "svg": "image/svg+xml", "tar": "application/x-tar", "tif": "image/tiff", "tiff": "image/tiff",
        "ttf": "font/ttf", "txt": "text/plain", "wasm": "application/wasm", "wav": "audio/wav",
        "weba": "audio/webm", "webm": "video/webm", "webp": "image/webp", "woff": "font/woff",
        "woff2": "font/woff2", "xml": "application/xml", "yaml": "application/yaml", "yml": "application/yaml",
        "zip": "application/zip",
    ]

    /// The type for the extension of the name's last segment, else `application/octet-stream`.
    public static func guess(forName name: String) -> String {
        let lastSegment = NameBytes.lastSegment(of: name)
        guard let dot = lastSegment.lastIndex(of: "."), dot != lastSegment.startIndex else { return fallback }
        let ext = lastSegment[lastSegment.index(after: dot)...].lowercased()
        return byExtension[ext] ?? fallback
    }
}
