// The protocol's property bags (google.protobuf.Struct) read from and written to the wire as plain
// values, for the plugin's large messages (Check, Diff, Create, Read, Update, Delete, Invoke). The
// generated messages (google-protobuf) build a tree of message objects for a Struct, 20 to 40 times
// the size of the values it holds (37 MB for the outputs of a set of 5,000 rules, 1.3 MB on the
// wire), and as much again of garbage to make it and to turn it into values; for the resource's
// lifetime in a call, a set's request then held more than the rest of the process. Here:
// - a request is split as it comes off the wire (`requestDeserialize`): its Struct fields stay bytes
//   (a view of the received buffer, no copy), the rest goes to the generated class as before; the
//   handler decodes a field when it asks for it (`valuesOf`), straight to plain values;
// - a response's Struct fields are encoded by the handler from plain values (`setValues`) and joined
//   to the generated class's bytes for the rest (`responseSerialize`). Fields of a message may come in
//   any order on the wire.
// The values are those Struct.toJavaScript gives and Struct.fromJavaScript takes: keys in sorted
// order (the engine sends a map's entries in any order; the generated Map sorts them), a value with
// no kind refused ("Unexpected struct type"), and written as JSON.stringify would write them (no
// undefined, a non-finite number as null), without the host's own keys (__urn, __secrets,
// __provider) at any depth, as the server sent them before.
import type * as grpc from "@grpc/grpc-js";
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import { SECRET_SIG, SECRET_VALUE } from "../provider/secret-values";

type Values = Record<string, unknown>;
/** A generated message class. */
interface MessageClass {
  new (): object;
  deserializeBinary(bytes: Uint8Array): object;
}
/** A generated message object, as the server handles it. */
interface Message {
  serializeBinary(): Uint8Array;
}

/** On a request split here: its Struct fields' bytes, by name. On a response: the encoded Struct fields, by number. */
const WIRE = Symbol.for("@accessctl/pulumi/plugin/wire");
interface Split {
  [WIRE]?: Record<string, Buffer | undefined>;
}
interface Joined {
  [WIRE]?: Map<number, Buffer>;
}

/** The keys the host adds for the modules, never sent back (any depth, as the JSON replacer of before). */
const HOST_KEYS = new Set(["__urn", "__secrets", "__provider"]);

const cap = (name: string) => name[0].toUpperCase() + name.slice(1);

/** Field numbers by class and name (the plugin is bundled: its module scope is its own). */
const NUMBERS = new Map<MessageClass, Map<string, number>>();

/** A Struct field's number in `cls`, as the generated setter writes it. */
function fieldNumber(cls: MessageClass, name: string): number {
  const known = NUMBERS.get(cls) ?? NUMBERS.set(cls, new Map()).get(cls)!;
  let n = known.get(name);
  if (n === undefined) {
    const msg = new cls() as Record<string, (v: unknown) => Message>;
    n = Math.floor(
      readVarint(Buffer.from(msg[`set${cap(name)}`](new structproto.Struct()).serializeBinary()), 0).value / 8,
    );
    known.set(name, n);
  }
  return n;
}

// ---- bytes --------------------------------------------------------------------------------------

/** A varint at `pos` (values up to 2^53; protobuf lengths and tags are far smaller). */
function readVarint(buf: Buffer, pos: number): { value: number; pos: number } {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (pos >= buf.length) throw new Error("truncated message");
    const b = buf[pos++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return { value, pos };
    scale *= 128;
    if (scale > 2 ** 63) throw new Error("malformed varint");
  }
}

/**
 * Where the field starting at `pos` ends, and where its content
 * starts (wire types 0, 1, 2, 5; groups are not used by the protocol).
 */
function skipField(buf: Buffer, pos: number, wireType: number): { start: number; end: number } {
  switch (wireType) {
    case 0: {
      const v = readVarint(buf, pos);
      return { start: pos, end: v.pos };
    }
    case 1:
      return { start: pos, end: pos + 8 };
    case 2: {
      const len = readVarint(buf, pos);
      return { start: len.pos, end: len.pos + len.value };
    }
    case 5:
      return { start: pos, end: pos + 4 };
    default:
      throw new Error(`unsupported wire type ${wireType}`);
  }
}

