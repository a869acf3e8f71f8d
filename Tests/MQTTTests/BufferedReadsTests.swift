import Foundation
@_spi(BufferedReads) import MQTT
import Testing
import TestSupport

/// `BufferedReads` on a socket pair, read the way libmosquitto reads a packet (its first byte,
/// its remaining length byte by byte, then the rest), through the process's `read`. What the
/// kernel still holds (FIONREAD) shows how much each call took from the socket.
@Suite struct BufferedReadsTests {
    /// A non-blocking stream socket pair: `reader` is registered unless `register` is false.
    final class Pair {
        private(set) var reader: Int32
        let writer: Int32

        /// `at`: the reader gets the lowest free descriptor number from there on.
        init(register: Bool = true, at lowest: Int32? = nil) throws {
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
            reader = fds[0]
            writer = fds[1]
            if let lowest {
                reader = fcntl(fds[0], F_DUPFD, lowest)
                close(fds[0])
            }
            _ = fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK)
            if register { #expect(BufferedReads.register(reader)) }
        }

        deinit {
            closeReader()
            close(writer)
        }

        func closeReader() {
            if reader >= 0 { close(reader) }
            reader = -1
        }

        func send(_ bytes: [UInt8]) {
            #expect(bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) } == bytes.count)
        }

        /// One `read` of up to `count` bytes: the bytes, or nil with `errno` on -1.
        func read(_ count: Int) -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: count)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, count) }
            return n < 0 ? nil : Array(buffer[..<n])
        }

        /// Bytes the kernel holds for `reader`.
        var unread: Int {
            var count: Int32 = 0
            return ioctl(reader, UInt(FIONREAD), &count) == 0 ? Int(count) : -1
        }
    }

    /// A PUBLISH-like packet: type byte, remaining length (1 or 2 bytes here), payload.
    static func packet(_ type: UInt8, payload: Int) -> [UInt8] {
        var length: [UInt8] = payload < 128 ? [UInt8(payload)] : [UInt8(payload % 128) | 0x80, UInt8(payload / 128)]
        length.insert(type, at: 0)
        return length + (0..<payload).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
    }

    @Test func oneSocketReadServesEveryPacketThatHadArrived() throws {
        let pair = try Pair()
        let first = Self.packet(0x30, payload: 200), second = Self.packet(0x40, payload: 2)
        pair.send(first + second)
        let (socketReads, servedReads) = (BufferedReads.socketReads, BufferedReads.servedReads)
        #expect(pair.read(1) == [0x30])
        #expect(pair.unread == 0, "the first read took both packets")
        #expect(BufferedReads.heldBytes(pair.reader) == first.count + second.count - 1)
        #expect(pair.read(1) == [first[1]])
        #expect(pair.read(1) == [first[2]])
        #expect(pair.read(200) == Array(first[3...]))
        #expect(pair.read(1) == [0x40])
        #expect(pair.read(1) == [2])
        #expect(BufferedReads.heldBytes(pair.reader) == 2)
        // More than is held: only what is held (libmosquitto reads on).
        #expect(pair.read(50) == Array(second[2...]))
        #expect(BufferedReads.heldBytes(pair.reader) == 0)
        #expect(pair.read(1) == nil && errno == EAGAIN)
        // Other tests' sockets only add to the counts.
        #expect(BufferedReads.socketReads - socketReads >= 1)
        #expect(BufferedReads.servedReads - servedReads >= 7)
    }

    @Test func aPacketStillArrivingIsServedAsFarAsItCame() throws {
        let pair = try Pair()
        let packet = Self.packet(0x30, payload: 10)
        pair.send(Array(packet[..<6]))
        #expect(pair.read(1) == [0x30])
        #expect(pair.read(1) == [10])
        #expect(pair.read(10) == Array(packet[2..<6]))
        #expect(pair.read(6) == nil && errno == EAGAIN)
        pair.send(Array(packet[6...]))
        #expect(pair.read(6) == Array(packet[6...]))
    }

    @Test func largeReadsWithNothingHeldAndUnregisteredSocketsTakeThePlainRead() throws {
        let pair = try Pair()
        let large = (0..<3 * BufferedReads.capacity).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        pair.send(Array(large[..<4]))
        #expect(pair.read(1) == [large[0]])
        #expect(pair.read(2) == Array(large[1..<3]))
        pair.send(Array(large[4...]))
        // One byte held: it comes alone, then the rest goes straight to the caller.
        #expect(pair.read(large.count) == [large[3]])
        #expect(pair.read(large.count) == Array(large[4...]))
        #expect(pair.unread == 0)

        // A large read takes only what the socket holds; the buffer is not touched.
        pair.send([1, 2, 3])
        #expect(pair.read(BufferedReads.capacity) == [1, 2, 3])
        #expect(BufferedReads.heldBytes(pair.reader) == 0)

        let plain = try Pair(register: false)
        plain.send(Self.packet(0x30, payload: 5))
        #expect(plain.read(1) == [0x30])
        #expect(plain.unread == 6)
        #expect(BufferedReads.heldBytes(plain.reader) == 0)
    }

    /// Closing a registered socket in the middle of a packet drops what was held for it: a new
    /// socket that gets the same descriptor number reads its own bytes. (The readers are moved
    /// to a high number, which no other test's socket gets meanwhile.)
    @Test func closingASocketDropsItsRegistrationAndWhatWasHeld() throws {
        let old = try Pair(register: false, at: 700)
        #expect(BufferedReads.register(old.reader))
        old.send(Self.packet(0x30, payload: 20))
        #expect(old.read(1) == [0x30])
        let number = old.reader
        old.closeReader()
        #expect(!BufferedReads.isRegistered(number))

        let new = try Pair(register: false, at: 700)
        #expect(new.reader == number)
        new.send([0x77])
        #expect(new.read(1) == [0x77])
    }
}

