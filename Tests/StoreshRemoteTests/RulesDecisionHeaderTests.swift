import StoreshWire
import Testing

@Suite("A rules decision in a header")
struct RulesDecisionHeaderTests {
    @Test("the words travel in printable ASCII and come back as they were; a long decision is cut, and says so")
    func roundTrip() {
        let words =
            "denied get on gs://b/caf\u{E9} 100%: no allow granted it:\n  `allow read: if false;` at storage.rules:4"
        let value = RulesDecisionHeader.value(words)
        #expect(value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
        #expect(RulesDecisionHeader.decision(from: value) == words)
        let long = RulesDecisionHeader.value(String(repeating: "reason ", count: 2000))
        #expect(long.utf8.count <= RulesDecisionHeader.maximumBytes)
        #expect(RulesDecisionHeader.decision(from: long).hasSuffix("\u{2026}"))
    }
}