const varintSize = (n: number) => (n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5);

function writeVarint(buf: Buffer, pos: number, n: number): number {
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
  return pos;
}

// ---- decoding: Struct bytes to values -----------------------------------------------------------

/**
 * What a decode found: whether a key or a string holds Pulumi's secret signature (what
 * JSON.stringify(value).includes(SECRET_SIG) said before).
 */
interface Seen {
  sig: boolean;
}

/**
 * The values of a Struct's bytes, as Struct.toJavaScript gives them, each secret
 * (`{[SECRET_SIG]: SECRET_VALUE, value}`) as its value, as unwrapSecrets gives it.
 */
function decodeStruct(buf: Buffer, start: number, end: number, seen: Seen): Values | unknown {
  const keys: string[] = [];
  const values: unknown[] = [];
  let sorted = true;
  let pos = start;
  while (pos < end) {
    const tag = readVarint(buf, pos);
    const f = skipField(buf, tag.pos, tag.value % 8);
    pos = f.end;
    if (tag.value !== 0x0a) continue; // not field 1 (the map's entries): unknown, skipped
    let key = "";
    let value: unknown;
    let hasValue = false;
    for (let p = f.start; p < f.end;) {
      const t = readVarint(buf, p);
      const g = skipField(buf, t.pos, t.value % 8);
      p = g.end;
      if (t.value === 0x0a) key = buf.toString("utf8", g.start, g.end);
      else if (t.value === 0x12) {
        value = g;
        hasValue = true;
      }
    }
    if (!hasValue) throw new Error("Unexpected struct type"); // a map entry's value left out is a Value of no kind
    if (key.includes(SECRET_SIG)) seen.sig = true;
    if (keys.length && keys[keys.length - 1] > key) sorted = false;
    keys.push(key);
    values.push(value);
  }
  // Decoded in key order, duplicates last (as the generated Map keeps them).
  const order = keys.map((_, i) => i);
  if (!sorted) order.sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
  const out: Values = {};
  for (const i of order) {
    const key = keys[i];
    const at = values[i] as { start: number; end: number };
    // `__proto__` set the prototype there, which the copy of
    // unwrapSecrets then left out: left out here (read all the same).
    if (key === "__proto__") decodeValue(buf, at.start, at.end, { sig: false });
    else out[key] = decodeValue(buf, at.start, at.end, seen);
  }
  return out[SECRET_SIG] === SECRET_VALUE ? out.value : out;
}

function decodeValue(buf: Buffer, start: number, end: number, seen: Seen): unknown {
  let kind = 0;
  let at = { start: 0, end: 0 };
  let pos = start;
  while (pos < end) {
    const tag = readVarint(buf, pos);
    const field = Math.floor(tag.value / 8);
    const f = skipField(buf, tag.pos, tag.value % 8);
    pos = f.end;
    if (field >= 1 && field <= 6) {
      kind = field; // a oneof: the last one wins
      at = f;
    }
  }
  switch (kind) {
    case 1:
      return null;
    case 2:
      return buf.readDoubleLE(at.start);
    case 3: {
      const s = buf.toString("utf8", at.start, at.end);
      if (s.length >= SECRET_SIG.length && s.includes(SECRET_SIG)) seen.sig = true;
      return s;
    }
    case 4:
      return readVarint(buf, at.start).value !== 0;
    case 5:
      return decodeStruct(buf, at.start, at.end, seen);
    case 6: {
      const list: unknown[] = [];
      for (let p = at.start; p < at.end;) {
        const t = readVarint(buf, p);
        const g = skipField(buf, t.pos, t.value % 8);
        p = g.end;
        if (t.value === 0x0a) list.push(decodeValue(buf, g.start, g.end, seen));
      }
      return list;
    }
    default:
      throw new Error("Unexpected struct type");
  }
}

// ---- encoding: values to Struct bytes -----------------------------------------------------------

