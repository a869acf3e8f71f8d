#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A small seeded pseudo-random generator (SplitMix64, Steele, Lea and Flood 2014), so that a
/// simulation with a given seed produces the same positions on every machine and run.
/// Not for anything secret.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// The second value of the last Box-Muller pair, not yet handed out.
    private var spareGaussian: Double?

    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) with 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// A uniform number in [low, high) (`low + nextUnit() * (high - low)`).
    public mutating func nextUniform(_ low: Double, _ high: Double) -> Double {
        low + nextUnit() * (high - low)
    }

    /// A standard normal number (mean 0, standard deviation 1), by the Box-Muller transform;
    /// values come in pairs, the second kept for the next call.
    public mutating func nextGaussian() -> Double {
        if let spare = spareGaussian {
            spareGaussian = nil
            return spare
        }
        let u1 = 1 - nextUnit()  // (0, 1]: log stays finite
        let u2 = nextUnit()
        let radius = (-2 * log(u1)).squareRoot()
        let angle = 2 * Double.pi * u2
        spareGaussian = radius * sin(angle)
        return radius * cos(angle)
    }
}
