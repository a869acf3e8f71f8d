// The console's MQTT packets against bytes written out by hand from the MQTT 3.1.1 spec, and
// its client's exchanges over a stand-in WebSocket.
// Run: node Tests/Console/mqtt_packets.mjs   (exit status 1 on the first mismatch)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const source = readFileSync(path.join(here, '../../deploy/console/mqtt.js'), 'utf8');
// mqtt.js has no imports, so it loads as a data: module without a package.json beside it.
const m = await import('data:text/javascript;base64,' + Buffer.from(source).toString('base64'));

let failures = 0, checks = 0;
const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');
function same(name, actual, expected) {
    checks++;
    const a = typeof actual === 'object' ? JSON.stringify(actual) : String(actual);
    const e = typeof expected === 'object' ? JSON.stringify(expected) : String(expected);
    if (a !== e) { failures++; console.log(`FAIL ${name}\n  got      ${a}\n  expected ${e}`); }
}
const bytes = (s) => s.split(' ').map((x) => parseInt(x, 16));

same('length 0', m.encodeLength(0), [0]);
same('length 127', m.encodeLength(127), [0x7f]);
same('length 128', m.encodeLength(128), [0x80, 0x01]);
same('length 321', m.encodeLength(321), [0xc1, 0x02]);
same('length 16383', m.encodeLength(16383), [0xff, 0x7f]);
same('length 2097152', m.encodeLength(2097152), [0x80, 0x80, 0x80, 0x01]);

same('CONNECT anonymous', hex(m.encodeConnect({ clientId: 'c1', keepalive: 60 })),
    '10 0e 00 04 4d 51 54 54 04 02 00 3c 00 02 63 31');
same('CONNECT with credentials', hex(m.encodeConnect({ clientId: 'c1', username: 'u', password: 'p', keepalive: 30 })),
    '10 14 00 04 4d 51 54 54 04 c2 00 1e 00 02 63 31 00 01 75 00 01 70');
same('SUBSCRIBE', hex(m.encodeSubscribe(1, [{ topic: 'a/b', qos: 1 }])), '82 08 00 01 00 03 61 2f 62 01');
same('PUBLISH QoS 0', hex(m.encodePublish({ topic: 'a/b', payload: 'hi' })), '30 07 00 03 61 2f 62 68 69');
same('PUBLISH QoS 1 retained', hex(m.encodePublish({ topic: 'a', payload: 'x', qos: 1, retain: true, packetId: 10 })),
    '33 06 00 01 61 00 0a 78');
same('PUBLISH QoS 1 dup', hex(m.encodePublish({ topic: 'a', payload: '', qos: 1, dup: true, packetId: 258 })),
    '3a 05 00 01 61 01 02');
same('PUBACK', hex(m.encodePuback(10)), '40 02 00 0a');
same('PINGREQ', hex(m.encodePingreq()), 'c0 00');
same('DISCONNECT', hex(m.encodeDisconnect()), 'e0 00');
const long = 'é'.repeat(100); // 200 bytes of UTF-8: a two-byte Remaining Length
same('PUBLISH long payload head', hex(m.encodePublish({ topic: 't', payload: long }).subarray(0, 6)), '30 cb 01 00 01 74');

// Decoding, with packets split across and joined within WebSocket messages.
const reader = new m.PacketReader();
reader.push(bytes('20 02 00 05 90'));
same('CONNACK refused', reader.next(), { type: 2, sessionPresent: false, returnCode: 5 });
same('SUBACK incomplete', reader.next(), null);
reader.push(bytes('04 00 01 01 80 d0 00 32 09 00 03 61 2f 62 00 07 7b 7d'));
same('SUBACK', reader.next(), { type: 9, packetId: 1, returnCodes: [1, 0x80] });
same('PINGRESP', reader.next(), { type: 13 });
const publish = reader.next();
same('PUBLISH QoS 1 in', { ...publish, payload: Array.from(publish.payload) },
    { type: 3, dup: false, qos: 1, retain: false, topic: 'a/b', packetId: 7, payload: [0x7b, 0x7d] });
