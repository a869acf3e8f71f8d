// The console's MQTT packets against bytes written out by hand from the MQTT 3.1.1 spec.
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

console.log(`mqtt packets: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
