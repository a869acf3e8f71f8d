@_spi(BufferedReads) import MQTT

// The process's `read` and `close`: libmosquitto's (and every other) calls land here and go on
// to `BufferedReads`, which serves its registered sockets from a buffer and passes every other
// descriptor to the C library's. A change to the whole process, so a target of its own that
// only the `geotrigger` executable (and the MQTT tests) link; its linker settings export both
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
