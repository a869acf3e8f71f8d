internal import CMosquitto
#if canImport(Glibc)
import Glibc
#endif

// libmosquitto's callbacks, run on its network thread with `obj` = the client's
// `MQTTClientCore` (an unretained `Unmanaged` pointer: the client keeps it alive until after
// `mosquitto_destroy`). File-scope and nonisolated on purpose: a closure formed inside actor-
// isolated code would trap here. Each one copies what it needs, hands it off and returns;
// none waits for the broker.

private func core(_ object: UnsafeMutableRawPointer?) -> MQTTClientCore? {
    object.map { Unmanaged<MQTTClientCore>.fromOpaque($0).takeUnretainedValue() }
}

/// CONNACK: on success subscribe again to everything, then tell the user.
func mqttOnConnect(
    _ handle: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ code: Int32, _ flags: Int32,
    _ properties: OpaquePointer?
) {
    guard let core = core(object) else { return }
    core.assertOnNetworkThread()
    if code == 0 {
        let subscriptions = core.lock.withLock {
            core.isConnected = true
            core.connackSucceeded = true
            core.failedAttempts = 0
            core.pendingSubscriptions.removeAll()
            return core.subscriptions
        }
        // libmosquitto is called with the lock released; the SUBACKs are read on this thread
        // after this callback, so every message id is recorded before its answer.
        var sent: [(id: Int32, filter: String)] = []
        for subscription in subscriptions {
            // A failure here (out of memory) shows as a missing `subscribed` event.
            if let id = try? core.sendSubscribe(subscription.filter, qos: subscription.qos) {
                sent.append((id, subscription.filter))
            }
        }
        core.recordSubscriptions(sent)
        core.report(.connected(sessionPresent: flags & 1 != 0))
    } else {
        core.lock.withLock { core.wasRefused = true }
        let reason = core.isV5 ? mosquitto_reason_string(code) : mosquitto_connack_string(code)
        core.report(.refused(code: code, reason: reason.map { String(cString: $0) } ?? "unknown"))
    }
}

/// The connection ended (after CONNACK) or an attempt failed (the network loop reports those).
func mqttOnDisconnect(
    _ handle: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ code: Int32, _ properties: OpaquePointer?
) {
    guard let core = core(object) else { return }
    core.assertOnNetworkThread()
    let wasConnected = core.lock.withLock {
        let wasConnected = core.isConnected
        core.isConnected = false
        return wasConnected
    }
    guard wasConnected else { return }
    let text = code >= 0x80 ? mosquitto_reason_string(code) : mosquitto_strerror(code)
    let reason = code == 0 ? "disconnected on request" : text.map { String(cString: $0) } ?? "unknown"
    core.report(.disconnected(code: code, reason: reason))
}

/// PUBACK (QoS 1) or written (QoS 0): report the message id with the reason code.
func mqttOnPublish(
    _ handle: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ messageId: Int32, _ reasonCode: Int32,
    _ properties: OpaquePointer?
) {
    guard let core = core(object) else { return }
    core.assertOnNetworkThread()
    core.currentDelegate.handle(.acknowledged(MQTTAcknowledgement(messageId: messageId, reasonCode: reasonCode)))
}

/// A message: copy topic, payload (unless the delegate declines a payload that large) and the
/// v5 request/response properties, then offer it to the delegate, else queue it (waiting while
/// the queue is full).
func mqttOnMessage(
    _ handle: OpaquePointer?, _ object: UnsafeMutableRawPointer?,
    _ message: UnsafePointer<mosquitto_message>?, _ properties: OpaquePointer?
) {
    guard let core = core(object), let message = message?.pointee, let topic = message.topic else { return }
    core.assertOnNetworkThread()
    let topicText = String(cString: topic)
    let size = Int(max(message.payloadlen, 0))
    let delegate = core.currentDelegate
    let payload: [UInt8]
    if let bytes = message.payload, size > 0, delegate.acceptsPayload(size: size, topic: topicText) {
        payload = Array(UnsafeRawBufferPointer(start: bytes, count: size))
    } else {
        payload = []
    }
    var responseTopic: String?
    var correlationData: [UInt8]?
    if let properties {
        var text: UnsafeMutablePointer<CChar>?
        if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &text, false) != nil,
            let text
        {
            responseTopic = String(cString: text)
            free(text)
        }
        var bytes: UnsafeMutableRawPointer?
        var length: UInt16 = 0
        if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &bytes, &length, false)
            != nil
        {
            correlationData = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
            free(bytes)
        }
    }
    let received = MQTTMessage(
        topic: topicText, payload: payload,
        qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce, retain: message.retain,
        responseTopic: responseTopic, correlationData: correlationData, payloadSize: size)
    if delegate.take(received) { return }
    core.queue.push(received)
}

/// SUBACK: report the filters of that SUBSCRIBE with their granted QoS / reason codes.
func mqttOnSubscribe(
    _ handle: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ messageId: Int32, _ count: Int32,
    _ codes: UnsafePointer<Int32>?, _ properties: OpaquePointer?
) {
    guard let core = core(object) else { return }
    core.assertOnNetworkThread()
    let filters = core.lock.withLock { core.pendingSubscriptions.removeValue(forKey: messageId) } ?? []
    let granted = codes.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
    core.report(.subscribed(filters: filters, codes: granted))
}

/// The network thread's entry point: `argument` is a retained `MQTTClientCore`.
func mqttNetworkThreadMain(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let core = Unmanaged<MQTTClientCore>.fromOpaque(argument).takeRetainedValue()
    core.runNetworkLoop(connectPending: true)
    return nil
}

/// The network thread's entry point when the first connect already failed: waits the
/// backoff first. `argument` is a retained `MQTTClientCore`.
func mqttNetworkThreadMainAfterFailure(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let argument else { return nil }
    let core = Unmanaged<MQTTClientCore>.fromOpaque(argument).takeRetainedValue()
    core.runNetworkLoop(connectPending: false)
    return nil
}
