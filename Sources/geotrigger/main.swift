import Benchmarks
import Gateway

#if canImport(Glibc)
import Glibc
#endif

// The thin entry point: everything, including argument parsing, lives in Gateway (and the
// benchmarks in Benchmarks) so that the tests call the same code.
let status = await GeotriggerCommand.main(Array(CommandLine.arguments.dropFirst()), more: [BenchCommand.self])
exit(status)
