extension LocationDecoder {
    /// The top-level members the `json` format reads. Each keeps the last value sent under its
    /// name (a repeated member overrides, as in JavaScript); other members are validated and skipped.
    struct JSONFields: PayloadScanner.Receiver {
        enum Member { case lat, lon, time, accuracy, speed, heading, altitude }

        var lat, lon, time, accuracy, speed, heading, altitude: PayloadScanner.Value?

        static func member(named name: UnsafeBufferPointer<UInt8>) -> Member? {
            guard let word = LocationDecoder.packed(name) else { return nil }
            switch (name.count, word) {
            case (3, 0x6C_61_74): return .lat  // "lat"
            case (3, 0x6C_6F_6E): return .lon  // "lon"
            case (4, 0x74_69_6D_65): return .time  // "time"
            case (8, 0x61_63_63_75_72_61_63_79): return .accuracy  // "accuracy"
            case (5, 0x73_70_65_65_64): return .speed  // "speed"
            case (7, 0x68_65_61_64_69_6E_67): return .heading  // "heading"
            case (8, 0x61_6C_74_69_74_75_64_65): return .altitude  // "altitude"
            default: return nil
            }
        }

        mutating func set(_ member: Member, _ value: PayloadScanner.Value) {
            switch member {
            case .lat: lat = value
            case .lon: lon = value
            case .time: time = value
            case .accuracy: accuracy = value
            case .speed: speed = value
            case .heading: heading = value
            case .altitude: altitude = value
            }
        }
    }

    /// The top-level members the `owntracks` format reads, each the last value sent under its name.
    struct OwnTracksFields: PayloadScanner.Receiver {
        enum Member { case type, lat, lon, tst, acc, alt, vel, cog, tid }

        var type, lat, lon, tst, acc, alt, vel, cog, tid: PayloadScanner.Value?

        static func member(named name: UnsafeBufferPointer<UInt8>) -> Member? {
            guard let word = LocationDecoder.packed(name) else { return nil }
            switch (name.count, word) {
            case (5, 0x5F_74_79_70_65): return .type  // "_type"
            case (3, 0x6C_61_74): return .lat  // "lat"
            case (3, 0x6C_6F_6E): return .lon  // "lon"
            case (3, 0x74_73_74): return .tst  // "tst"
            case (3, 0x61_63_63): return .acc  // "acc"
            case (3, 0x61_6C_74): return .alt  // "alt"
            case (3, 0x76_65_6C): return .vel  // "vel"
            case (3, 0x63_6F_67): return .cog  // "cog"
            case (3, 0x74_69_64): return .tid  // "tid"
            default: return nil
            }
        }

        mutating func set(_ member: Member, _ value: PayloadScanner.Value) {
            switch member {
            case .type: type = value
            case .lat: lat = value
            case .lon: lon = value
            case .tst: tst = value
            case .acc: acc = value
            case .alt: alt = value
            case .vel: vel = value
            case .cog: cog = value
            case .tid: tid = value
            }
        }
    }

    /// A member name of at most 8 bytes as one integer, first byte highest (`"lat"` is
    /// 0x6C_61_74: l, a, t), so that recognising a name is one integer switch rather than
    /// building and hashing a String; nil for longer names, which no format reads. Matching
    /// also compares the length, since a decoded name may hold NUL bytes (`"lat\u0000"`).
    /// Byte equality is String equality here: every name read is ASCII, and no other text is
    /// canonically equivalent to an ASCII one.
    static func packed(_ name: UnsafeBufferPointer<UInt8>) -> UInt64? {
        guard name.count <= 8 else { return nil }
        var word: UInt64 = 0
        for byte in name { word = word << 8 | UInt64(byte) }
        return word
    }
}