/** A value as JSON.stringify would write it (toJSON, boxed primitives); undefined where it would leave it out. */
function jsonValue(v: unknown, key: string): unknown {
  if (v !== null && typeof v === "object" && typeof (v as { toJSON?: unknown }).toJSON === "function")
    v = (v as { toJSON: (k: string) => unknown }).toJSON(key);
  if (v instanceof Number) return Number(v);
  if (v instanceof String) return String(v);
  if (v instanceof Boolean) return v.valueOf();
  if (typeof v === "bigint") throw new TypeError("Do not know how to serialize a BigInt");
  if (v === undefined || typeof v === "function" || typeof v === "symbol") return undefined;
  return v;
}

/**
 * The sizes of what `encodeStruct` writes, one entry per string (its bytes) and per nested message
 * (its bytes), in the order the writer meets them: the first pass of two, so that each length is
 * known before its bytes are written.
 */
function sizeObject(o: object, sizes: number[]): number {
  let total = 0;
  for (const key of Object.keys(o)) {
    if (HOST_KEYS.has(key)) continue;
    const v = jsonValue((o as Values)[key], key);
    if (v === undefined) continue;
    const at = sizes.length;
    sizes.push(0, 0, 0); // the entry, its key, its value
    const k = Buffer.byteLength(key);
    const val = sizeValue(v, sizes);
    const entry = 1 + varintSize(k) + k + 1 + varintSize(val) + val;
    sizes[at] = entry;
    sizes[at + 1] = k;
    sizes[at + 2] = val;
    total += 1 + varintSize(entry) + entry;
  }
  return total;
}

function sizeValue(v: unknown, sizes: number[]): number {
  if (v === null || (typeof v === "number" && !Number.isFinite(v))) return 2;
  switch (typeof v) {
    case "number":
      return 9;
    case "boolean":
      return 2;
    case "string": {
      const n = Buffer.byteLength(v);
      sizes.push(n);
      return 1 + varintSize(n) + n;
    }
  }
  const at = sizes.length;
  sizes.push(0);
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const item = jsonValue(v[i], String(i));
      const m = sizeValue(item === undefined ? null : item, sizes);
      n += 1 + varintSize(m) + m;
    }
  } else {
    n = sizeObject(v as object, sizes);
  }
  sizes[at] = n;
  return 1 + varintSize(n) + n;
}

class Writer {
  pos = 0;
  next = 0; // the next entry of sizes
  constructor(
    readonly buf: Buffer,
    readonly sizes: number[],
  ) {}

  object(o: object): void {
    for (const key of Object.keys(o)) {
      if (HOST_KEYS.has(key)) continue;
      const v = jsonValue((o as Values)[key], key);
      if (v === undefined) continue;
      const [entry, k, val] = [this.sizes[this.next], this.sizes[this.next + 1], this.sizes[this.next + 2]];
      this.next += 3;
      this.buf[this.pos++] = 0x0a;
      this.pos = writeVarint(this.buf, this.pos, entry);
      this.buf[this.pos++] = 0x0a;
      this.pos = writeVarint(this.buf, this.pos, k);
      this.pos += this.buf.write(key, this.pos, k, "utf8");
      this.buf[this.pos++] = 0x12;
      this.pos = writeVarint(this.buf, this.pos, val);
      this.value(v);
    }
  }

