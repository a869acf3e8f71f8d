import GeotriggerCore
import Store

/// What the parts of a running gateway share.
struct ServeContext: Sendable {
    let config: GatewayConfig
    let counters: GatewayCounters
    let warnings: Warnings
    let logger: Logger
    let store: GatewayStore
    /// The monitors' output: the ``EventCommitter``.
    let committer: any StepSink
    let statePublisher: StatePublisher
    let eventBuilder: EventBuilder
    /// Runtime fence layers (following fences move on accepted updates); nil in tools and tests.
    var runtimeFences: RuntimeFences? = nil
    /// Expected arrivals (enters and stays may meet one); nil in tools and tests.
    var expectations: Expectations? = nil
}
