/// What a client's network thread reports besides messages, in the order it happens there.
public enum MQTTClientEvent: Sendable, Equatable {
    /// The broker's answer to one publish (see ``MQTTAcknowledgement``).
    case acknowledged(MQTTAcknowledgement)
    /// The connection changed (see ``MQTTConnectionEvent``); also yielded to
    /// ``MQTTClient/connectionEvents``.
    case connection(MQTTConnectionEvent)
}

/// The one owner of what runs on an ``MQTTClient``'s network thread: every received message is
/// offered to it first, it finishes each burst of reads, and it gets every acknowledgement and
/// connection event. Installed once with ``MQTTClient/setDelegate(_:)``, before `start()`.
///
/// Every method is called on the network thread, which reads nothing from the broker while it
/// runs: keep them short and never wait for the broker in them. An owner can check that with
/// ``MQTTClient/assertOnNetworkThread(_:)`` (debug builds trap elsewhere). Blocking in ``take(_:)`` is
/// how an owner holds the broker back (back-pressure), as a full queue does.
public protocol MQTTClientDelegate: AnyObject, Sendable {
    /// A received message: true if the delegate took it, false to queue it for
    /// ``MQTTClient/messages``.
    func take(_ message: MQTTMessage) -> Bool
    /// The end of a turn of the network loop: after the jobs of ``MQTTClient/perform(_:)`` and
    /// the burst of reads (also when reading lost the connection), before the turn writes what
    /// is queued, so what it publishes goes out in the same turn.
    func afterReads()
    /// An acknowledgement or a connection event.
    func handle(_ event: MQTTClientEvent)
    /// Whether a received payload of `size` bytes on `topic` is worth copying, asked before the
    /// copy. A declined message is still offered to ``take(_:)``, with an empty payload and its
    /// ``MQTTMessage/payloadSize``, so the owner can count it as too large without holding a
    /// second copy of it. The default accepts every payload.
    func acceptsPayload(size: Int, topic: String) -> Bool
}

extension MQTTClientDelegate {
    public func acceptsPayload(size: Int, topic: String) -> Bool { true }
}

/// The delegate behind the closure API (`MQTTClient.init`'s handlers, ``MQTTClient/setInlineHandler(_:)``,
/// ``MQTTClient/setAfterReads(_:)``): immutable, replaced whole when one closure changes.
final class MQTTClosureDelegate: MQTTClientDelegate {
    let onConnectionEvent: @Sendable (MQTTConnectionEvent) -> Void
    let onAcknowledgement: @Sendable (MQTTAcknowledgement) -> Void
    let inlineHandler: (@Sendable (MQTTMessage) -> Bool)?
    let afterReadsHandler: (@Sendable () -> Void)?

    init(
        onConnectionEvent: @escaping @Sendable (MQTTConnectionEvent) -> Void,
        onAcknowledgement: @escaping @Sendable (MQTTAcknowledgement) -> Void,
        inlineHandler: (@Sendable (MQTTMessage) -> Bool)? = nil, afterReads: (@Sendable () -> Void)? = nil
    ) {
        self.onConnectionEvent = onConnectionEvent
        self.onAcknowledgement = onAcknowledgement
        self.inlineHandler = inlineHandler
        self.afterReadsHandler = afterReads
    }

    func take(_ message: MQTTMessage) -> Bool { inlineHandler?(message) ?? false }
    func afterReads() { afterReadsHandler?() }
    func handle(_ event: MQTTClientEvent) {
        switch event {
        case .acknowledged(let ack): onAcknowledgement(ack)
        case .connection(let change): onConnectionEvent(change)
        }
    }

    func with(inlineHandler: (@Sendable (MQTTMessage) -> Bool)?) -> MQTTClosureDelegate {
        MQTTClosureDelegate(onConnectionEvent: onConnectionEvent, onAcknowledgement: onAcknowledgement,
                            inlineHandler: inlineHandler, afterReads: afterReadsHandler)
    }

    func with(afterReads: (@Sendable () -> Void)?) -> MQTTClosureDelegate {
        MQTTClosureDelegate(onConnectionEvent: onConnectionEvent, onAcknowledgement: onAcknowledgement,
                            inlineHandler: inlineHandler, afterReads: afterReads)
    }
}
