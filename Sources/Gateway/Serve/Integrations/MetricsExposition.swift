/// Text in the Prometheus text exposition format (version 0.0.4), as node_exporter's textfile
/// collector reads it: per metric family a `# HELP` and a `# TYPE` line, then one line per
/// series, `name{label="value",...} value`, without timestamps.
///
/// Label values are escaped as the format wants (`\` → `\\`, `"` → `\"`, newline → `\n`),
/// HELP texts likewise (`\` and newline). Within a family the series are sorted by their
/// labels and a label set given twice is written once (the last value given), so the text
/// never holds a duplicate series. Metric and label names are the caller's constants.
struct MetricsExposition {
    /// A family's `# TYPE`.
    enum Kind: String {
        case counter, gauge
    }

    /// One series: its labels (name, value) in order, and its value.
    struct Series {
        var labels: [(name: String, value: String)]
        var value: Double

        init(_ value: Double, labels: [(name: String, value: String)] = []) {
            self.labels = labels
            self.value = value
        }

        init(_ value: Int, labels: [(name: String, value: String)] = []) {
            self.init(Double(value), labels: labels)
        }
    }

    /// The text so far.
    private(set) var text = ""
    private var families: Set<String> = []

    /// Appends the family `name` with its `help` and `series` (an empty family is written with
    /// its HELP and TYPE only). A name given a second time is ignored: one family per name.
    mutating func family(_ name: String, _ kind: Kind, help: String, _ series: [Series]) {
        guard families.insert(name).inserted else { return }
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
        var lines: [String: String] = [:]
        for s in series {
            let labels = s.labels.isEmpty ? "" : "{" + s.labels.map { "\($0.name)=\"\(Self.escapeLabel($0.value))\"" }.joined(separator: ",") + "}"
            lines[labels] = name + labels + " " + Self.format(s.value) + "\n"
        }
        for key in lines.keys.sorted() { text += lines[key]! }
    }

    /// A label value escaped for the exposition format.
    static func escapeLabel(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\n") }) else {
            return value
        }
        var out = ""
        for c in value.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A HELP text escaped for the exposition format (backslash and newline).
    static func escapeHelp(_ text: String) -> String {
        var out = ""
        for c in text.unicodeScalars {
            switch c {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }

    /// A sample value: whole numbers without a fraction, `+Inf`, `-Inf`, `NaN` as the format spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