same('nothing left', reader.next(), null);
reader.push(bytes('31'));
same('only a first byte', reader.next(), null);
reader.push(bytes('80'));
same('half a length', reader.next(), null);
reader.push([0x01]); // Remaining Length 0x80 0x01: 128 bytes
const big = [0x00, 0x01, 0x74, ...new Array(125).fill(0x41)];
reader.push(big);
const retained = reader.next();
same('retained QoS 0 with a two-byte length', [retained.retain, retained.topic, retained.payload.length], [true, 't', 125]);
const ack = new m.PacketReader();
ack.push(bytes('40 02 01 02'));
same('PUBACK in', ack.next(), { type: 4, packetId: 258 });

// The client over a stand-in WebSocket: CONNECT, SUBSCRIBE at CONNACK, QoS 1 both ways,
// PINGREQ when idle, and after a lost connection a new CONNECT, SUBSCRIBE and the unacknowledged
// PUBLISH again with DUP.
class FakeSocket {
    static all = [];
    constructor(url, protocols) {
        this.url = url; this.protocols = protocols; this.sent = []; this.readyState = 0;
        FakeSocket.all.push(this);
        setTimeout(() => { this.readyState = 1; this.onopen(); }, 0);
    }
    send(bytes) { this.sent.push(hex(bytes)); }
    close() { if (this.readyState === 3) return; this.readyState = 3; setTimeout(() => this.onclose({ code: 1006 }), 0); }
    deliver(text) { this.onmessage({ data: new Uint8Array(bytes(text)).buffer }); }
}
const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));
const client = new m.MqttClient({ url: 'ws://box/', clientId: 'c1', keepalive: 1, WebSocketImpl: FakeSocket });
const states = [], messages = [];
client.on('state', (s) => states.push(s.state));
client.on('message', (msg) => messages.push([msg.topic, Array.from(msg.payload)]));
client.subscribe('a/b', 1);
client.connect();
await tick();
const first = FakeSocket.all[0];
same('subprotocol mqtt', first.protocols, ['mqtt']);
same('CONNECT first', first.sent, ['10 0e 00 04 4d 51 54 54 04 02 00 01 00 02 63 31']);
first.deliver('20 02 00 00');
same('SUBSCRIBE at CONNACK', first.sent[1], '82 08 00 01 00 03 61 2f 62 01');
first.deliver('90 03 00 01 01');
let acked = false;
client.publish('q', 'x', { qos: 1 }).then(() => { acked = true; });
same('PUBLISH QoS 1 out', first.sent[2], '32 06 00 01 71 00 02 78');
first.deliver('32 09 00 03 61 2f 62 00 07 7b 7d');
same('PUBACK for a QoS 1 message in', first.sent[3], '40 02 00 07');
same('message delivered', messages, [['a/b', [0x7b, 0x7d]]]);
await tick(1100);
same('PINGREQ after half a keepalive without sending', first.sent.includes('c0 00'), true);
first.deliver('d0 00');
first.close();
await tick(700); // the first reconnect waits 0.5 s
const second = FakeSocket.all[1];
same('reconnects', !!second, true);
second.deliver('20 02 00 00');
same('after the reconnect: CONNECT, SUBSCRIBE again, the PUBLISH again with DUP',
    [second.sent[0].slice(0, 2), second.sent[1].slice(0, 2), second.sent[2]], ['10', '82', '3a 06 00 01 71 00 02 78']);
same('not acknowledged yet', acked, false);
second.deliver('40 02 00 02');
await tick();
same('PUBACK resolves the publish', acked, true);
same('states', states, ['connecting', 'connected', 'closed', 'connecting', 'connected']);
const refusing = new m.MqttClient({ url: 'ws://box/', clientId: 'c2', WebSocketImpl: FakeSocket });
const refusals = [];
refusing.on('state', (s) => refusals.push(`${s.state}${s.detail && s.state === 'refused' ? ': ' + s.detail : ''}`));
refusing.connect();
await tick();
FakeSocket.all[2].deliver('20 02 00 05');
await tick(700);
same('a refused login does not reconnect', [refusals, FakeSocket.all.length], [['connecting', 'refused: not authorized'], 3]);
client.stop();

console.log(`mqtt packets: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
