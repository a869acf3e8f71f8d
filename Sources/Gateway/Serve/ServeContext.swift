import GeotriggerCore
import Store

/// What the parts of a running gateway share.
package struct ServeContext: Sendable {
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
    /// Trips (their shards tell it when one ends); nil in tools and tests.
    var trips: Trips? = nil
}

extension ServeContext {
    /// A context without runtime fences and expected arrivals (the store benchmark's).
    package init(config: GatewayConfig, counters: GatewayCounters, warnings: Warnings, logger: Logger, store: GatewayStore,
                 committer: any StepSink, statePublisher: StatePublisher, eventBuilder: EventBuilder) {
        self.config = config
        self.counters = counters
        self.warnings = warnings
        self.logger = logger
        self.store = store
        self.committer = committer
        self.statePublisher = statePublisher
        self.eventBuilder = eventBuilder
    }
}
