import Gateway
#if canImport(Glibc)
import Glibc
#endif

/// Process resource figures for benchmark reports (Linux: /proc and getrusage).
enum ResourceUsage {
    /// Peak resident set size of this process in bytes (VmHWM), or 0 if unknown.
    static func peakResidentBytes() -> Int { statusField("VmHWM:") }

    /// Current resident set size of this process in bytes (VmRSS), or 0 if unknown.
    static func residentBytes() -> Int { statusField("VmRSS:") }

    /// User + system CPU seconds this process has used.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// A monotonic clock in seconds, for timing.
    static func now() -> Double { MonotonicClock.now() }

    private static func statusField(_ name: String) -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return 0 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            let text = String(decoding: bytes, as: UTF8.self)
            if text.hasPrefix(name) {
                let digits = text.dropFirst(name.count).filter(\.isNumber)
                return (Int(digits) ?? 0) * 1024
            }
        }
        return 0
    }
}

extension ResourceUsage {
    /// Gives freed heap back to the system (glibc's `malloc_trim(0)`, looked up by name as the
    /// gateway does after loading fences), so resident memory shows what is still held.
    static func trimHeap() {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }
}
