// Shared by every fuzz target (compiled into each; see deploy/fuzz.sh). Not part of any
// SwiftPM target: Package.swift never sees Tests/Fuzz.
import GeotriggerCore

/// The libFuzzer input as a byte array (the readers take `[UInt8]`).
func fuzzBytes(_ data: UnsafePointer<UInt8>, _ size: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: data, count: size))
}

/// Traps with `message` when `condition` is false. `fatalError` keeps its message in `-O`
/// builds (a `precondition` would not), so a crash report says which property broke.
func fuzzCheck(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { fatalError("fuzz property violated: \(message())") }
}

/// A fixed gateway clock for every target (2026-01-01T00:00:00Z), so runs are reproducible.
let fuzzNow: Double = 1_767_225_600

/// `value` with every non-finite number replaced by `null`, as ``JSONValue/serialized()``
/// writes them.
func finiteNumbers(_ value: JSONValue) -> JSONValue {
    switch value {
    case .number(let n) where !n.isFinite: return .null
    case .array(let a): return .array(a.map(finiteNumbers))
    case .object(let o): return .object(JSONObject(o.entries.map { ($0.key, finiteNumbers($0.value)) }))
    default: return value
    }
}
