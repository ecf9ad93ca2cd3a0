/// Text made safe inside HTML or XML, in element text and in attribute values: the five characters that markup
/// gives a meaning, as character references (`&#39;` rather than `&apos;`, which HTML 4 lacks). The page of
/// `storesh serve` and the documents sent to S3 both write it.
package enum MarkupText {
    package static func escaped(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.unicodeScalars.append(character)
            }
        }
        return output
    }
}
