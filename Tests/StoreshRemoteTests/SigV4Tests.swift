import Foundation
import StoreshCore
import StoreshWire
import Testing

@testable import StoreshRemote

/// AWS Signature Version 4 against AWS's published vectors: the generic test suite (aws-sig-v4-test-suite: the
/// credentials AKIDEXAMPLE, service `service`, 2015-08-30) and the S3 examples of "Signature Calculations for the
/// Authorization Header" (examplebucket, 2013-05-24). Each vector checks the canonical request, the string to sign
/// and the signature separately, since a service answers every mistake with the same SignatureDoesNotMatch.
@Suite("SigV4 (rule S4)")
struct SigV4Tests {
    static let suiteSigner = SigV4Signer(
        credentials: AWSCredentials(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", source: "test"),
        region: "us-east-1", service: "service")
    static let suiteDate = Timestamp(rfc3339: "2015-08-30T12:36:00Z")!.date

    static let s3Signer = SigV4Signer(
        credentials: AWSCredentials(
            accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            source: "test"),
        region: "us-east-1")
    static let s3Date = Timestamp(rfc3339: "2013-05-24T00:00:00Z")!.date
    static let s3Host = ("Host", "examplebucket.s3.amazonaws.com")

    func signature(_ authorization: String) -> String { String(authorization.split(separator: "=").last ?? "") }

    @Test("get-vanilla: the canonical request, string to sign and signature")
    func getVanilla() {
        let signed = Self.suiteSigner.sign(
            method: "GET", path: "/", query: "", headers: [("Host", "example.amazonaws.com")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.suiteDate, includeContentHash: false)
        #expect(
            signed.canonicalRequest == """
                GET
                /

                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(
            signed.stringToSign == """
                AWS4-HMAC-SHA256
                20150830T123600Z
                20150830/us-east-1/service/aws4_request
                bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63
                """)
        #expect(
            signed.authorization
                == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    }

    @Test("get-vanilla-query-order-key-case: the query is sorted by name")
    func queryOrder() {
        let signed = Self.suiteSigner.sign(
            method: "GET", path: "/", query: "Param2=value2&Param1=value1",
            headers: [("Host", "example.amazonaws.com")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.suiteDate, includeContentHash: false)
        #expect(
            signed.canonicalRequest.split(separator: "\n", omittingEmptySubsequences: false)[2]
                == "Param1=value1&Param2=value2")
        #expect(signature(signed.authorization) == "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
    }

    @Test("get-header-value-trim: values trimmed, inner runs of spaces made one")
    func headerValueTrim() {
        let signed = Self.suiteSigner.sign(
            method: "GET", path: "/", query: "",
            headers: [("Host", "example.amazonaws.com"), ("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.suiteDate, includeContentHash: false)
        #expect(signed.canonicalRequest.contains("my-header1:value1\nmy-header2:\"a b c\"\n"))
        #expect(signature(signed.authorization) == "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736")
    }

    @Test("post-x-www-form-urlencoded: the body's hash and its content type are signed")
    func postForm() {
        let body = Data("Param1=value1".utf8)
        let signed = Self.suiteSigner.sign(
            method: "POST", path: "/", query: "",
            headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Host", "example.amazonaws.com")],
            payloadHash: SigV4Signer.payloadHash(body), date: Self.suiteDate, includeContentHash: false)
        #expect(SigV4Signer.payloadHash(body) == "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
        #expect(signed.authorization.contains("SignedHeaders=content-type;host;x-amz-date,"))
        #expect(signature(signed.authorization) == "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a")
    }

    @Test("S3 GET Object with a range: x-amz-content-sha256 is signed")
    func s3GetObject() {
        let signed = Self.s3Signer.sign(
            method: "GET", path: "/test.txt", query: "", headers: [Self.s3Host, ("Range", "bytes=0-9")],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(
            signed.canonicalRequest == """
                GET
                /test.txt

                host:examplebucket.s3.amazonaws.com
                range:bytes=0-9
                x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                x-amz-date:20130524T000000Z

                host;range;x-amz-content-sha256;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """)
        #expect(signed.stringToSign.hasSuffix("\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"))
        #expect(signature(signed.authorization) == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(signed.headers.map(\.0) == ["x-amz-date", "x-amz-content-sha256", "Authorization"])
    }

    @Test("S3 PUT Object: an encoded key, a Date header and x-amz-storage-class")
    func s3PutObject() {
        let body = Data("Welcome to Amazon S3.".utf8)
        #expect(NameBytes.percentEncoded("test$file.text", keepingSlashes: true) == "test%24file.text")
        let signed = Self.s3Signer.sign(
            method: "PUT", path: "/test%24file.text", query: "",
            headers: [
                Self.s3Host, ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ],
            payloadHash: SigV4Signer.payloadHash(body), date: Self.s3Date)
        #expect(
            signed.authorization.contains(
                "SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"))
        #expect(signature(signed.authorization) == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test("S3 GET Bucket lifecycle and list objects: a parameter without a value, and a sorted query")
    func s3BucketQueries() {
        let lifecycle = Self.s3Signer.sign(
            method: "GET", path: "/", query: "lifecycle", headers: [Self.s3Host],
            payloadHash: SigV4Signer.emptyPayloadHash, date: Self.s3Date)
        #expect(lifecycle.canonicalRequest.split(separator: "\n", omittingEmptySubsequences: false)[2] == "lifecycle=")
        #expect(
            signature(lifecycle.authorization) == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        let list = Self.s3Signer.sign(
            method: "GET", path: "/", query: "prefix=J&max-keys=2", headers: [Self.s3Host],
            payloadHash: SigV4Signer.emptyPayloadHash,
            date: Self.s3Date)
        #expect(signature(list.authorization) == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    @Test("a session token is sent and signed as x-amz-security-token")
    func sessionToken() {
        var credentials = Self.s3Signer.credentials
        credentials.sessionToken = "token"
        let signed = SigV4Signer(credentials: credentials, region: "us-east-1").sign(
            method: "GET", path: "/", query: "", headers: [Self.s3Host], payloadHash: SigV4Signer.emptyPayloadHash,
            date: Self.s3Date)
        #expect(signed.canonicalRequest.contains("\nx-amz-security-token:token\n"))
        #expect(signed.headers.contains { $0.0 == "x-amz-security-token" && $0.1 == "token" })
    }
}

@Suite("AWS configuration (rule S4)")
struct AWSConfigurationTests {
    func resolve(_ variables: [String: String], bucket: String = "media") throws -> AWSConfiguration {
        try AWSConfiguration.resolve(bucket: bucket) { variables[$0] }
    }

    @Test("keys from the environment; region and endpoint chains; path style for custom endpoints and dotted names")
    func environmentChain() throws {
        let keys = ["AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "HOME": "/nonexistent"]
        var configuration = try resolve(keys)
        #expect(configuration.region == "us-east-1" && configuration.endpoint == "https://s3.us-east-1.amazonaws.com")
        #expect(
            !configuration.pathStyle && configuration.isAWS && configuration.credentials.source == "$AWS_ACCESS_KEY_ID")
        configuration = try resolve(
            keys.merging(["AWS_DEFAULT_REGION": "eu-west-3", "AWS_REGION": "ap-south-1"]) { $1 }, bucket: "my.media")
        #expect(configuration.region == "ap-south-1" && configuration.pathStyle)
        configuration = try resolve(
            keys.merging(["AWS_ENDPOINT_URL": "http://127.0.0.1:9000/", "AWS_ENDPOINT_URL_S3": "minio.local:9000"]) {
                $1
            })
        #expect(configuration.endpoint == "https://minio.local:9000" && configuration.pathStyle && !configuration.isAWS)
        #expect(throws: StorageError.self) { try resolve(["AWS_ACCESS_KEY_ID": "AKID", "HOME": "/nonexistent"]) }
        #expect(throws: StorageError.self) { try resolve(keys.merging(["AWS_ENDPOINT_URL_S3": "ftp://x"]) { $1 }) }
    }

    @Test("profiles: [name] in credentials, [profile name] in config, comments and nested settings skipped")
    func profiles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("aws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try
            "# mine\n[default]\naws_access_key_id = DEFAULT\naws_secret_access_key = s1\n[dev]\naws_access_key_id=DEV\naws_secret_access_key=s2\naws_session_token = t\n"
            .write(to: folder.appendingPathComponent("credentials"), atomically: true, encoding: .utf8)
        try
            "[profile dev]\nregion = eu-central-1\ns3 =\n  addressing_style = path\nendpoint_url = http://127.0.0.1:9000\n[sso-session x]\nregion = nowhere\n"
            .write(to: folder.appendingPathComponent("config"), atomically: true, encoding: .utf8)
        let files = [
            "AWS_SHARED_CREDENTIALS_FILE": folder.path + "/credentials", "AWS_CONFIG_FILE": folder.path + "/config",
            "HOME": "/nonexistent",
        ]
        let dev = try resolve(files.merging(["AWS_PROFILE": "dev"]) { $1 })
        #expect(
            dev.credentials.accessKeyID == "DEV" && dev.credentials.sessionToken == "t" && dev.region == "eu-central-1")
        #expect(
            dev.endpoint == "http://127.0.0.1:9000" && dev.pathStyle
                && dev.credentials.source.hasPrefix("profile dev in "))
        let plain = try resolve(files)
        #expect(plain.credentials.accessKeyID == "DEFAULT" && plain.region == "us-east-1")
        #expect(throws: StorageError.self) { try resolve(files.merging(["AWS_PROFILE": "absent"]) { $1 }) }
    }
}

@Suite("S3 answers (rule S1)")
struct S3XMLTests {
    @Test("a ListObjectsV2 page with url-encoded keys, prefixes and a continuation")
    func listing() throws {
        let body = Data(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>media</Name><EncodingType>url</EncodingType>
            <IsTruncated>true</IsTruncated><NextContinuationToken>tok&amp;1</NextContinuationToken>
            <Contents><Key>a%20b/%C3%A9+x</Key><LastModified>2026-11-24T06:00:00.000Z</LastModified>
            <ETag>&quot;9dd4e461268c8034f5c8564e155c67a6&quot;</ETag><Size>1</Size></Contents>
            <CommonPrefixes><Prefix>wrong%2F/</Prefix></CommonPrefixes></ListBucketResult>
            """.utf8)
        let page = try S3XML.listing(body, bucket: "media")
        #expect(page.items.map(\.key) == ["a b/é x"] && page.prefixes == ["wrong//"] && page.continuation == "tok&1")
        #expect(page.items[0].etag == "\"9dd4e461268c8034f5c8564e155c67a6\"" && page.items[0].size == 1)
        #expect(S3Bucket.md5(fromEntityTag: page.items[0].etag) == ContentHash.md5Base64(Data("x".utf8)))
        #expect(S3Bucket.md5(fromEntityTag: "\"9dd4e461268c8034f5c8564e155c67a6-2\"") == "")
        #expect(
            try S3XML.error(Data("<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>".utf8))! == (
                "NoSuchKey", "gone"
            ))
        #expect(throws: StorageError.self) { try S3XML.listing(Data("not xml".utf8), bucket: "media") }
    }

