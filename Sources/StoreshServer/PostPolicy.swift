import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import StoreshCore
import StoreshWire

/// An HTML form upload under a V4 POST policy (rule V7), as `generate_signed_post_policy_v4` makes one: a
/// `multipart/form-data` POST to `/BUCKET/` whose fields name the object (`key`, where `${filename}` is the file's
/// name), its metadata, and the policy (`policy`, base64 JSON of an `expiration` and `conditions`) with its
/// signature. Checked: the fields are ones the service knows; the policy has not expired; every field is one its
/// conditions allow (`{"field": value}`, `["eq", "$field", value]`, `["starts-with", "$field", prefix]`,
/// `["content-length-range", min, max]`); with a key given to the server, the signature over the policy.
struct PostPolicyForm {
    var fields: [String: String] = [:]
    var file: SpooledContent
    var fileName: String?
    /// The file part's own `Content-Type`: the object's when no content-type field names one.
    var fileContentType: String?

    /// The most form fields (besides the file) and bytes of each.
    static let maximumFields = 64
    static let maximumFieldBytes = 64 << 10

    /// The fields the service knows; `x-goog-meta-*` and `x-ignore-*` besides.
    static let knownFields: Set<String> = [
        "acl", "bucket", "cache-control", "content-disposition", "content-encoding", "content-type", "expires", "key",
        "policy",
        "success_action_redirect", "success_action_status", "x-goog-algorithm", "x-goog-credential",
        "x-goog-custom-time", "x-goog-date",
        "x-goog-signature", "content-language",
    ]

    init(spool: Spool, contentType: String?) throws {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data"),
            let boundary = MediaTypes.parameter("boundary", of: contentType), !boundary.isEmpty,
            boundary.utf8.count <= 200
        else {
            throw SignedURL.refusal(
                .badRequest, code: "InvalidArgument", "A form upload is multipart/form-data with a boundary.")
        }
        let parts = try MultipartUpload.parts(of: spool, boundary: boundary, atMost: Self.maximumFields + 2)
        var file: SpooledContent?
        for part in parts {
            let disposition = part.headers["content-disposition"] ?? ""
            guard let name = MediaTypes.parameter("name", of: disposition) else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument",
                    "A form field has no name (Content-Disposition: form-data; name=…).")
            }
            if name.lowercased() == "file" {
                // The file is the last field: the service ignores what follows it.
                file = try spool.content(part.body)
                fileName = MediaTypes.parameter("filename", of: disposition)
                fileContentType = part.headers["content-type"]
                break
            }
            guard part.body.count <= Self.maximumFieldBytes else {
                throw SignedURL.refusal(
                    .badRequest, code: "InvalidArgument",
                    "The form field \(name) is longer than \(Self.maximumFieldBytes) bytes.")
            }
            fields[name.lowercased()] = String(
                decoding: try spool.read(offset: part.body.lowerBound, length: part.body.count), as: UTF8.self)
        }
        guard let file else {
            throw SignedURL.refusal(.badRequest, code: "InvalidArgument", "The form has no file field.")
        }
        self.file = file
    }

    /// The object's name: `key`, its `${filename}` replaced by the file's name.
    var key: String? { fields["key"].map { $0.replacingOccurrences(of: "${filename}", with: fileName ?? "") } }

    /// Checks the fields, the policy and (with a key) its signature; throws the XML API's refusal.
    func check(bucket: String, key signingKey: SignedURLKey?, now: Date) throws {
        func refuse(
            _ message: String, code: String = "InvalidPolicyDocument", status: HTTPResponse.Status = .badRequest
        ) -> HTTPFailure {
            SignedURL.refusal(status, code: code, message)
        }
        for name in fields.keys {
            guard Self.knownFields.contains(name) || name.hasPrefix("x-goog-meta-") || name.hasPrefix("x-ignore-")
            else {
                throw refuse(
                    "Invalid argument: the form field \(name) is not one the XML API knows.", code: "InvalidArgument")
            }
        }
        guard let policyText = fields["policy"], let policyData = Data(base64Encoded: policyText),
            case .object(let policy)? = try? JSONDecoder().decode(JSONValue.self, from: policyData)
        else {
            throw refuse("The form's policy field is not base64 of a JSON object.")
        }
        guard case .string(let expirationText)? = policy.first(where: { $0.0 == "expiration" })?.1,
            let expiration = Timestamp(rfc3339: expirationText)
        else {
            throw refuse("The policy has no expiration time (RFC 3339).")
        }
        guard now < Date(timeIntervalSince1970: Double(expiration.microseconds) / 1_000_000) else {
            throw refuse(
                "Invalid according to Policy: Policy expired (\(expirationText)).", code: "AccessDenied",
                status: .forbidden)
        }
        guard case .array(let conditions)? = policy.first(where: { $0.0 == "conditions" })?.1 else {
            throw refuse("The policy has no conditions.")
        }
        var allowed: Set<String> = ["policy", "x-goog-signature", "file", "bucket"]
        for condition in conditions {
            switch condition {
            case .object(let members):
                for (field, value) in members {
                    let name = field.lowercased()
                    guard case .string(let expected) = value else {
                        throw refuse("The condition on \(field) is not a string.")
                    }
                    let given = name == "bucket" ? bucket : fields[name]
                    guard given == expected else {
                        throw refuse(
                            "Invalid according to Policy: Policy Condition failed: [\"eq\", \"$\(field)\", \"\(expected)\"].",
                            code: "AccessDenied", status: .forbidden)
                    }
                    allowed.insert(name)
                }
            case .array(let terms):
                guard case .string(let operation)? = terms.first else {
                    throw refuse("A policy condition has no operation.")
                }
                switch operation.lowercased() {
                case "eq", "starts-with":
                    guard terms.count == 3, case .string(let reference) = terms[1], reference.hasPrefix("$"),
                        case .string(let value) = terms[2]
                    else {
                        throw refuse("A policy condition \(operation) is [\"\(operation)\", \"$field\", \"value\"].")
                    }
                    let name = String(reference.dropFirst()).lowercased()
                    let given = name == "bucket" ? bucket : fields[name] ?? ""
                    let holds = operation.lowercased() == "eq" ? given == value : given.hasPrefix(value)
                    guard holds else {
                        throw refuse(
                            "Invalid according to Policy: Policy Condition failed: [\"\(operation)\", \"\(reference)\", \"\(value)\"].",
                            code: "AccessDenied", status: .forbidden)
                    }
                    allowed.insert(name)
                case "content-length-range":
                    guard terms.count == 3, case .integer(let least) = terms[1], case .integer(let most) = terms[2]
                    else {
                        throw refuse("content-length-range is [\"content-length-range\", MIN, MAX].")
                    }
                    guard (least...max(least, most)).contains(file.size) else {
                        throw refuse(
                            "Your proposed upload is \(file.size) bytes, outside the policy's content-length-range \(least)…\(most).",
                            code: "EntityTooLarge")
                    }
                default:
                    throw refuse("Unknown policy condition \(operation).")
                }
            default:
                throw refuse("A policy condition is an object or an array.")
            }
        }
        for name in fields.keys where !allowed.contains(name) && !name.hasPrefix("x-ignore-") {
            throw refuse(
                "Invalid according to Policy: Extra input fields: \(name).", code: "AccessDenied", status: .forbidden)
        }
        guard fields["x-goog-algorithm"] == SignedURL.algorithm, let credential = fields["x-goog-credential"],
            fields["x-goog-date"] != nil,
            let signatureText = fields["x-goog-signature"]
        else {
            throw refuse(
                "The form must carry x-goog-algorithm (\(SignedURL.algorithm)), x-goog-credential, x-goog-date and x-goog-signature.",
                code: "InvalidArgument")
        }
        guard let signingKey else { return }
        let email = credential.split(separator: "/").first.map(String.init) ?? ""
        guard email == signingKey.email, let signature = Hexadecimal.decoded(signatureText),
            signingKey.verifies(signature, of: policyText)
        else {
            throw refuse(
                "The policy's signature does not match: it is not signed by \(signingKey.email), the key storesh serve was given.",
                code: "SignatureDoesNotMatch", status: .forbidden)
        }
    }
}

