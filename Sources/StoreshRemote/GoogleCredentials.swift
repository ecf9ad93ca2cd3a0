import Crypto
import Foundation
import NIOHTTP1
import StoreshCore
import _CryptoExtras

/// Google credentials found as rule G3 says, in order: `$GOOGLE_APPLICATION_CREDENTIALS`, gcloud's
/// application-default file, the metadata server. Each source is tried only when the one before is absent; a
/// source that is there but unusable (a bad file, an unknown type) is an error naming it, never skipped.
///
/// No credential, access token or assertion is ever part of a message: messages name files and fields.
package struct GoogleCredentialSearch: Sendable {
    let environment: @Sendable (String) -> String?
    let http: RemoteHTTP

    package init(environment: @escaping @Sendable (String) -> String?, http: RemoteHTTP) {
        self.environment = environment
        self.http = http
    }

    /// What full control of objects needs (read, write, metadata).
    static let scope = "https://www.googleapis.com/auth/devstorage.full_control"
    static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// The first credentials found, as an authorizer that caches and refreshes its access token.
    package func find() async throws -> any RequestAuthorizer {
        var tried: [String] = []
        if let path = environment("GOOGLE_APPLICATION_CREDENTIALS"), !path.isEmpty {
            return try credentials(inFile: path, source: "$GOOGLE_APPLICATION_CREDENTIALS")
        }
        tried.append("$GOOGLE_APPLICATION_CREDENTIALS (not set)")
        let gcloud = applicationDefaultPath()
        if FileManager.default.fileExists(atPath: gcloud) {
            return try credentials(inFile: gcloud, source: "gcloud's application default credentials")
        }
        tried.append("gcloud's application default credentials (no \(gcloud))")
        if let flag = environment("NO_GCE_CHECK"), !flag.isEmpty, flag.lowercased() != "false", flag != "0" {
            tried.append("the metadata server (skipped: $NO_GCE_CHECK is set)")
        } else {
            let host = environment("GCE_METADATA_HOST").flatMap { $0.isEmpty ? nil : $0 } ?? "metadata.google.internal"
            let metadata = MetadataServerTokens(host: host, http: http)
            if await metadata.isThere() { return CachedTokenAuthorizer(source: metadata) }
            tried.append("the metadata server at \(host) (no answer: not on Google Cloud)")
        }
        throw StorageError(
            .unauthenticated,
            """
            No Google credentials were found. Tried: \(tried.joined(separator: "; ")). To fix: run \
            `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account's \
            key file; for an emulator (storesh serve, the Firebase emulator), set STORAGE_EMULATOR_HOST=host:port.
            """)
    }

    /// `$CLOUDSDK_CONFIG/application_default_credentials.json`, else under `~/.config/gcloud`.
    func applicationDefaultPath() -> String {
        if let config = environment("CLOUDSDK_CONFIG"), !config.isEmpty {
            return config + "/application_default_credentials.json"
        }
        let home = environment("HOME").flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.config/gcloud/application_default_credentials.json"
    }

    /// A credentials file: a service account's key, or an authorized user's refresh token.
    func credentials(inFile path: String, source: String) throws -> any RequestAuthorizer {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StorageError(.unauthenticated, "\(source) names \(path), which cannot be read.")
        }
        guard let document = try? JSONValue.parse(data), document.members != nil else {
            throw StorageError(.unauthenticated, "\(path) (\(source)) is not a JSON credentials file.")
        }
        func optional(_ name: String) -> String? { document[member: name]?.string }
        func field(_ name: String) throws -> String {
            guard let value = optional(name), !value.isEmpty else {
                throw StorageError(.unauthenticated, "\(path) (\(source)) has no '\(name)'.")
            }
            return value
        }
        let type = optional("type") ?? "(none)"
        switch type {
        case "service_account":
            let key: _RSA.Signing.PrivateKey
            do {
                key = try _RSA.Signing.PrivateKey(pemRepresentation: try field("private_key"))
            } catch let error as StorageError {
                throw error
            } catch {
                throw StorageError(
                    .unauthenticated, "\(path) (\(source)): 'private_key' is not an RSA private key in PEM.")
            }
            let tokens = ServiceAccountTokens(
                email: try field("client_email"), keyID: optional("private_key_id"), key: key,
                tokenURI: optional("token_uri") ?? Self.googleTokenURI, http: http)
            return CachedTokenAuthorizer(source: tokens)
        case "authorized_user":
            let tokens = RefreshTokenGrant(
                clientID: try field("client_id"), clientSecret: try field("client_secret"),
                refreshToken: try field("refresh_token"), tokenURI: optional("token_uri") ?? Self.googleTokenURI,
                account: optional("account"), http: http)
            var authorizer = CachedTokenAuthorizer(source: tokens)
            if let project = optional("quota_project_id"), !project.isEmpty {
                authorizer.extraHeaders = [("x-goog-user-project", project)]
            }
            return authorizer
        default:
            throw StorageError(
                .unauthenticated,
                "\(path) (\(source)) holds credentials of type '\(type)'; storesh uses 'service_account' keys and 'authorized_user' files (gcloud auth application-default login)."
            )
        }
    }
}

