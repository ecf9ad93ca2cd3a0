import StoreshCore
import Testing

@Suite("Cloud Storage's matchGlob")
struct MatchGlobTests {
    let names = ["foo/bar", "foo/baz", "foo/foobar", "foobar"]

    func matched(_ glob: String) throws -> [String] {
        let compiled = try MatchGlob(glob)
        return names.filter { compiled.matches($0) }
    }

    @Test("the service's own examples: *, **, **/, sets, negated ranges, alternatives")
    func servicesExamples() throws {
        #expect(try matched("foo*bar") == ["foobar"])
        #expect(try matched("foo**bar") == ["foo/bar", "foo/foobar", "foobar"])
        #expect(try matched("**/foobar") == ["foo/foobar", "foobar"])
        #expect(try matched("*/ba[rz]") == ["foo/bar", "foo/baz"])
        #expect(try matched("*/ba[!a-y]") == ["foo/baz"])
        #expect(try matched("**/{foobar,baz}") == ["foo/baz", "foo/foobar", "foobar"])
        #expect(try matched("foo/{foo*,*baz}") == ["foo/baz", "foo/foobar"])
        #expect(try MatchGlob("a?c").matches("abc") && !MatchGlob("a?c").matches("a/c"))
        #expect(try MatchGlob("été/*.jpg").matches("été/plage.jpg"))
    }

    @Test("malformed globs are refused with what is wrong; a hostile one matches in bounded time")
    func refusalsAndBounds() throws {
        for glob in ["", "a{b", "a{b{c}}", "[abc", "[z-a]", String(repeating: "{a,b}", count: 9)] {
            #expect(throws: StorageError.self, "\(glob)") { try MatchGlob(glob) }
        }
        // Backtracking would take exponential time here; the table takes pattern × name steps.
        let hostile = try MatchGlob(String(repeating: "*a", count: 200) + "b")
        #expect(!hostile.matches(String(repeating: "a", count: 1000)))
    }
}