  value(v: unknown): void {
    const b = this.buf;
    if (v === null || (typeof v === "number" && !Number.isFinite(v))) {
      b[this.pos++] = 0x08; // null_value
      b[this.pos++] = 0;
      return;
    }
    switch (typeof v) {
      case "number":
        b[this.pos++] = 0x11; // number_value
        this.pos = b.writeDoubleLE(v === 0 ? 0 : v, this.pos); // -0 as 0, as JSON writes it
        return;
      case "boolean":
        b[this.pos++] = 0x20; // bool_value
        b[this.pos++] = v ? 1 : 0;
        return;
      case "string": {
        const n = this.sizes[this.next++];
        b[this.pos++] = 0x1a; // string_value
        this.pos = writeVarint(b, this.pos, n);
        this.pos += b.write(v, this.pos, n, "utf8");
        return;
      }
    }
    const n = this.sizes[this.next++];
    if (Array.isArray(v)) {
      b[this.pos++] = 0x32; // list_value
      this.pos = writeVarint(b, this.pos, n);
      for (let i = 0; i < v.length; i++) {
        const item = jsonValue(v[i], String(i));
        const m = this.peekValueSize(item === undefined ? null : item);
        b[this.pos++] = 0x0a;
        this.pos = writeVarint(b, this.pos, m);
        this.value(item === undefined ? null : item);
      }
      return;
    }
    b[this.pos++] = 0x2a; // struct_value
    this.pos = writeVarint(b, this.pos, n);
    this.object(v as object);
  }

  /** The encoded size of a list item about to be written (its sizes entry, or its fixed size). */
  private peekValueSize(v: unknown): number {
    if (v === null || (typeof v === "number" && !Number.isFinite(v))) return 2;
    if (typeof v === "number") return 9;
    if (typeof v === "boolean") return 2;
    const n = this.sizes[this.next];
    return 1 + varintSize(n) + n;
  }
}

/**
 * A Struct's bytes for `value` (an object), as
 * Struct.fromJavaScript(JSON.parse(JSON.stringify(value, without the host's keys))) would serialize.
 */
export function encodeStruct(value: object): Buffer {
  const sizes: number[] = [];
  const top = jsonValue(value, "");
  const n = top !== null && typeof top === "object" ? sizeObject(top, sizes) : 0;
  const w = new Writer(Buffer.allocUnsafe(n), sizes);
  if (n) w.object(top as object);
  if (w.pos !== n) throw new Error(`struct encoding: wrote ${w.pos} bytes of ${n}`);
  return w.buf;
}

/**
 * Plain values of a Struct's bytes, each secret as its value (as unwrapSecrets gives them), and the
 * top-level keys whose value held a secret (or the secret signature anywhere: a key or a string).
 */
export function decodePlain(bytes: Buffer | undefined): { values: Values; secretKeys: string[] } {
  const keys: string[] = [];
  const spans: { start: number; end: number }[] = [];
  for (let pos = 0; bytes && pos < bytes.length;) {
    const tag = readVarint(bytes, pos);
    const f = skipField(bytes, tag.pos, tag.value % 8);
    pos = f.end;
    if (tag.value !== 0x0a) continue;
    let key = "";
    let span: { start: number; end: number } | undefined;
    for (let p = f.start; p < f.end;) {
      const t = readVarint(bytes, p);
      const g = skipField(bytes, t.pos, t.value % 8);
      p = g.end;
      if (t.value === 0x0a) key = bytes.toString("utf8", g.start, g.end);
      else if (t.value === 0x12) span = g;
    }
    if (!span) throw new Error("Unexpected struct type");
    keys.push(key);
    spans.push(span);
  }
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b));
  const last: Record<string, number> = {}; // a key given twice: its last value (the generated Map keeps that one)
  for (const i of order) last[keys[i]] = i;
  let values: Values = {};
  const secretKeys: string[] = [];
  for (const i of order) {
    const key = keys[i];
    if (last[key] !== i) continue;
    const seen = { sig: false };
    const value = decodeValue(bytes!, spans[i].start, spans[i].end, seen);
    if (key === "__proto__") continue;
    values[key] = value;
    if (seen.sig) secretKeys.push(key);
  }
  // the whole bag a secret (never sent so; as unwrapSecrets did)
  if (values[SECRET_SIG] === SECRET_VALUE) values = values.value as Values;
  return { values, secretKeys };
}

// ---- the messages -------------------------------------------------------------------------------

/** Bytes to send as a Struct field as they came (a preview hands a request's properties back). */
export class StructBytes {
  constructor(readonly bytes: Buffer) {}
}

/**
 * A Struct field of a request: its values, secrets unwrapped, and the top-level keys that held one.
 * A request made in this process (a test's) rather than read off the wire goes through its bytes too.
 */
