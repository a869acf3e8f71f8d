import Foundation
import MQTT
import Testing
import TestSupport

/// `PacketReads` on a socket pair, read the way libmosquitto reads a packet (its first byte,
/// its remaining length byte by byte, then the rest), through the process's `read`. What the
/// kernel still holds (FIONREAD) shows how much each call took from the socket.
@Suite struct PacketReadsTests {
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
            if register { #expect(PacketReads.register(reader)) }
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

    @Test func theFirstByteTakesTheWholePacketAndNothingAfterIt() throws {
        let pair = try Pair()
        let first = Self.packet(0x30, payload: 200), second = Self.packet(0x40, payload: 2)
        pair.send(first + second)
        #expect(pair.read(1) == [0x30])
        #expect(pair.unread == second.count, "the first packet is taken whole, the second left in the socket")
        #expect(pair.read(1) == [first[1]])
        #expect(pair.read(1) == [first[2]])
        #expect(pair.read(200) == Array(first[3...]))
        #expect(pair.unread == second.count)
        #expect(pair.read(1) == [0x40])
        #expect(pair.unread == 0)
        #expect(pair.read(1) == [2])
        #expect(pair.read(2) == Array(second[2...]))
        #expect(pair.read(1) == nil && errno == EAGAIN)
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

    @Test func largePacketsUnfinishedHeadersAndUnregisteredSocketsTakeThePlainRead() throws {
        let pair = try Pair()
        let large = Self.packet(0x30, payload: PacketReads.capacity)
        pair.send(large)
        #expect(pair.read(1) == [0x30])
        #expect(pair.unread == large.count - 1)
        #expect(pair.read(large.count) == Array(large[1...]))

        // Only the first byte of a two-byte remaining length has arrived.
        pair.send([0x30, 0x80])
        #expect(pair.read(1) == [0x30])
        #expect(pair.unread == 1)
        #expect(pair.read(1) == [0x80])

        let plain = try Pair(register: false)
        plain.send(Self.packet(0x30, payload: 5))
        #expect(plain.read(1) == [0x30])
        #expect(plain.unread == 6)
    }

    /// Closing a registered socket in the middle of a packet drops what was held for it: a new
    /// socket that gets the same descriptor number reads its own bytes. (The readers are moved
    /// to a high number, which no other test's socket gets meanwhile.)
    @Test func closingASocketDropsItsRegistrationAndWhatWasHeld() throws {
        let old = try Pair(register: false, at: 700)
        #expect(PacketReads.register(old.reader))
        old.send(Self.packet(0x30, payload: 20))
        #expect(old.read(1) == [0x30])
        let number = old.reader
        old.closeReader()
        #expect(!PacketReads.isRegistered(number))

        let new = try Pair(register: false, at: 700)
        #expect(new.reader == number)
        new.send([0x77])
        #expect(new.read(1) == [0x77])
    }
}

extension MQTTIntegrationTests {
    /// Through a real broker, with whole-packet reads (the default): payloads on both sides of
    /// `PacketReads.capacity`, and a burst of small ones, arrive whole and in order.
    @Test func messagesOfEverySizeArriveWholeWithPacketReads() async throws {
        let (broker, prefix, subscriber, publisher) = try await subscriberAndPublisher("packets", qos: .atLeastOnce) {
            $0.collect()
        }
        defer { subscriber.stop(); publisher.stop(); _ = broker }
        let sizes = [0, 1, 127, 128, PacketReads.capacity - 64, PacketReads.capacity, 3 * PacketReads.capacity] + Array(repeating: 40, count: 500)
        let sent = sizes.enumerated().map { i, size in
            MQTTMessage(topic: "\(prefix)/\(i)", payload: (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ i) }, qos: .atLeastOnce)
        }
        let before = PacketReads.packetsRead
        let ids = try await publisher.client.publish(sent).map { try $0.get() }
        #expect(await publisher.waitAcknowledged(ids))
        #expect(await subscriber.waitMessages(sent.count))
        #expect(subscriber.messages.all.map(\.topic) == sent.map(\.topic))
        #expect(subscriber.messages.all.map(\.payload) == sent.map(\.payload))
        #expect(subscriber.client.readsWholePackets && publisher.client.readsWholePackets)
        // libmosquitto's reads reach PacketReads (the binary exports `read`): the PUBLISHes
        // below the capacity and their PUBACKs (over 1,000). Other tests only add to the count.
        #expect(PacketReads.packetsRead - before >= sent.count)

        // Turned off: libmosquitto's own reads.
        let plain = try MQTTProbe(port: broker.port, clientId: unique("plain")) { $0.wholePacketReads = false }
        defer { plain.stop() }
        try plain.client.start()
        #expect(await plain.waitConnected())
        #expect(!plain.client.readsWholePackets)
    }
}
