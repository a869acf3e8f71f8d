@_spi(BufferedReads) import MQTT

// The process's `read`, `write`, `close` and `socketpair`: libmosquitto's (and every other) calls
// land here and go on to `BufferedReads`, which serves its registered sockets' reads from a
// buffer, gathers their writes while a turn of the network thread writes, refuses libmosquitto's
// wake-up socket pair where asked, and passes everything else to the C library's. A change to the whole process, so a target of its own that
// only the `geotrigger` executable (and the MQTT tests) link; its linker settings export the
// symbols, so the shared libraries bind to them. Public so that neither the optimizer nor the
// linker drops them.

@_cdecl("read")
public func geotriggerRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    BufferedReads.read(fd, buffer, count)
}

@_cdecl("close")
public func geotriggerClose(_ fd: Int32) -> Int32 {
    BufferedReads.close(fd)
}

@_cdecl("write")
public func geotriggerWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    BufferedReads.write(fd, buffer, count)
}

@_cdecl("socketpair")
public func geotriggerSocketPair(_ domain: Int32, _ type: Int32, _ proto: Int32, _ fds: UnsafeMutablePointer<Int32>?) -> Int32 {
    BufferedReads.socketPair(domain, type, proto, fds)
}
