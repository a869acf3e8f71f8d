/// Where a compiled node came from, ready to put in an ``ArcadeError``.
struct ArcadeLocation: Sendable {
    var line: Int?
    var column: Int

    func error(_ message: String) -> ArcadeError {
        ArcadeError(message, line: line, column: column)
    }
}

/// The mutable state of one evaluation: the script's variables (one slot each, resolved at
/// compile time), the step count and the values a script produces. The profile variables are
/// passed beside it, borrowed, so an evaluation never copies the context.
struct ArcadeFrame {
    var locals: [ArcadeValue]
    var steps = 0
    /// The value of the last expression statement run: the result of a script without `return`.
    var lastValue: ArcadeValue = .null
    var returnValue: ArcadeValue = .null

    init(localCount: Int) {
        self.locals = localCount == 0 ? [] : Array(repeating: .null, count: localCount)
    }

    /// Counts `count` steps and stops the evaluation when the limit is passed.
    @inline(__always)
    mutating func step(_ location: ArcadeLocation, count: Int = 1) throws(ArcadeError) {
        steps &+= count
        if steps > ArcadeLimits.maximumSteps {
            throw location.error("evaluation stopped after \(ArcadeLimits.maximumSteps) steps")
        }
    }

    /// Charges one step per element inside a container value about to be nested in another
    /// container, so no evaluation builds (by sharing) a value larger than the step limit.
    mutating func chargeContents(of value: ArcadeValue, _ location: ArcadeLocation) throws(ArcadeError) {
        switch value {
        case .array(let elements):
            try step(location, count: elements.count)
            for element in elements { try chargeContents(of: element, location) }
        case .dictionary(let dictionary):
            try step(location, count: dictionary.count)
            for entry in dictionary.entries { try chargeContents(of: entry.value, location) }
        default:
            break
        }
    }

    /// Refuses text longer than the limit and charges a step per KiB built.
    @inline(__always)
    mutating func checkText(_ text: String, _ location: ArcadeLocation) throws(ArcadeError) {
        let length = text.utf8.count
        if length > ArcadeLimits.maximumTextLength {
            throw location.error("text longer than \(ArcadeLimits.maximumTextLength) bytes")
        }
        if length >= 1024 { try step(location, count: length >> 10) }
    }
}
