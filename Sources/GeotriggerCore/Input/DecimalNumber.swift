/// The digits of a JSON number as ``PayloadScanner`` reads them, so that most payload numbers
/// (`40.7521345`, `1796040000.5`) become a Double without a detour through a String and
/// `strtod`, which cost ~12 % of decoding.
///
/// The number is `significand × 10^exponent`. When the significand fits in a Double's 53 bits
/// and |exponent| <= 22, both the significand and `10^|exponent|` are exact Doubles, and one
/// IEEE multiplication or division of two exact values is correctly rounded: the result is the
/// very Double a correct parser (such as `Double(String)`) returns (Clinger's fast path).
/// Anything else has no ``exactValue`` and goes to `Double(String)`.
struct DecimalNumber {
    var negative = false
    /// The significant digits read so far (at most ``maxDigits`` of them).
    private(set) var significand: UInt64 = 0
    private var digits = 0
    /// A non-zero digit did not fit in ``significand``: the value is not exact.
    private var truncated = false
    /// The power of ten that scales ``significand``: minus the fraction digits kept, plus the
    /// integer digits that did not fit, plus the written exponent.
    var exponent = 0

    /// 19 decimal digits always fit in a UInt64 (10^19 - 1 < 2^64).
    private static let maxDigits = 19

    /// Exactly representable powers of ten: 10^22 is the largest (5^22 < 2^53).
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// Adds a digit (an ASCII byte) of the integer part.
    mutating func append(digit: UInt8) {
        let d = UInt64(digit &- UInt8(ascii: "0"))
        if significand == 0, d == 0 { return }  // a leading zero: not significant
        if digits < DecimalNumber.maxDigits {
            significand = significand &* 10 &+ d
            digits += 1
        } else {
            exponent += 1
            if d != 0 { truncated = true }
        }
    }

    /// Adds a digit (an ASCII byte) of the fraction.
    mutating func append(fractionDigit digit: UInt8) {
        let d = UInt64(digit &- UInt8(ascii: "0"))
        if significand == 0, d == 0 {
            exponent -= 1  // 0.001: leading zeros only scale
        } else if digits < DecimalNumber.maxDigits {
            significand = significand &* 10 &+ d
            digits += 1
            exponent -= 1
        } else if d != 0 {
            truncated = true
        }
    }

    /// The correctly rounded value, when the fast path can compute it; nil otherwise.
    var exactValue: Double? {
        guard !truncated, significand <= 1 << 53, (-22...22).contains(exponent) else { return nil }
        var value = Double(significand)
        if exponent < 0 {
            value /= DecimalNumber.powersOfTen[-exponent]
        } else {
            value *= DecimalNumber.powersOfTen[exponent]
        }
        return negative ? -value : value
    }
}