extension StorageAPI {
    /// `POST /BUCKET/` with a form: the object written under its policy; answered as `success_action_status` asks (204
    /// by default; 201 with the XML `PostResponse`; 200), or redirected to `success_action_redirect`.
    func postPolicyUpload(_ exchange: inout Exchange) async throws -> Answer {
        let spool = Spool(directory: spoolDirectory)
        try await receive(
            &exchange, into: spool, limit: Int64(limits.maximumObjectBytes + limits.maximumJSONBytes) + 4096,
            tooLarge: objectTooLarge())
        let form = try PostPolicyForm(spool: spool, contentType: exchange.request.headers[.contentType])
        try form.check(bucket: exchange.bucket.name, key: signingKey, now: exchange.bucket.clock.now().date)
        guard let key = form.key, !key.isEmpty else {
            throw SignedURL.refusal(
                .badRequest, code: "InvalidArgument", "The form has no key field naming the object.")
        }
        var options = WriteOptions()
        for property in WritableProperty.allCases {
            if let value = form.fields[property.httpHeader.lowercased()] { options.properties[property] = value }
        }
        if options.properties[.contentType] == nil, let type = form.fileContentType {
            options.properties[.contentType] = type
        }
        for (field, value) in form.fields where field.hasPrefix("x-goog-meta-") {
            options.customMetadata[String(field.dropFirst("x-goog-meta-".count))] = value
        }
        try CustomMetadataLimits.validate(options.customMetadata)
        let upload = UploadRequest(
            bucket: exchange.bucket, name: try ObjectName(key), options: options, conditions: Conditions(),
            firebase: false)
        let object = try await finishUpload(upload, content: form.file)
        var headers = Self.xmlObjectHeaders(object)
        if let redirect = form.fields["success_action_redirect"], !redirect.isEmpty {
            let separator = redirect.contains("?") ? "&" : "?"
            headers[.location] =
                redirect + separator
                + "bucket=\(NameBytes.percentEncoded(exchange.bucket.name))&key=\(NameBytes.percentEncoded(key))&etag=\(NameBytes.percentEncoded(CloudStorageXML.entityTag(md5Base64: object.md5Hash)))"
            return Reply.empty(.seeOther, headers: headers)
        }
        switch form.fields["success_action_status"] {
        case "201":
            let location = "\(exchange.baseURL)/\(exchange.bucket.name)/\(NameBytes.percentEncoded(key))"
            return Reply.xml(
                CloudStorageXML.postResponse(
                    location: location, bucket: exchange.bucket.name, key: key,
                    entityTag: CloudStorageXML.entityTag(md5Base64: object.md5Hash)), status: .created, headers: headers
            )
        case "200": return Reply.empty(.ok, headers: headers)
        default: return Reply.empty(.noContent, headers: headers)
        }
    }
}