export function valuesOf(req: object, name: string): { values: Values; secretKeys: string[] } {
  const split = (req as Split)[WIRE];
  if (split) return decodePlain(split[name]);
  const struct = (req as Record<string, () => structproto.Struct | undefined>)[`get${cap(name)}`]();
  return decodePlain(struct ? Buffer.from(struct.serializeBinary()) : undefined);
}

/** A Struct field of a request as it came, to be sent back unchanged. */
export function bytesOf(req: object, name: string): StructBytes | undefined {
  const split = (req as Split)[WIRE];
  const struct = split ? undefined : (req as Record<string, () => structproto.Struct | undefined>)[`get${cap(name)}`]();
  const bytes = split ? split[name] : struct && Buffer.from(struct.serializeBinary());
  return bytes && new StructBytes(bytes);
}

/** Sets the Struct field `name` of a response to `value` (plain values, encoded now; or bytes as they came). */
export function setValues<M extends object>(resp: M, name: string, value: object | StructBytes): M {
  const fields = ((resp as Joined)[WIRE] ??= new Map());
  fields.set(
    fieldNumber(resp.constructor as MessageClass, name),
    value instanceof StructBytes ? value.bytes : encodeStruct(value),
  );
  return resp;
}

/** The bytes of a response: the generated class's for its other fields, then each Struct field set by setValues. */
export function serialize(resp: object): Buffer {
  const head = Buffer.from((resp as Message).serializeBinary());
  const fields = (resp as Joined)[WIRE];
  if (!fields?.size) return head;
  const parts: Uint8Array[] = [head];
  for (const [field, bytes] of fields) {
    const prefix = Buffer.allocUnsafe(10);
    let n = writeVarint(prefix, 0, field * 8 + 2);
    n = writeVarint(prefix, n, bytes.length);
    parts.push(prefix.subarray(0, n), bytes);
  }
  return Buffer.concat(parts);
}

/** A request of class `cls` off the wire, its Struct fields `names` kept as bytes (a view of `buf`) for valuesOf. */
export function deserialize(cls: MessageClass, names: string[], buf: Buffer): object {
  const numbers = new Map(names.map((name) => [fieldNumber(cls, name), name]));
  const rest: Buffer[] = [];
  const structs: Record<string, Buffer[]> = {};
  let pos = 0;
  try {
    while (pos < buf.length) {
      const start = pos;
      const tag = readVarint(buf, pos);
      const f = skipField(buf, tag.pos, tag.value % 8);
      if (f.end > buf.length) throw new Error("truncated message");
      pos = f.end;
      const name = tag.value % 8 === 2 ? numbers.get(Math.floor(tag.value / 8)) : undefined;
      if (name) (structs[name] ??= []).push(buf.subarray(f.start, f.end));
      else rest.push(buf.subarray(start, pos));
    }
  } catch {
    return cls.deserializeBinary(new Uint8Array(buf)); // not what this reads: the generated class says what is wrong
  }
  const msg = cls.deserializeBinary(new Uint8Array(Buffer.concat(rest as Uint8Array[]))) as Split;
  // A message field given twice is merged: for a Struct, its entries one after the other.
  msg[WIRE] = Object.fromEntries(
    Object.entries(structs).map(([name, parts]) => [name, parts.length === 1 ? parts[0] : Buffer.concat(parts)]),
  );
  return msg;
}

/**
 * The service definition with the requests of `methods` read by `deserialize` (each method's Struct
 * fields by name) and every response written by `serialize`.
 */
export function withStructs(
  definition: grpc.ServiceDefinition,
  classes: Record<string, { request: MessageClass; structs: string[] }>,
): grpc.ServiceDefinition {
  const out: Record<string, unknown> = {};
  for (const [method, def] of Object.entries(definition)) {
    const m = classes[method];
    out[method] = {
      ...def,
      responseSerialize: serialize,
      ...(m ? { requestDeserialize: (buf: Buffer) => deserialize(m.request, m.structs, buf) } : {}),
    };
  }
  return out as grpc.ServiceDefinition;
}