/// An access token and when it stops working.
struct AccessToken: Sendable {
    var value: String
    var expires: ContinuousClock.Instant
}

/// Where access tokens come from.
protocol AccessTokenSource: Sendable {
    func fetch() async throws -> AccessToken
    var description: String { get }
}

/// Bearer tokens from a source, kept until five minutes before they expire; requests that arrive while one is
/// being fetched wait for it rather than fetching their own.
struct CachedTokenAuthorizer: RequestAuthorizer {
    let source: any AccessTokenSource
    let cache = TokenCache()
    var extraHeaders: [(String, String)] = []

    init(source: any AccessTokenSource) { self.source = source }

    func authorization() async throws -> String? { "Bearer " + (try await cache.token(from: source)) }
    var description: String { source.description }
}

actor TokenCache {
    private var current: AccessToken?
    private var fetching: Task<AccessToken, Error>?

    func token(from source: any AccessTokenSource) async throws -> String {
        if let current, current.expires - .seconds(300) > .now { return current.value }
        if let fetching { return try await fetching.value.value }
        let task = Task { try await source.fetch() }
        fetching = task
        defer { fetching = nil }
        let token = try await task.value
        current = token
        return token.value
    }
}

/// The answer of an OAuth 2.0 token endpoint, or its refusal as an error that names the endpoint, not the secret.
func tokenAnswer(_ response: RemoteResponse, endpoint: String, what: String) throws -> AccessToken {
    let answer = (try? JSONDecoder().decode(TokenEndpointAnswer.self, from: response.body)) ?? TokenEndpointAnswer()
    guard (200..<300).contains(response.status), let token = answer.accessToken, !token.isEmpty else {
        let reason = [answer.error, answer.errorDescription].compactMap { $0 }.joined(separator: ": ")
        throw StorageError(
            .unauthenticated,
            "The token endpoint \(endpoint) refused \(what) (\(response.status)\(reason.isEmpty ? "" : ", \(reason)"))."
        )
    }
    return AccessToken(value: token, expires: .now + .seconds(answer.lifetimeSeconds))
}

/// What an OAuth 2.0 token endpoint answers (RFC 6749 §5.1, §5.2): each member read when it has the type it should,
/// so that one odd member does not hide the others (an error's description, above all).
struct TokenEndpointAnswer: Decodable {
    var accessToken: String?
    /// Seconds; the RFC's "recommended" member, absent from some endpoints' answers.
    var expiresIn: Double?
    var error: String?
    var errorDescription: String?

    init() {}

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case expiresIn = "expires_in"
        case error
        case errorDescription = "error_description"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        accessToken = try? container.decodeIfPresent(String.self, forKey: .accessToken)
        expiresIn = try? container.decodeIfPresent(Double.self, forKey: .expiresIn)
        error = try? container.decodeIfPresent(String.self, forKey: .error)
        errorDescription = try? container.decodeIfPresent(String.self, forKey: .errorDescription)
    }

    /// How long the token lasts: an hour when the endpoint does not say, never negative, never past what a
    /// duration holds (a number from a service never traps).
    var lifetimeSeconds: Int64 {
        guard let expiresIn, expiresIn.isFinite else { return 3600 }
        return Int64(max(0, min(expiresIn, 10 * 365 * 86_400)))
    }
}

