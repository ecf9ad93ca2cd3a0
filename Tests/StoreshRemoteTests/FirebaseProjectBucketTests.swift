import StoreshCore
import Testing

@testable import StoreshRemote

/// A `gs://` bucket's two modes are two buckets; the session's bucket forwards to the one in force (rule F1).
@Suite("FirebaseProjectBucket: the JSON API's bucket, or after login the end user's")
struct FirebaseProjectBucketTests {
    func bucket(emulator: Bool) -> FirebaseProjectBucket {
        let endpoint =
            emulator
            ? CloudStorageEndpoint(baseURL: "http://127.0.0.1:9", emulatorVariable: "STORAGE_EMULATOR_HOST") : .google
        return FirebaseProjectBucket(
            CloudStorageBucket(
                name: "demo-app.appspot.com", endpoint: endpoint, http: RemoteHTTP(), authorizer: EmulatorOwner()))
    }

    @Test("login and logout switch what every request goes through, and what the bucket says of itself")
    func switching() throws {
        let project = bucket(emulator: true)
        defer { project.close() }
        #expect(project.current is CloudStorageBucket)
        #expect(project.guardsChanges && project.accessDescription?.contains("Cloud Storage JSON API") == true)
        let who = try project.signIn(uid: "ada", claims: ["admin": "true"])
        #expect(who == "user ada (an unsigned emulator token)")
        let signedIn = try #require(project.current as? FirebaseStorageBucket)
        #expect(signedIn.baseURL == "http://127.0.0.1:9" && signedIn.user.uid == "ada")
        #expect(!project.guardsChanges && project.accessDescription?.contains("Firebase Storage API v0") == true)
        #expect(project.capabilities == [.immediateReads] && project.immediateReads != nil)
        project.signOut()
        #expect(project.current is CloudStorageBucket && project.guardsChanges)
    }

    @Test("an unsigned token is for emulators only; an ID token is one word")
    func refusals() {
        let real = bucket(emulator: false)
        defer { real.close() }
        #expect(throws: StorageError.self) { try real.signIn(uid: "ada", claims: [:]) }
        #expect(throws: StorageError.self) { try real.signIn(idToken: "two words") }
        #expect(real.current is CloudStorageBucket)
        #expect(FirebaseProjectBucket.projectID(ofBucket: "my-app.firebasestorage.app") == "my-app")
    }
}
