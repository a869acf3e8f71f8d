internal import CGPS

/// One report read from gpsd, reduced to what the reader needs.
public enum GPSDReport: Sendable, Equatable {
    /// A TPV (time-position-velocity) report.
    case tpv(TPVReport)
    /// Any other report class (VERSION, DEVICES, WATCH, SKY, GST, ...), named by its class.
    case other(className: String)
    /// Nothing complete yet (libgps read part of a line).
    case incomplete

    /// The `class` member of one gpsd JSON report line, e.g. `TPV`, or nil if it has none.
    ///
    /// gpsd writes the class first (`{"class":"TPV",...}`), as libgps expects; this looks for
    /// the first `"class":"` and reads up to the closing quote.
    public static func className(ofJSON line: some Collection<UInt8>) -> String? {
        let key = Array(#""class":""#.utf8)
        let bytes = Array(line.prefix(4096))
        guard bytes.count > key.count else { return nil }
        var index = 0
        while index + key.count <= bytes.count {
            if bytes[index..<index + key.count].elementsEqual(key) {
                let start = index + key.count
                guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else {
                    return nil
                }
                return String(decoding: bytes[start..<end], as: UTF8.self)
            }
            index += 1
        }
        return nil
    }
}
