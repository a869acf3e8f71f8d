// A small MQTT 3.1.1 client over WebSocket (subprotocol "mqtt"), enough for the console:
// CONNECT with credentials, SUBSCRIBE, PUBLISH at QoS 0 and 1 both ways (PUBACK), PINGREQ
// keepalive, reconnect with backoff. The packet functions are pure so that they can be
// checked against known bytes (Tests/Console/mqtt_packets.mjs).

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: false });

export const PacketType = {
    CONNECT: 1, CONNACK: 2, PUBLISH: 3, PUBACK: 4, PUBREC: 5, PUBREL: 6, PUBCOMP: 7,
    SUBSCRIBE: 8, SUBACK: 9, UNSUBSCRIBE: 10, UNSUBACK: 11, PINGREQ: 12, PINGRESP: 13, DISCONNECT: 14,
};

/// The CONNACK return codes of MQTT 3.1.1, in words.
export const connackReasons = {
    1: 'the broker does not speak MQTT 3.1.1',
    2: 'client id rejected',
    3: 'server unavailable',
    4: 'bad user name or password',
    5: 'not authorized',
};

/// Remaining Length: 7 bits a byte, least significant first, at most 4 bytes.
export function encodeLength(n) {
    if (n < 0 || n > 268435455) throw new RangeError(`packet too large: ${n} bytes`);
    const out = [];
    do {
        let byte = n % 128;
        n = Math.floor(n / 128);
        if (n > 0) byte |= 0x80;
        out.push(byte);
    } while (n > 0);
    return out;
}

function utf8(text) {
    const bytes = encoder.encode(text);
    if (bytes.length > 65535) throw new RangeError('string longer than 65535 bytes');
    return bytes;
}

function bytesOf(payload) {
    if (payload === undefined || payload === null) return new Uint8Array(0);
    if (payload instanceof Uint8Array) return payload;
    if (typeof payload === 'string') return encoder.encode(payload);
    throw new TypeError('payload must be a string or a Uint8Array');
}

/// Assembles a packet: fixed header byte, Remaining Length, then parts (byte arrays, strings
/// as length-prefixed UTF-8, numbers as two-byte integers are written by the callers).
function packet(first, parts) {
    let length = 0;
    for (const p of parts) length += p.length;
    const head = [first, ...encodeLength(length)];
    const out = new Uint8Array(head.length + length);
    out.set(head, 0);
    let at = head.length;
    for (const p of parts) { out.set(p, at); at += p.length; }
    return out;
}

function u16(n) { return Uint8Array.of((n >> 8) & 0xff, n & 0xff); }
function str(text) { const b = utf8(text); return concat([u16(b.length), b]); }
function concat(arrays) {
    let n = 0;
    for (const a of arrays) n += a.length;
    const out = new Uint8Array(n);
    let at = 0;
    for (const a of arrays) { out.set(a, at); at += a.length; }
    return out;
}

export function encodeConnect({ clientId, username, password, keepalive = 30, clean = true }) {
    let flags = clean ? 0x02 : 0;
    const payload = [str(clientId)];
    if (username !== undefined && username !== null && username !== '') {
        flags |= 0x80;
        payload.push(str(username));
        if (password !== undefined && password !== null) {
            flags |= 0x40;
            payload.push(str(password));
        }
    }
    return packet(0x10, [str('MQTT'), Uint8Array.of(4, flags), u16(keepalive), ...payload]);
}

export function encodeSubscribe(packetId, filters) {
    const parts = [u16(packetId)];
    for (const { topic, qos } of filters) parts.push(str(topic), Uint8Array.of(qos));
    return packet(0x82, parts);
}

export function encodePublish({ topic, payload, qos = 0, retain = false, dup = false, packetId = 0 }) {
    const first = 0x30 | (dup ? 0x08 : 0) | (qos << 1) | (retain ? 0x01 : 0);
    const parts = [str(topic)];
    if (qos > 0) parts.push(u16(packetId));
    parts.push(bytesOf(payload));
    return packet(first, parts);
}

export function encodePuback(packetId) { return packet(0x40, [u16(packetId)]); }
export function encodePingreq() { return Uint8Array.of(0xc0, 0x00); }
export function encodeDisconnect() { return Uint8Array.of(0xe0, 0x00); }

/// Cuts a byte stream into packets: push() what arrived, then take packets while next()
/// returns one. A WebSocket message may hold part of a packet or several.
export class PacketReader {
    constructor() {
        this.buffer = new Uint8Array(0);
        this.start = 0; // where the next packet begins in buffer (the bytes before are read)
    }

    push(bytes) {
        const rest = this.buffer.subarray(this.start);
        this.buffer = rest.length === 0 ? new Uint8Array(bytes) : concat([rest, new Uint8Array(bytes)]);
        this.start = 0;
    }