    @Test(
        "text arrives whole: entities, character references, CDATA and multi-byte characters across the parser's buffers"
    )
    func textInPieces() throws {
        let long = String(repeating: "é日😀a", count: 2_000)
        let body = Data("<R><A>x &amp; &#233;&#x65E5; <![CDATA[<raw>]]> y</A><B>\(long)</B><C/></R>".utf8)
        let root = try #require(try XMLElement.parse(body))
        #expect(root.name == "R" && root.children.map(\.name) == ["A", "B", "C"])
        #expect(root.text(of: "A") == "x & é日 <raw> y")
        #expect(root.text(of: "B") == long && root.text(of: "C") == "")
        #expect(try S3XML.value("B", in: body) == long)
        #expect(try XMLElement.parse(Data("<R><A></R>".utf8)) == nil, "not well-formed")
        #expect(try XMLElement.parse(Data()) == nil)
    }

    @Test("an answer's external entity is never read: a file's content does not reach the tree")
    func noExternalEntities() throws {
        let secret = FileManager.default.temporaryDirectory.appendingPathComponent(
            "storesh-xxe-\(UUID().uuidString).txt"
        ).path
        try Data("SECRET".utf8).write(to: URL(fileURLWithPath: secret))
        defer { try? FileManager.default.removeItem(atPath: secret) }
        let body = Data(
            """
            <?xml version="1.0"?><!DOCTYPE R [<!ENTITY x SYSTEM "file://\(secret)">]><R><Code>&x;</Code></R>
            """.utf8)
        let text = try XMLElement.parse(body)?.text(of: "Code")
        #expect(text?.contains("SECRET") != true)
    }

