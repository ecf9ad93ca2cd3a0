import Foundation
import StoreshCore

/// Where an S3 bucket is and who asks (rule S4): credentials, region and endpoint from the environment, then the
/// profile (`$AWS_PROFILE`, else `default`) in the shared credentials and config files, as the AWS CLI and SDKs
/// read them. A file that is there but names no usable key is an error naming the file and the profile.
///
/// No secret is ever part of a message: messages name variables, files and profiles.
package struct AWSConfiguration: Sendable {
    package var credentials: AWSCredentials
    package var region: String
    /// Without a trailing `/`: `https://s3.us-east-1.amazonaws.com`, `http://127.0.0.1:9000`.
    package var endpoint: String
    /// True for a custom endpoint (MinIO, R2, an emulator): the bucket goes in the path, not in the host name.
    package var pathStyle: Bool
    /// Where the endpoint came from, for `whoami`: "$AWS_ENDPOINT_URL_S3", "AWS (region us-east-1)".
    package var endpointSource: String
    /// True for AWS itself, which refuses a copy whose `x-amz-copy-source-if-match` fails. An S3-compatible store
    /// may ignore it (moto does), so there each update reads the object just before its copy (rule S3).
    package var isAWS: Bool { endpointSource.hasPrefix("AWS") }

    package init(credentials: AWSCredentials, region: String, endpoint: String, pathStyle: Bool, endpointSource: String)
    {
        self.credentials = credentials
        self.region = region
        self.endpoint = endpoint
        self.pathStyle = pathStyle
        self.endpointSource = endpointSource
    }

    /// The configuration the environment and the shared files give, for `bucket`.
    package static func resolve(bucket: String, environment: (String) -> String?) throws -> AWSConfiguration {
        func variable(_ name: String) -> String? {
            environment(name).flatMap {
                $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces)
            }
        }
        let home = variable("HOME") ?? NSHomeDirectory()
        let profileName = variable("AWS_PROFILE") ?? variable("AWS_DEFAULT_PROFILE") ?? "default"
        let credentialsPath = variable("AWS_SHARED_CREDENTIALS_FILE") ?? home + "/.aws/credentials"
        let configPath = variable("AWS_CONFIG_FILE") ?? home + "/.aws/config"
        let credentialsFile = try SharedConfigFile(path: credentialsPath, isConfig: false)
        let configFile = try SharedConfigFile(path: configPath, isConfig: true)
        let profileExplicit = variable("AWS_PROFILE") != nil || variable("AWS_DEFAULT_PROFILE") != nil
        if profileExplicit, credentialsFile?.profiles[profileName] == nil, configFile?.profiles[profileName] == nil {
            throw StorageError(
                .unauthenticated,
                "The AWS profile \(profileName) ($AWS_PROFILE) is in neither \(credentialsPath) nor \(configPath).")
        }
        // A profile's setting: the credentials file first, then the config file.
        func setting(_ key: String) -> (value: String, file: String)? {
            if let value = credentialsFile?.profiles[profileName]?[key], !value.isEmpty {
                return (value, credentialsPath)
            }
            if let value = configFile?.profiles[profileName]?[key], !value.isEmpty { return (value, configPath) }
            return nil
        }

        var tried: [String] = []
        let credentials: AWSCredentials
        if let key = variable("AWS_ACCESS_KEY_ID") {
            guard let secret = variable("AWS_SECRET_ACCESS_KEY") else {
                throw StorageError(
                    .unauthenticated,
                    "$AWS_ACCESS_KEY_ID is set but $AWS_SECRET_ACCESS_KEY is not; set both (or neither, to use a profile)."
                )
            }
            credentials = AWSCredentials(
                accessKeyID: key, secretAccessKey: secret, sessionToken: variable("AWS_SESSION_TOKEN"),
                source: "$AWS_ACCESS_KEY_ID")
        } else if let key = setting("aws_access_key_id") {
            guard let secret = setting("aws_secret_access_key") else {
                throw StorageError(
                    .unauthenticated,
                    "The profile \(profileName) in \(key.file) has aws_access_key_id but no aws_secret_access_key.")
            }
            credentials = AWSCredentials(
                accessKeyID: key.value, secretAccessKey: secret.value,
                sessionToken: setting("aws_session_token")?.value,
                source: "profile \(profileName) in \(key.file)")
        } else {
            tried.append("$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (not set)")
            tried.append(
                "profile \(profileName) in \(credentialsPath)"
                    + (credentialsFile == nil ? " (no such file)" : " (no aws_access_key_id)"))
            tried.append(
                "profile \(profileName) in \(configPath)"
                    + (configFile == nil ? " (no such file)" : " (no aws_access_key_id)"))
            var hint = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run `aws configure` to write a profile"
            if setting("sso_session") != nil || setting("sso_start_url") != nil || setting("role_arn") != nil
                || setting("credential_process") != nil
            {
                hint =
                    "the profile \(profileName) uses SSO, a role or a credential process, which storesh does not run: "
                    + "export its keys with `aws configure export-credentials --profile \(profileName) --format env`"
            }
            throw StorageError(
                .unauthenticated,
                "No AWS credentials were found. Tried: \(tried.joined(separator: "; ")). To fix: \(hint).")
        }

        let region = variable("AWS_REGION") ?? variable("AWS_DEFAULT_REGION") ?? setting("region")?.value ?? "us-east-1"
        let endpoint: String
        let source: String
        if let url = variable("AWS_ENDPOINT_URL_S3") {
            (endpoint, source) = (url, "$AWS_ENDPOINT_URL_S3")
        } else if let url = variable("AWS_ENDPOINT_URL") {
            (endpoint, source) = (url, "$AWS_ENDPOINT_URL")
        } else if let url = setting("endpoint_url") {
            (endpoint, source) = (url.value, "endpoint_url of profile \(profileName) in \(url.file)")
        } else {
            let configuration = AWSConfiguration(
                credentials: credentials, region: region, endpoint: "https://s3.\(region).amazonaws.com",
                // A name with dots does not match the service's certificate as a host name.
                pathStyle: bucket.contains("."), endpointSource: "AWS, region \(region)")
            return configuration
        }
        var url = endpoint
        if !url.contains("://") { url = "https://" + url }
        while url.hasSuffix("/") { url.removeLast() }
        guard let components = URLComponents(string: url), let scheme = components.scheme,
            ["http", "https"].contains(scheme),
            components.host?.isEmpty == false
        else {
            throw StorageError(.invalidArgument, "\(source) is \(endpoint), which is not an http:// or https:// URL.")
        }
        return AWSConfiguration(
            credentials: credentials, region: region, endpoint: url, pathStyle: true, endpointSource: source)
    }
}

/// An AWS shared credentials or config file: `[name]` sections (`[profile name]` in the config file, but for
/// `[default]`) of `key = value` lines; `#` and `;` start comments; indented lines continue a nested setting,
/// which storesh does not need and skips.
struct SharedConfigFile {
    var profiles: [String: [String: String]] = [:]

    /// Nil when there is no such file.
    init?(path: String, isConfig: Bool) throws {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw StorageError(.unauthenticated, "\(path) cannot be read.")
        }
        var section: String?
        for (index, rawLine) in String(decoding: data, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        ).enumerated() {
            if rawLine.first == " " || rawLine.first == "\t" { continue }
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else {
                    throw StorageError(.unauthenticated, "\(path):\(index + 1): a section header must end with ']'.")
                }
                var name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if isConfig {
                    if name.hasPrefix("profile ") {
                        name = name.dropFirst("profile ".count).trimmingCharacters(in: .whitespaces)
                    } else if name != "default" {
                        section = nil  // [sso-session …], [services …]: not profiles
                        continue
                    }
                }
                section = name
                profiles[name, default: [:]] = profiles[name] ?? [:]
                continue
            }
            guard let section, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            profiles[section]?[key] = value
        }
    }
}