    /// The next whole packet, decoded, or null when more bytes are needed.
    next() {
        const b = this.buffer, start = this.start;
        if (b.length - start < 2) return null;
        let length = 0, multiplier = 1, at = start + 1;
        for (;;) {
            if (at >= b.length) return null;
            const byte = b[at++];
            length += (byte & 0x7f) * multiplier;
            if ((byte & 0x80) === 0) break;
            multiplier *= 128;
            if (at > start + 4) throw new Error('malformed Remaining Length');
        }
        if (b.length < at + length) return null;
        this.start = at + length;
        // A copy: the body outlives the buffer's next push.
        return decodePacket(b[start], b.slice(at, at + length));
    }
}

/// Decodes one packet from its first byte and its body (after the Remaining Length).
export function decodePacket(first, body) {
    const type = first >> 4;
    const p = { type };
    switch (type) {
        case PacketType.CONNACK:
            p.sessionPresent = (body[0] & 1) === 1;
            p.returnCode = body[1];
            break;
        case PacketType.PUBLISH: {
            p.dup = (first & 0x08) !== 0;
            p.qos = (first >> 1) & 3;
            p.retain = (first & 1) === 1;
            const topicLength = (body[0] << 8) | body[1];
            p.topic = decoder.decode(body.subarray(2, 2 + topicLength));
            let at = 2 + topicLength;
            if (p.qos > 0) { p.packetId = (body[at] << 8) | body[at + 1]; at += 2; }
            p.payload = body.slice(at);
            break;
        }
        case PacketType.PUBACK: case PacketType.PUBREC: case PacketType.PUBREL: case PacketType.PUBCOMP:
        case PacketType.UNSUBACK:
            p.packetId = (body[0] << 8) | body[1];
            break;
        case PacketType.SUBACK:
            p.packetId = (body[0] << 8) | body[1];
            p.returnCodes = Array.from(body.subarray(2));
            break;
        default:
            break;
    }
    return p;
}

/// The client. Events (on(name, fn)): 'state' (connecting|connected|closed|refused, detail),
/// 'message' ({topic, payload: Uint8Array, retain, qos}), 'suback' ({topic, granted}).
export class MqttClient {
    constructor({ url, clientId, username, password, keepalive = 30, WebSocketImpl }) {
        this.url = url;
        this.clientId = clientId;
        this.username = username;
        this.password = password;
        this.keepalive = keepalive;
        this.WebSocketImpl = WebSocketImpl || globalThis.WebSocket;
        this.listeners = {};
        this.subscriptions = new Map();      // topic -> qos, resubscribed at every connect
        this.pendingSubscribes = new Map();  // packet id -> [topics]
        this.inflight = new Map();           // packet id -> {packet, resolve, reject}, QoS 1 out
        this.nextId = 1;
        this.socket = null;
        this.connected = false;
        this.stopped = false;
        this.backoff = 500;
        this.timer = null;
        this.reconnectTimer = null;
    }

    on(name, fn) { (this.listeners[name] ||= []).push(fn); return this; }
    emit(name, value) { for (const fn of this.listeners[name] || []) fn(value); }

    connect() {
        this.stopped = false;
        this.refused = false;
        this.closeReason = null;
        clearTimeout(this.reconnectTimer);
        this.emit('state', { state: 'connecting', detail: this.url });
        let socket;
        try {
            socket = new this.WebSocketImpl(this.url, ['mqtt']);
        } catch (error) {
            this.emit('state', { state: 'closed', detail: `cannot open ${this.url}: ${error.message}` });
            this.scheduleReconnect();
            return;
        }
        socket.binaryType = 'arraybuffer';
        this.socket = socket;
        this.reader = new PacketReader();
        socket.onopen = () => {
            this.send(encodeConnect({ clientId: this.clientId, username: this.username, password: this.password, keepalive: this.keepalive }));
        };
        socket.onmessage = (event) => {
            if (socket !== this.socket) return;
            this.lastReceived = Date.now();
            try {
                this.reader.push(new Uint8Array(event.data));
                for (let p = this.reader.next(); p; p = this.reader.next()) this.handle(p);
            } catch (error) {
                this.emit('state', { state: 'closed', detail: `broken packet from the broker: ${error.message}` });
                socket.close();
            }
        };
        socket.onclose = (event) => {
            if (socket !== this.socket) return;
            this.socket = null;
            const was = this.connected;
            this.connected = false;
            clearInterval(this.timer);
            if (this.refused || this.stopped) return;
            const detail = this.closeReason || (was ? 'connection lost' : `cannot connect to ${this.url}${event.code ? ` (${event.code})` : ''}`);
            this.closeReason = null;
            this.emit('state', { state: 'closed', detail });
            this.scheduleReconnect();
        };
        socket.onerror = () => { /* onclose follows and reports it */ };
    }