    @Test("HTTP dates both ways")
    func httpDates() {
        let time = Timestamp(rfc3339: "1994-11-06T08:49:37Z")!
        #expect(time.httpDate == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Timestamp(httpDate: "Sun, 06 Nov 1994 08:49:37 GMT") == time)
        #expect(Timestamp(httpDate: "Sunday, 06-Nov-94 08:49:37 GMT") == nil)
    }
}

@Suite("--trace")
struct RequestLogTests {
    @Test("the values of parameters that grant access by themselves are left out")
    func redaction() {
        #expect(
            SecretParameters.redacted("https://h/v0/b/b/o/a?alt=media&token=abc-123")
                == "https://h/v0/b/b/o/a?alt=media&token=…")
        #expect(
            SecretParameters.redacted("https://h/upload?uploadType=resumable&upload_id=XYZ&name=a")
                == "https://h/upload?uploadType=resumable&upload_id=…&name=a")
        #expect(
            SecretParameters.redacted("https://s3/b/k?X-Amz-Credential=AKID%2F1&X-Amz-Signature=f00&partNumber=1")
                == "https://s3/b/k?X-Amz-Credential=…&X-Amz-Signature=…&partNumber=1")
        #expect(SecretParameters.redacted("https://h/storage/v1/b/b/o") == "https://h/storage/v1/b/b/o")
    }
}
