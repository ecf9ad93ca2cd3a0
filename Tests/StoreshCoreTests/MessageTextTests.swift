import Testing
@testable import StoreshCore

@Suite("Messages for people")
struct MessageTextTests {
    @Test("counts are grouped by thousands whatever the locale, and the noun agrees")
    func counts() {
        #expect(MessageText.counted(1, "object") == "1 object")
        #expect(MessageText.counted(0, "object") == "0 objects")
        #expect(MessageText.counted(999, "object") == "999 objects")
        #expect(MessageText.counted(4812, "object") == "4,812 objects")
        #expect(MessageText.grouped(1_000_000) == "1,000,000")
        #expect(MessageText.grouped(-12345) == "-12,345")
    }

    @Test("a name with control characters is quoted, so it cannot split a line")
    func oneLine() {
        #expect(MessageText.oneLine("images/a.jpg") == "images/a.jpg")
        #expect(MessageText.oneLine("a\nb") == "\"a\\nb\"")
    }
}
