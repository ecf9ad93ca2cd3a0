import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// The page's style and script (`Page/page.css`, `Page/page.js`, compiled into the binary), served beside it under
/// `/_storesh/`, so that the page itself carries no inline script or style and its policy can forbid both. Each is
/// linked with its content's digest in the query: a browser keeps it as long as it likes, and a new binary's page
/// asks for the new one.
enum PageAssets {
    struct Asset: Sendable {
        let path: String
        let contentType: String
        let content: [UInt8]
        /// The link the page uses: the path and the content's digest.
        let link: String

        init(path: String, contentType: String, content: [UInt8]) {
            self.path = path
            self.contentType = contentType
            self.content = content
            let digest = SHA256.hash(data: content).prefix(8).map { String(format: "%02x", $0) }.joined()
            link = path + "?v=" + digest
        }
    }

    static let style = Asset(
        path: "/_storesh/page.css", contentType: "text/css; charset=utf-8", content: PackageResources.page_css)
    static let script = Asset(
        path: "/_storesh/page.js", contentType: "text/javascript; charset=utf-8", content: PackageResources.page_js)
    static let all = [style, script]

    /// The asset's answer.
    static func answer(_ asset: Asset) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = asset.contentType
        // Its link names its content: the same link is always the same bytes.
        headers[.cacheControl] = "public, max-age=31536000, immutable"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.content)))
    }
}

/// The headers every answer of the page and its assets carries, set here once rather than by each answer: no other
/// page may frame it (a click there would be a click here: rule V8); nothing runs but the page's own script, loaded
/// from this server, and nothing is fetched from elsewhere; types are never guessed; no address leaves as a referrer.
struct PageSecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var contentSecurityPolicy: String {
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; "
            + "base-uri 'none'; frame-ancestors 'none'"
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var response = try await next(request, context)
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[HTTPField.Name("Content-Security-Policy")!] = Self.contentSecurityPolicy
        response.headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return response
    }
}