/// A service account's key: an RS256-signed JWT exchanged at its `token_uri` (RFC 7523).
struct ServiceAccountTokens: AccessTokenSource {
    let email: String
    let keyID: String?
    let key: _RSA.Signing.PrivateKey
    let tokenURI: String
    let http: RemoteHTTP

    var description: String { "service account \(email)" }

    func fetch() async throws -> AccessToken {
        let now = Int(Date().timeIntervalSince1970)
        var header: [(String, JSONValue)] = [("alg", .string("RS256")), ("typ", .string("JWT"))]
        if let keyID { header.append(("kid", .string(keyID))) }
        let claims: JSONValue = .object([
            ("iss", .string(email)), ("scope", .string(GoogleCredentialSearch.scope)), ("aud", .string(tokenURI)),
            ("iat", .integer(Int64(now))), ("exp", .integer(Int64(now + 3600))),
        ])
        let signingInput =
            Base64URL.encoded(Data(JSONValue.object(header).serialized.utf8)) + "."
            + Base64URL.encoded(Data(claims.serialized.utf8))
        let signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        let assertion = signingInput + "." + Base64URL.encoded(signature.rawRepresentation)
        let body =
            "grant_type=\(NameBytes.percentEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer"))&assertion=\(assertion)"
        let response = try await http.send(
            RemoteRequest(
                method: .POST, url: tokenURI, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Data(body.utf8), repeatable: true)
        ) { nil }
        return try tokenAnswer(response, endpoint: tokenURI, what: "the key of service account \(email)")
    }
}

/// An authorized user's refresh token (gcloud auth application-default login), exchanged at the token endpoint.
struct RefreshTokenGrant: AccessTokenSource {
    let clientID: String
    let clientSecret: String
    let refreshToken: String
    let tokenURI: String
    let account: String?
    let http: RemoteHTTP

    var description: String {
        account.map { "user \($0) (application default credentials)" } ?? "a user's application default credentials"
    }

    func fetch() async throws -> AccessToken {
        let fields = [
            ("grant_type", "refresh_token"), ("client_id", clientID), ("client_secret", clientSecret),
            ("refresh_token", refreshToken),
        ]
        let body = fields.map { "\($0.0)=\(NameBytes.percentEncoded($0.1))" }.joined(separator: "&")
        let response = try await http.send(
            RemoteRequest(
                method: .POST, url: tokenURI, headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: Data(body.utf8), repeatable: true)
        ) { nil }
        return try tokenAnswer(response, endpoint: tokenURI, what: "the refresh token")
    }
}

/// The metadata server of a Google Cloud machine: the default service account's tokens.
struct MetadataServerTokens: AccessTokenSource {
    let host: String
    let http: RemoteHTTP

    var description: String { "the default service account of this Google Cloud machine (metadata server \(host))" }

    private var base: String { host.contains("://") ? host : "http://\(host)" }

    /// Whether a metadata server answers, asked once with a short wait (off Google Cloud nothing answers).
    func isThere() async -> Bool {
        let request = RemoteRequest(
            method: .GET, url: base + "/computeMetadata/v1/", headers: [("Metadata-Flavor", "Google")],
            repeatable: false)
        guard let response = try? await http.sendOnce(request, timeout: .seconds(2)) else { return false }
        return response.header("Metadata-Flavor") == "Google"
    }

    func fetch() async throws -> AccessToken {
        let url =
            base + "/computeMetadata/v1/instance/service-accounts/default/token?scopes="
            + NameBytes.percentEncoded(GoogleCredentialSearch.scope)
        let response = try await http.send(
            RemoteRequest(method: .GET, url: url, headers: [("Metadata-Flavor", "Google")], repeatable: true)
        ) { nil }
        return try tokenAnswer(response, endpoint: base, what: "a token for the default service account")
    }
}
