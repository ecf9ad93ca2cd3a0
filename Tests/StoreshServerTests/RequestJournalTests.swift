import HTTPTypes
import Testing

@testable import StoreshServer

/// What the page's request log says each request stands for (issue 25): the Swift SDK call whose request it is, as
/// the Firebase SDK for Apple platforms sends it, or the JSON API's method.
@Suite("The request log's calls")
struct RequestJournalTests {
    func call(_ method: HTTPRequest.Method, _ path: String, _ query: String? = nil, override: String? = nil) -> String?
    {
        ServedExchange.call(method: method, path: path, query: query, methodOverride: override)
    }

    @Test("each v0 request as the SDK call that sends it")
    func firebaseCalls() {
        let object = "/v0/b/app/o/photos%2Fcat%20%22one%22.jpg"
        let reference = #"storage.reference().child("photos/cat \"one\".jpg")"#
        #expect(call(.get, object) == reference + ".getMetadata()")
        #expect(call(.head, object) == reference + ".getMetadata()")
        #expect(call(.get, object, "alt=media&token=x") == reference + ".data(maxSize: 10 * 1024 * 1024)")
        #expect(call(.patch, object) == reference + ".updateMetadata(newMetadata)")
        #expect(call(.put, object, override: "PATCH") == reference + ".updateMetadata(newMetadata)")
        #expect(call(.delete, object) == reference + ".delete()")
        #expect(
            call(.post, "/v0/b/app/o", "name=photos%2Fcat.jpg")
                == #"storage.reference().child("photos/cat.jpg").putDataAsync(data, metadata: metadata)"#)
        #expect(
            call(.post, "/v0/b/app/o", "name=a&upload_id=1&upload_protocol=resumable")
                == "(the rest of a resumable putDataAsync or putFileAsync)")
        #expect(
            call(.get, "/v0/b/app/o", "prefix=photos%2F&delimiter=%2F&maxResults=10&pageToken=t")
                == #"storage.reference().child("photos").list(maxResults: 10, pageToken: "t")"#)
        #expect(call(.get, "/v0/b/app/o", "prefix=&delimiter=%2F") == "storage.reference().listAll()")
    }

    @Test("the JSON API's and the internal API's requests by their methods; a path that names nothing, by none")
    func otherCalls() {
        #expect(call(.get, "/storage/v1/b/app/o", "prefix=a%2F") == "objects.list (Cloud Storage JSON API)")
        #expect(call(.patch, "/storage/v1/b/app/o/a") == "objects.patch (Cloud Storage JSON API)")
        #expect(
            call(.post, "/upload/storage/v1/b/app/o", "uploadType=multipart")
                == "objects.insert (Cloud Storage JSON API upload)")
        #expect(call(.post, "/internal/reset")?.hasPrefix("clearStorage()") == true)
        #expect(call(.get, "/nothing/here") == nil)
        #expect(
            ServedExchange.reasonPhrase(403) == "Forbidden" && ServedExchange.reasonPhrase(308) == "Resume Incomplete")
    }

    @Test("who made a request, and why no rule decided it when none did")
    func callers() {
        #expect(
            ServedExchange.caller(nil, path: "/storage/v1/b/app/o", query: nil, status: 200).name == "the administrator"
        )
        #expect(
            ServedExchange.caller(.administrator, path: "/v0/b/app/o", query: nil, status: 200).rulesNote
                == "rules do not apply to the owner")
        let download = ServedExchange.caller(nil, path: "/v0/b/app/o/a", query: "alt=media&token=t", status: 200)
        #expect(download.name == "signed out" && download.rulesNote?.contains("download token") == true)
        #expect(
            ServedExchange.caller(.person(nil), path: "/v0/b/app/o/a", query: nil, status: 400).rulesNote?.contains(
                "refused before") == true)
        #expect(
            ServedExchange.caller(nil, path: "/internal/reset", query: nil, status: 200).name
                == "the emulator's test tools")
    }

    @Test("the log keeps the last requests, newest first, numbered from 1, and tells its listeners")
    func journal() async {
        let journal = RequestJournal()
        let (arrivals, end) = journal.arrivals()
        for _ in 0..<(RequestJournal.capacity + 5) {
            journal.record { number in
                ServedExchange(
                    number: number, time: .init(microseconds: 0), method: .get, path: "/v0/b/app/o", query: nil,
                    methodOverride: nil, status: 200, milliseconds: 1, who: nil, verdicts: [])
            }
        }
        let recent = journal.recent(3)
        #expect(
            recent.map(\.number) == [
                RequestJournal.capacity + 5, RequestJournal.capacity + 4, RequestJournal.capacity + 3,
            ])
        #expect(journal.recent(RequestJournal.capacity * 2).count == RequestJournal.capacity)
        var iterator = arrivals.makeAsyncIterator()
        #expect(await iterator.next() != nil, "told of the requests")
        end()
        journal.close()
    }

    @Test("which requests are the API's: not the page, its events, a browser's icon or a preflight")
    func recorded() {
        #expect(RequestJournal.records(method: .get, path: "/v0/b/app/o"))
        #expect(!RequestJournal.records(method: .get, path: "/"))
        #expect(!RequestJournal.records(method: .get, path: "/_storesh/events"))
        #expect(!RequestJournal.records(method: .get, path: "/favicon.ico"))
        #expect(!RequestJournal.records(method: .options, path: "/v0/b/app/o"))
    }
}
