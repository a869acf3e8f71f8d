/// Number to text conversions: the implicit one (concatenation, `Text(n)`) and
/// `Text(n, pattern)`.
enum ArcadeNumberFormat {
    /// The implicit text of a number, as Arcade (JavaScript-based) writes it: integers without a
    /// fraction (`3`, `-0` as `0`), other values in the shortest form that reads back exactly
    /// (`0.1`, `2.5`), `NaN`, `Infinity`, `-Infinity`. Very large or small magnitudes use
    /// Swift's exponent form (`1e+16`, `1e-07`), which differs from JavaScript in padding only.
    static func text(_ n: Double) -> String {
        if n.isNaN { return "NaN" }
        if n.isInfinite { return n < 0 ? "-Infinity" : "Infinity" }
        if n == n.rounded(), abs(n) < 1e15 { return String(Int64(n)) }
        return "\(n)"
    }

    /// Formats with a pattern of digit placeholders in the style of Arcade's `Text`:
    /// `0` a digit always written, `#` a digit written only when significant, `,` thousands
    /// grouping (groups of 3) and `.` the decimal point (always `.`, no locale), with any other
    /// text before or after copied as is, e.g. `#,###.00` writes 1234.5 as `1,234.50` and
    /// `000` writes 7 as `007`.
    ///
    /// Choices where the reference is silent: at least one integer digit is always written
    /// (`#.##` writes 0.5 as `0.5`); rounding is half away from zero, like `Round`; a `%`
    /// outside the digits multiplies by 100; separate negative sub-patterns (`;`) are not
    /// supported; at most 15 decimals and 64 forced integer digits; a pattern without `0` or `#` gives the implicit text.
    static func format(_ n: Double, pattern: String) -> String {
        let chars = Array(pattern)
        guard let first = chars.firstIndex(where: { $0 == "#" || $0 == "0" }),
            let last = chars.lastIndex(where: { $0 == "#" || $0 == "0" })
        else { return text(n) }
        var start = first
        while start > 0, chars[start - 1] == "," || chars[start - 1] == "." { start -= 1 }
        let end = last + 1
        let prefix = String(chars[..<start])
        let suffix = String(chars[end...])
        let body = chars[start..<end]
        let point = body.firstIndex(of: ".")
        let integerPattern = point.map { body[body.startIndex..<$0] } ?? body[...]
        let fractionPattern = point.map { body[body.index(after: $0)...] } ?? []
        let minimumIntegerDigits = min(64, integerPattern.filter { $0 == "0" }.count)
        let grouping = integerPattern.contains(",")
        // At most 15 decimals: a Double holds no more, and 10^15 still fits the integer math.
        let maximumFractionDigits = min(15, fractionPattern.filter { $0 == "0" || $0 == "#" }.count)
        let minimumFractionDigits = min(maximumFractionDigits, fractionPattern.filter { $0 == "0" }.count)

        var value = n
        if prefix.contains("%") || suffix.contains("%") { value *= 100 }
        guard value.isFinite else { return prefix + text(value) + suffix }
        var scale = 1.0
        for _ in 0..<maximumFractionDigits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9e15 else { return prefix + text(value) + suffix }
        let units = Int64(scaled)
        let integerPart = units / Int64(scale)
        var fraction = units % Int64(scale)

        var integerDigits = integerPart == 0 && minimumIntegerDigits == 0 ? "0" : String(integerPart)
        if integerPart == 0, minimumIntegerDigits > 0 { integerDigits = "" }
        if integerDigits.count < minimumIntegerDigits {
            integerDigits = String(repeating: "0", count: minimumIntegerDigits - integerDigits.count) + integerDigits
        }
        if grouping, integerDigits.count > 3 {
            var grouped = ""
            for (i, c) in integerDigits.enumerated() {
                if i > 0, (integerDigits.count - i) % 3 == 0 { grouped.append(",") }
                grouped.append(c)
            }
            integerDigits = grouped
        }
        var fractionDigits = ""
        if maximumFractionDigits > 0 {
            var digits = [Character](repeating: "0", count: maximumFractionDigits)
            var i = maximumFractionDigits - 1
            while fraction > 0, i >= 0 {
                digits[i] = Character(String(fraction % 10))
                fraction /= 10
                i -= 1
            }
            var count = maximumFractionDigits
            while count > minimumFractionDigits, digits[count - 1] == "0" { count -= 1 }
            fractionDigits = String(digits[..<count])
        }
        let sign = value < 0 && units != 0 ? "-" : ""
        return prefix + sign + integerDigits + (fractionDigits.isEmpty ? "" : "." + fractionDigits) + suffix
    }
}
