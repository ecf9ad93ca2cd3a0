import Foundation
import StoreshCore
import StoreshWire
import Testing

@Suite("The v0 API's list document, written and read by one owner (StoreshWire)")
struct FirebaseListDocumentTests {
    @Test("a page goes through the document and back unchanged, names as bytes")
    func roundTrip() throws {
        let pages = [
            ListPage(),
            ListPage(
                prefixes: ["a", "caf\u{E9}", "cafe\u{301}"], items: ["n/x.txt", "n/\u{0}nul", "n/한"],
                nextPageToken: "AQh0"),
            ListPage(items: ["only"]),
        ]
        for page in pages {
            let document = FirebaseWire.listDocument(page, bucket: "app")
            let back = try FirebaseWire.listPage(Data(document.serialized.utf8))
            #expect(back == page)
            #expect(
                back.prefixes.map { Array($0.utf8) } == page.prefixes.map { Array($0.utf8) },
                "NFC and NFD stay two names")
        }
    }

    @Test("the document is the service's shape: prefixes end in /, items name their bucket, no token on the last page")
    func shape() throws {
        let written = FirebaseWire.listDocument(ListPage(prefixes: ["photos"], items: ["a.jpg"]), bucket: "app")
            .serialized
        #expect(written == #"{"prefixes":["photos/"],"items":[{"name":"a.jpg","bucket":"app"}]}"#)
        // As the service answers a folder with nothing in it, and an empty token.
        #expect(try FirebaseWire.listPage(Data(#"{"nextPageToken":""}"#.utf8)) == ListPage())
        #expect(throws: StorageError.self) { try FirebaseWire.listPage(Data("[]".utf8)) }
    }
}
