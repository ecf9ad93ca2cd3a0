import StoreshCore

/// `login UID [--claim KEY=VALUE…] | login --id-token TOKEN`: who the session's requests are made as.
package struct LoginCommand: LanguageCommand, Equatable {
    package enum Credential: Sendable, Equatable {
        /// A user of the local rules, or of an emulator's unsigned token.
        case user(uid: Word, claims: [Assignment])
        /// A real bucket, used as the user of a Firebase ID token (rule F1).
        case idToken(Word)
    }

    package var credential: Credential

    package init(_ credential: Credential) { self.credential = credential }

    package static let declaration = CommandDeclaration(
        "login", group: .rules, usage: "login UID [--claim KEY=VALUE…] | login --id-token TOKEN",
        summary: "make requests as this user (request.auth.uid, request.auth.token.KEY)",
        details: [
            "Claim values true, false and numbers are typed; others are strings.",
            "On gs:// requests then go through the Firebase Storage API, where the project's rules decide:",
            "login UID makes an unsigned emulator token (emulators only); --id-token takes a user's Firebase",
            "ID token (or set $STORESH_ID_TOKEN, which keeps it out of the history). logout goes back.",
        ],
        example: "login uid --claim admin=false",
        options: ["--claim", "--id-token"],
        sdk: ["Auth.auth().signIn", "getIDToken()", "request.auth"])

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        let uid = try arguments.required("a UID")
        if uid.text == "--id-token", uid.isBare {
            let token = try arguments.optionValue(for: uid)
            try arguments.expectEnd()
            credential = .idToken(token)
            return
        }
        var claims: [Assignment] = []
        while let option = arguments.next() {
            guard option.text == "--claim", option.isBare else { throw arguments.unknownOption(option) }
            let claim = try arguments.optionValue(for: option)
            guard let equals = claim.firstUnquoted("=") else {
                throw Diagnostic.syntax("--claim takes KEY=VALUE, e.g. --claim admin=true", at: claim.location)
            }
            let (key, value) = claim.split(at: equals)
            claims.append(Assignment(key: key, value: value))
        }
        credential = .user(uid: uid, claims: claims)
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        switch credential {
        case .user(let uid, let claims):
            if let signIn = session.target.endUserSignIn {
                let claimValues = Dictionary(claims.map { ($0.key.text, $0.value.text) }) { $1 }
                let who = try session.located(uid.location) { try signIn.signIn(uid: uid.text, claims: claimValues) }
                session.deliver(.access(Self.signedInThroughFirebase(who)))
                return .next
            }
            let rules = try session.requireRules(here)
            rules.identity = Identity(
                uid: uid.text, claims: Dictionary(claims.map { ($0.key.text, ClaimValue(text: $0.value.text)) }) { $1 })
            session.deliver(.signedIn(uid: uid.text))
        case .idToken(let token):
            guard let signIn = session.target.endUserSignIn else {
                throw Diagnostic.running(
                    .invalidArgument(
                        "login --id-token signs in to a real bucket (gs://); a local bucket's rules take login UID."),
                    at: token.location)
            }
            let who = try session.located(token.location) { try signIn.signIn(idToken: token.text) }
            session.deliver(.access(Self.signedInThroughFirebase(who)))
        }
        return .next
    }

    static func signedInThroughFirebase(_ who: String) -> String {
        "signed in as \(who): requests now go through the Firebase Storage API, where the project's security rules decide (logout goes back)"
    }

    package func explain(in session: Session, at here: SourceLocation) async throws -> [ExplainedRequest] {
        switch credential {
        case .user(let uid, _):
            [
                Explainer.local(
                    "sign in as \(uid.text): request.auth.uid is \(uid.text) for the rules; no storage request",
                    swift:
                        "try await Auth.auth().signIn(withCustomToken: token)  // or any other sign-in; Storage then sends the user's ID token",
                    note:
                        "Every later v0 request carries Authorization: Firebase ID_TOKEN, which the rules read as request.auth."
                )
            ]
        case .idToken:
            [
                Explainer.local(
                    "use a user's Firebase ID token: no storage request",
                    swift: "let token = try await Auth.auth().currentUser?.getIDToken()")
            ]
        }
    }
}

/// `logout`: requests made signed out (request.auth is null), or on gs:// through the JSON API again.
package struct LogoutCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "logout", group: .rules, usage: "logout", summary: "make requests signed out (request.auth is null)",
        example: "logout",
        sdk: ["Auth.auth().signOut()"])

    package static let explanation = Explainer.local(
        "sign out: request.auth is null for the rules", swift: "try Auth.auth().signOut()")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        if let signIn = session.target.endUserSignIn {
            signIn.signOut()
            session.deliver(
                .access("signed out: requests go through the Cloud Storage JSON API again (whoami says as whom)"))
            return .next
        }
        try session.requireRules(here).identity = nil
        session.deliver(.signedOut)
        return .next
    }
}

/// `whoami`: who requests are made as.
package struct WhoamiCommand: LocalCommand, Equatable {
    package init() {}

    package static let declaration = CommandDeclaration(
        "whoami", group: .rules, usage: "whoami", summary: "who requests are made as", example: "whoami",
        sdk: ["Auth.auth().currentUser"])

    package static let explanation = Explainer.local(
        "who requests are made as: no request", swift: "let user = Auth.auth().currentUser")

    package init(parsing arguments: inout CommandArguments) throws(Diagnostic) {
        try arguments.expectEnd()
    }

    package func run(in session: Session, at here: SourceLocation) async throws -> Session.Flow {
        if let access = session.target.accessDescription {
            session.deliver(.access(access))
        } else {
            session.deliver(.identity(try session.requireRules(here).identity))
        }
        return .next
    }
}
