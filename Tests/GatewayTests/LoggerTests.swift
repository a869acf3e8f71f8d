@testable import Gateway
import Testing

@Suite struct LoggerTests {
    /// A metadata value stays one token of one line, whatever a client put in it.
    @Test func metadataValuesAreQuotedAndEscapedOnlyWhenNeeded() {
        #expect(Logger.quoted("owntracks/bob/phone") == "owntracks/bob/phone")
        #expect(Logger.quoted("") == #""""#)
        #expect(Logger.quoted("two words") == #""two words""#)
        #expect(Logger.quoted("a=1") == #""a=1""#)
        #expect(Logger.quoted(#"say "hi""#) == #""say \"hi\"""#)
        #expect(Logger.quoted(#"C:\dir"#) == #""C:\\dir""#)
        #expect(Logger.quoted("line\nerror [x] forged") == #""line\nerror [x] forged""#)
        #expect(Logger.quoted("\u{1B}[31mred\r\t") == #""\u{1b}[31mred\r\t""#)
        #expect(Logger.quoted("a\u{2028}b\u{85}") == #""a\u{2028}b\u{85}""#)
        #expect(Logger.quoted("café ✓") == #""café ✓""#)
    }

    /// The message is not quoted, but a control character in it cannot break the line either.
    @Test func messagesKeepQuotesButNotLineBreaks() {
        #expect(Logger.escaped(#"the "x" fence"#) == #"the "x" fence"#)
        #expect(Logger.escaped("one\ntwo") == #"one\ntwo"#)
    }
}
