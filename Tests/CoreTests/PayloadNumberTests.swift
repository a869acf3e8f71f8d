import Testing
@testable import GeotriggerCore

/// The payload scanner computes most numbers itself (``DecimalNumber``, Clinger's fast path)
/// and must give exactly the Double that `Double(String)` gives, bit for bit, sign of zero included.
@Suite struct PayloadNumberTests {
    /// Keeps the value of the one member `v`.
    struct OneValue: PayloadScanner.Receiver {
        var value: PayloadScanner.Value?
        static func member(named name: UnsafeBufferPointer<UInt8>) -> Bool? {
            name.elementsEqual("v".utf8) ? true : nil
        }
        mutating func set(_ member: Bool, _ value: PayloadScanner.Value) { self.value = value }
    }

    /// The number the scanner reads from `{"v": text}`.
    func scanned(_ text: String) throws -> Double {
        var receiver = OneValue()
        try Array(#"{"v":\#(text)}"#.utf8).withUnsafeBufferPointer { try PayloadScanner.scan($0, into: &receiver) }
        guard case .number(let n)? = receiver.value else {
            Issue.record("'\(text)' did not scan as a number")
            return .nan
        }
        return n
    }

    /// The fast path's digits for `text` (a valid JSON number), fed as the scanner feeds them.
    func decimal(_ text: String) -> DecimalNumber {
        var decimal = DecimalNumber()
        var bytes = Array(text.utf8)[...]
        if bytes.first == UInt8(ascii: "-") {
            decimal.negative = true
            bytes = bytes.dropFirst()
        }
        let mantissa = bytes.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
        let parts = mantissa.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for digit in parts[0] { decimal.append(digit: digit) }
        if parts.count > 1 { for digit in parts[1] { decimal.append(fractionDigit: digit) } }
        if mantissa.count < bytes.count {
            let exponent = String(decoding: bytes.dropFirst(mantissa.count + 1), as: UTF8.self)
            decimal.exponent += Int(exponent) ?? (exponent.hasPrefix("-") ? -100_000 : 100_000)  // saturates, as the scanner does
        }
        return decimal
    }

    func expectSameAsDoubleParser(_ text: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws {
        let expected = try #require(Double(text), sourceLocation: sourceLocation)
        #expect(try scanned(text).bitPattern == expected.bitPattern, "\(text)", sourceLocation: sourceLocation)
        if let fast = decimal(text).exactValue {
            #expect(fast.bitPattern == expected.bitPattern, "fast path for \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test func edgeCasesMatchTheDoubleParser() throws {
        let cases = [
            "0", "-0", "0.0", "-0.0", "0e5", "-0e-5", "0e400", "-0.000e-400", "1", "-1", "0.1", "-0.1", "0.3", "2.5", "1e22",
            "1e23", "-1e22", "1e-22", "1e-23", "9007199254740992", "9007199254740993", "-9007199254740993", "9007199254740991.5",
            "123456789012345678901", "12345678901234567890", "1234567890123456789", "1.7976931348623157e308",
            "1.7976931348623159e308", "5e-324", "2.4703282292062327e-324", "2.2250738585072014e-308", "1e-400", "1e400",
            "0.000000000000000000000001", "0.0000000000000000000001", "0.1000000000000000000000000001",
            "3.14159265358979323846264338327950288", "40.7521345", "-73.9812345", "1796040000.5", "1796040000.53",
            "1796040000123", "1.5e3", "15E-1", "1E+2", "100000000000000000000000", "0.30000000000000004",
            "4.9406564584124654e-324", "8.98846567431158e307", "1.00000000000000000000", "10000000000000000000.0",
            "1" + String(repeating: "0", count: 40), "0." + String(repeating: "0", count: 40) + "1", "1e99999999999999999999",
        ]
        for text in cases { try expectSameAsDoubleParser(text) }
    }

    /// The fast path must actually be taken for the numbers location payloads carry (and only
    /// for numbers it can compute exactly), or the figures above prove nothing about it.
    @Test func fastPathCoversPayloadNumbersOnly() {
        for text in ["40.7521345", "-73.9812345", "1796040000.5", "1796040000", "5", "-0", "0.1", "1e22", "9007199254740992",
                     "123456789012345e-22", "0.0000000000000000000001", "1.5000000000"] {
            #expect(decimal(text).exactValue != nil, "\(text)")
        }
        for text in ["1e23", "9007199254740993", "123456789012345678901", "5e-324", "1.7976931348623157e308",
                     "0.000000000000000000000001", "3.14159265358979323846", "0e400"] {
            #expect(decimal(text).exactValue == nil, "\(text)")
        }
        #expect(decimal("-0").exactValue?.sign == .minus)
    }

    @Test func randomDecimalsMatchTheDoubleParser() throws {
        var random = SplitMix64(seed: 2026)  // deterministic, so a failure can be replayed
        func digits(_ count: UInt64) -> String {
            var text = ""
            for _ in 0..<count { text += String(random.next() % 10) }
            return text
        }
        var fast = 0
        for _ in 0..<5_000 {
            var text = random.next() % 3 == 0 ? "-" : ""
            let integerDigits = random.next() % 21
            text += integerDigits == 0 ? "0" : String(1 + random.next() % 9) + digits(integerDigits - 1)
            if random.next() % 4 != 0 { text += "." + digits(1 + random.next() % 20) }
            if random.next() % 3 == 0 {
                text += ["e", "E", "e-", "e+"][Int(random.next() % 4)] + String(random.next() % (random.next() % 2 == 0 ? 30 : 330))
            }
            if decimal(text).exactValue != nil { fast += 1 }
            try expectSameAsDoubleParser(text)
        }
        #expect(fast > 1_000)  // both paths were exercised
        #expect(fast < 4_000)
    }
}