extension MQTTIntegrationTests {
    /// Through a real broker, with buffered reads (the default): payloads on both sides of
    /// `BufferedReads.capacity`, and a burst of small ones, arrive whole and in order.
    @Test func messagesOfEverySizeArriveWithBufferedReads() async throws {
        let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("buffered", qos: .atLeastOnce) {
            $0.collect()
        }
        defer { subscriber.stop(); publisher.stop(); _ = broker }
        let capacity = BufferedReads.capacity
        let sizes = [0, 1, 127, 128, capacity - 64, capacity, 3 * capacity] + Array(repeating: 40, count: 2000)
        let sent = sizes.enumerated().map { i, size in
            MQTTMessage(topic: "\(prefix)/\(i)", payload: (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ i) }, qos: .atLeastOnce)
        }
        let (socketReads, servedReads) = (BufferedReads.socketReads, BufferedReads.servedReads)
        let ids = try await publisher.client.publish(sent).map { try $0.get() }
        #expect(await publisher.waitAcknowledged(ids))
        #expect(await subscriber.waitMessages(sent.count))
        #expect(subscriber.messages.all.map(\.topic) == sent.map(\.topic))
        #expect(subscriber.messages.all.map(\.payload) == sent.map(\.payload))
        #expect(subscriber.client.readsBuffered && publisher.client.readsBuffered)
        // libmosquitto's reads reach BufferedReads (the binary exports `read`): three or more
        // per PUBLISH and PUBACK, served from fewer reads of the sockets. Other tests only add
        // to the counts.
        let served = BufferedReads.servedReads - servedReads
        #expect(served >= 3 * sent.count)
        #expect(BufferedReads.socketReads - socketReads < served / 3)

