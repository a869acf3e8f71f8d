import Gateway
import GeotriggerCore

extension EngineBenchmark {
    /// Messages per CPU second through ``LocationDecoder/decode(topic:payload:now:)`` on one
    /// thread: the topic filter, the payload scan and the field checks, as the ingest runs them
    /// for every message of a feed.
    ///
    /// The payloads are the end-to-end load generator's (its `payload(device:step:)`, so the
    /// numbers vary as on the wire: 1000 devices, consecutive steps), built beforehand into one
    /// contiguous buffer so the timed loop only decodes. Every message must be accepted (a
    /// benchmark of drops would measure something else): the first drop is the failure. The
    /// figure is the best of `passes` passes, each timed in thread CPU time, because this box is
    /// shared and noisy: the fastest pass is the one least disturbed.
    static func decodeRate(format: PayloadFormat, messages: Int, passes: Int = 3) throws -> Result<Double, InputDrop> {
        let devices = 1_000
        let generator = LoadGenerator(devices: devices, fences: [], format: format, baseTime: 1_796_040_000)
        let decoder = LocationDecoder(format: format, topicFilter: try TopicFilter(generator.topicFilter))
        var bytes: [UInt8] = []
        var ends: [Int] = []
        ends.reserveCapacity(messages)
        for n in 0..<messages {
            bytes += generator.payload(device: n % devices, step: n / devices).utf8
            ends.append(bytes.count)
        }
        let now = generator.fixTime(step: messages / devices + 1)
        var best = Double.infinity
        var firstDrop: InputDrop?
        bytes.withUnsafeBytes { bytes in
            for _ in 0..<passes where firstDrop == nil {
                var start = 0
                let cpu = threadCPUSeconds()
                for n in 0..<messages {
                    let payload = UnsafeRawBufferPointer(rebasing: bytes[start..<ends[n]])
                    start = ends[n]
                    if case .failure(let drop) = decoder.decode(topic: generator.topics[n % devices], payload: payload, now: now),
                        firstDrop == nil
                    {
                        firstDrop = drop
                    }
                }
                best = min(best, threadCPUSeconds() - cpu)
            }
        }
        if let firstDrop { return .failure(firstDrop) }
        return .success(Double(messages) / best)
    }
}