    scheduleReconnect() {
        if (this.stopped || this.refused) return;
        clearTimeout(this.reconnectTimer);
        this.reconnectTimer = setTimeout(() => this.connect(), this.backoff);
        this.backoff = Math.min(this.backoff * 2, 10000);
    }

    /// Closes for good (no reconnect).
    stop() {
        this.stopped = true;
        clearTimeout(this.reconnectTimer);
        clearInterval(this.timer);
        if (this.socket) {
            if (this.connected) this.send(encodeDisconnect());
            this.socket.close();
        }
        this.socket = null;
        this.connected = false;
    }

    send(bytes) {
        if (!this.socket || this.socket.readyState !== 1) return false;
        this.socket.send(bytes);
        this.lastSent = Date.now();
        return true;
    }

    handle(p) {
        switch (p.type) {
            case PacketType.CONNACK:
                if (p.returnCode !== 0) {
                    const reason = connackReasons[p.returnCode] || `refused (code ${p.returnCode})`;
                    // Bad credentials or not authorized: waiting does not help, the user must log in.
                    this.refused = p.returnCode === 4 || p.returnCode === 5;
                    if (this.refused) this.emit('state', { state: 'refused', detail: reason, code: p.returnCode });
                    else this.closeReason = `the broker refused the connection: ${reason}`;
                    this.socket.close();
                    return;
                }
                this.connected = true;
                this.backoff = 500;
                this.startKeepalive();
                this.emit('state', { state: 'connected', detail: this.url });
                this.resubscribe();
                for (const [id, entry] of this.inflight) {
                    this.send(encodePublish({ ...entry.message, dup: true, packetId: id }));
                }
                break;
            case PacketType.PUBLISH:
                if (p.qos === 1) this.send(encodePuback(p.packetId));
                this.emit('message', { topic: p.topic, payload: p.payload, retain: p.retain, qos: p.qos });
                break;
            case PacketType.PUBACK: {
                const entry = this.inflight.get(p.packetId);
                if (entry) { this.inflight.delete(p.packetId); entry.resolve(); }
                break;
            }
            case PacketType.SUBACK: {
                const topics = this.pendingSubscribes.get(p.packetId) || [];
                this.pendingSubscribes.delete(p.packetId);
                topics.forEach((topic, i) => this.emit('suback', { topic, granted: p.returnCodes[i] }));
                break;
            }
            case PacketType.PINGRESP:
                this.pingOutstanding = false;
                break;
            default:
                break;
        }
    }

    startKeepalive() {
        clearInterval(this.timer);
        this.pingOutstanding = false;
        const period = Math.max(1, this.keepalive) * 1000;
        this.timer = setInterval(() => {
            if (!this.connected) return;
            if (this.pingOutstanding && Date.now() - this.pingSent > period) {
                // No PINGRESP within a keepalive: the connection is dead; onclose reconnects.
                this.socket && this.socket.close();
                return;
            }
            if (!this.pingOutstanding && Date.now() - (this.lastSent || 0) >= period / 2) {
                this.pingOutstanding = true;
                this.pingSent = Date.now();
                this.send(encodePingreq());
            }
        }, Math.min(period / 4, 5000));
    }

    allocateId() {
        for (let i = 0; i < 65535; i++) {
            const id = this.nextId;
            this.nextId = this.nextId === 65535 ? 1 : this.nextId + 1;
            if (!this.inflight.has(id) && !this.pendingSubscribes.has(id)) return id;
        }
        throw new Error('no free packet id');
    }

    subscribe(topic, qos = 1) {
        this.subscriptions.set(topic, qos);
        if (this.connected) this.sendSubscribe([topic]);
    }

    resubscribe() {
        const topics = [...this.subscriptions.keys()];
        if (topics.length) this.sendSubscribe(topics);
    }

    sendSubscribe(topics) {
        const id = this.allocateId();
        this.pendingSubscribes.set(id, topics);
        this.send(encodeSubscribe(id, topics.map((topic) => ({ topic, qos: this.subscriptions.get(topic) }))));
    }

    /// Publishes; the promise resolves when sent (QoS 0) or acknowledged (QoS 1). QoS 1
    /// messages are resent (DUP) after a reconnect until acknowledged.
    publish(topic, payload, { qos = 0, retain = false } = {}) {
        const message = { topic, payload: bytesOf(payload), qos, retain };
        if (qos === 0) {
            return this.send(encodePublish(message)) ? Promise.resolve() : Promise.reject(new Error('not connected'));
        }
        return new Promise((resolve, reject) => {
            const id = this.allocateId();
            this.inflight.set(id, { message, resolve, reject });
            if (this.connected) this.send(encodePublish({ ...message, packetId: id }));
        });
    }
}