        // Turned off: libmosquitto's own reads.
        let plain = try MQTTProbe(port: broker.port, clientId: unique("plain")) { $0.bufferedReads = false }
        defer { plain.stop() }
        try plain.client.start()
        #expect(await plain.waitConnected())
        #expect(!plain.client.readsBuffered)
    }

    /// A flood of small QoS 0 messages fills the subscriber's buffer with more packets than one
    /// turn of its network thread reads (64): its first message holds that thread until 32 KB
    /// wait in the socket. The rest are read in the next turns although the socket is empty by
    /// then and nothing else arrives. The flood makes the thread batch its reads; idle again,
    /// it stops, and a lone message still arrives.
    @Test func aFloodIsReadToItsEndWhenTheSocketIsAlreadyEmpty() async throws {
        let release = DispatchSemaphore(value: 0)
        let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("flood", qos: .atMostOnce) {
            $0.client.setInlineHandler { message in
                if message.payload == Array("0".utf8) { release.wait() }
                return false
            }
            $0.collect()
        }
        defer { subscriber.stop(); publisher.stop(); _ = broker }
        let sent = (0..<5000).map { i in MQTTMessage(topic: "\(prefix)/\(i % 10)", payload: Array("\(i)".utf8), qos: .atMostOnce) }
        let results = await publisher.client.publish(sent)
        #expect(results.allSatisfy { (try? $0.get()) != nil })
        let waiting = await poll(timeout: .seconds(20)) { subscriber.client.unreadBytes >= 32 * 1024 }
        release.signal()
        #expect(waiting, "\(subscriber.client.unreadBytes) bytes unread")
        #expect(await subscriber.waitMessages(sent.count, timeout: .seconds(20)), "\(subscriber.messages.count) of \(sent.count)")
        #expect(subscriber.messages.all.map(\.payload) == sent.map(\.payload))
        #expect(subscriber.client.readBatchesBegun >= 1)
        #expect(await poll(timeout: .seconds(5)) { !subscriber.client.batchesReads }, "still batching when idle")

        // Under SO_RCVLOWAT 4096, this would wait for more bytes that never come.
        let lone = MQTTMessage(topic: "\(prefix)/lone", payload: Array("lone".utf8), qos: .atMostOnce)
        #expect(await publisher.client.publish([lone]).allSatisfy { (try? $0.get()) != nil })
        #expect(await subscriber.waitMessages(sent.count + 1, timeout: .seconds(10)))
    }

    /// The flood above, when the thread's first read of it is short: more packets than one turn
    /// reads (64) but fewer than 4 KB. Every later turn then begins with packets still in the
    /// buffer until the flood ends, and those turns must be able to begin batching too. Here
    /// the thread holds on "hold" while 80 messages queue behind it, then on "70" (read in the
    /// second turn) while the flood queues.
    @Test func aFloodBehindAShortReadStillBatches() async throws {
        let releases = ["hold": DispatchSemaphore(value: 0), "70": DispatchSemaphore(value: 0)]
        let reached = Recorder<String>()
        let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("short", qos: .atMostOnce) {
            $0.client.setInlineHandler { message in
                let text = String(decoding: message.payload, as: UTF8.self)
                if let release = releases[text] {
                    reached.append(text)
                    release.wait()
                }
                return false
            }
            $0.collect()
        }
        defer { subscriber.stop(); publisher.stop(); _ = broker }
        func send(_ payloads: [String]) async -> Int {
            let messages = payloads.map { MQTTMessage(topic: "\(prefix)/s", payload: Array($0.utf8), qos: .atMostOnce) }
            #expect(await publisher.client.publish(messages).allSatisfy { (try? $0.get()) != nil })
            return messages.reduce(0) { $0 + 4 + $1.topic.utf8.count + $1.payload.count }  // QoS 0 PUBLISH
        }
        _ = await send(["hold"])
        #expect(await poll { reached.all == ["hold"] })
        let shortBytes = await send((0..<80).map(String.init))
        try #require(shortBytes < 4096 - 64)
        #expect(await poll { subscriber.client.unreadBytes >= shortBytes }, "\(subscriber.client.unreadBytes) of \(shortBytes) bytes")
        releases["hold"]!.signal()
        #expect(await poll { reached.all == ["hold", "70"] })
        #expect(subscriber.client.readBatchesBegun == 0, "the first turn took less than 4 KB")
        _ = await send((0..<5000).map { "f\($0)" })
        let waiting = await poll(timeout: .seconds(20)) { subscriber.client.unreadBytes >= 32 * 1024 }
        releases["70"]!.signal()
        #expect(waiting, "\(subscriber.client.unreadBytes) bytes unread")
        #expect(await subscriber.waitMessages(5081, timeout: .seconds(20)), "\(subscriber.messages.count) of 5081")
        #expect(subscriber.client.readBatchesBegun >= 1)
        #expect(await poll(timeout: .seconds(5)) { !subscriber.client.batchesReads }, "still batching when idle")
    }
}
