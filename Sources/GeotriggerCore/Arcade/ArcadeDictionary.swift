/// An Arcade dictionary: keys in insertion order, looked up without regard to case (Arcade
/// attribute and key names are case-insensitive). A key keeps the spelling it was first
/// inserted with; setting it again under another case replaces the value in place.
///
/// Lookup is linear over lower-cased keys kept beside the entries: dictionaries here are
/// small (fence attributes, location fields, message results).
public struct ArcadeDictionary: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public private(set) var entries: [(key: String, value: ArcadeValue)]
    /// `entries[i].key.lowercased()`, so a lookup folds only the key it looks for.
    private var foldedKeys: [String]

    public init() {
        entries = []
        foldedKeys = []
    }

    public init(_ entries: [(key: String, value: ArcadeValue)]) {
        self.init()
        self.entries.reserveCapacity(entries.count)
        foldedKeys.reserveCapacity(entries.count)
        for (key, value) in entries { self[key] = value }
    }

    public init(dictionaryLiteral elements: (String, ArcadeValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }

    /// Builds a dictionary from keys already lower-case and distinct (no folding, no checks):
    /// for the per-update profile values the engine builds on its hot path.
    init(lowercasedUniqueEntries entries: [(key: String, value: ArcadeValue)]) {
        self.entries = entries
        self.foldedKeys = entries.map(\.key)
    }

    public var isEmpty: Bool { entries.isEmpty }
    public var count: Int { entries.count }
    public var keys: [String] { entries.map(\.key) }

    /// Reads a key regardless of case; setting `nil` removes it, setting a value replaces it in
    /// place or appends it.
    public subscript(key: String) -> ArcadeValue? {
        get { self[folded: key.lowercased()] }
        set {
            let folded = key.lowercased()
            let index = foldedKeys.firstIndex(of: folded)
            switch (index, newValue) {
            case (let i?, let v?): entries[i].value = v
            case (let i?, nil):
                entries.remove(at: i)
                foldedKeys.remove(at: i)
            case (nil, let v?):
                entries.append((key: key, value: v))
                foldedKeys.append(folded)
            case (nil, nil): break
            }
        }
    }

    /// Reads a key that is already lower-case (compiled member names are folded once).
    subscript(folded folded: String) -> ArcadeValue? {
        for i in foldedKeys.indices where foldedKeys[i] == folded {
            return entries[i].value
        }
        return nil
    }

    /// Equal when both hold the same keys (regardless of case and order) with equal values.
    public static func == (lhs: ArcadeDictionary, rhs: ArcadeDictionary) -> Bool {
        guard lhs.entries.count == rhs.entries.count else { return false }
        for (i, folded) in lhs.foldedKeys.enumerated() {
            guard let other = rhs[folded: folded], other == lhs.entries[i].value else { return false }
        }
        return true
    }
}
