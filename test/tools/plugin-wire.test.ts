// The plugin's reading and writing of the protocol's Structs (plugin/wire.ts) against google-protobuf's
// own: what a handler gets is what Struct.toJavaScript then unwrapSecrets gave (keys in the same order),
// with the same secret keys; what goes back decodes to what Struct.fromJavaScript(JSON.parse(JSON.stringify))
// sent, without the host's keys at any depth.
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const wire = compiled("plugin/wire.js");
const { SECRET_SIG, SECRET_VALUE, unwrapSecrets } = compiled("provider/secret-values.js");

const secret = (value: unknown) => ({ [SECRET_SIG]: SECRET_VALUE, value });
/** What the server did before: Struct.toJavaScript, the keys whose JSON held the signature, unwrapSecrets. */
function before(bytes: Uint8Array) {
  const raw = structproto.Struct.deserializeBinary(bytes).toJavaScript() as Record<string, unknown>;
  return {
    values: unwrapSecrets(raw),
    secretKeys: Object.keys(raw).filter((k) => JSON.stringify(raw[k] ?? null).includes(SECRET_SIG)),
  };
}
const HOST = ["__urn", "__secrets", "__provider"];
const sentBefore = (v: object) =>
  structproto.Struct.fromJavaScript(
    JSON.parse(JSON.stringify(v, (k, x) => (HOST.includes(k) ? undefined : x))),
  ).toJavaScript();
const sentNow = (v: object) =>
  structproto.Struct.deserializeBinary(new Uint8Array(wire.encodeStruct(v))).toJavaScript();

/** A random value of every kind a Struct holds, and what JSON leaves out or changes. */
function random(seed: number) {
  let s = seed;
  const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)];
  const str = () =>
    pick([
      "",
      "a",
      "10.0.0.0/8",
      "ünïcode ✓ 😀",
      "x".repeat(300),
      'quote"back\\slash\n',
      SECRET_SIG,
      `in ${SECRET_SIG} text`,
      "__urn",
      "zz",
      "B",
      "b",
    ]);
  const value = (depth: number): unknown => {
    const k = Math.floor(rnd() * (depth > 3 ? 6 : 10));
    switch (k) {
      case 0:
        return null;
      case 1:
        return pick([0, -0, 1.5, -7, 2 ** 53, 1e-300, NaN, Infinity, -Infinity]);
      case 2:
        return rnd() < 0.5;
      case 3:
      case 4:
        return str();
      case 5:
        return pick([undefined, () => 1]);
      case 6:
        return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
      case 7:
        return secret(value(depth + 1));
      default:
        return object(depth + 1);
    }
  };
  const object = (depth: number) =>
    Object.fromEntries(
      Array.from({ length: Math.floor(rnd() * 6) }, () => [
        pick([
          "a",
          "b",
          "B",
          "10.9.0.0/24",
          "10.10.0.0/24",
          "__urn",
          "__provider",
          "__secrets",
          "value",
          "Ω",
          "z",
          str(),
        ]),
        value(depth),
      ]),
    );
  return object(0);
}

describe("plugin/wire.ts, against google-protobuf", () => {
  it("reads a Struct as toJavaScript + unwrapSecrets did: the same values, keys in the same order, the same secret keys", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const v = random(seed);
      const bytes = structproto.Struct.fromJavaScript(JSON.parse(JSON.stringify(v))).serializeBinary();
      const now = wire.decodePlain(Buffer.from(bytes));
      const then = before(bytes);
      expect(JSON.stringify(now.values), `seed ${seed}`).toBe(JSON.stringify(then.values));
      expect(now.secretKeys, `seed ${seed}`).toEqual(then.secretKeys);
    }
  });

  it("writes a Struct as fromJavaScript(JSON.parse(JSON.stringify(…))) did, the host's keys left out at any depth", () => {
    for (let seed = 1; seed <= 400; seed++) {
      const v = random(seed);
      expect(JSON.stringify(sentNow(v)), `seed ${seed}`).toBe(JSON.stringify(sentBefore(v)));
    }
    const date = new Date(0);
    expect(sentNow({ at: date, n: new Number(3), list: [undefined, NaN, -0] })).toEqual(
      sentBefore({ at: date, n: new Number(3), list: [undefined, NaN, -0] }),
    );
    expect(() => wire.encodeStruct({ big: 1n })).toThrow(/BigInt/);
  });

  it("reads the wire's map entries in any order (the engine's), and a key given twice as its last value", () => {
    const entry = (key: string, value: structproto.Value) => {
      const one = new structproto.Struct();
      one.getFieldsMap().set(key, value);
      return Buffer.from(one.serializeBinary());
    };
    const bytes = Buffer.concat([
      entry("b", structproto.Value.fromJavaScript(1)),
      entry("a", structproto.Value.fromJavaScript("x")),
      entry("b", structproto.Value.fromJavaScript(2)),
    ]);
    const now = wire.decodePlain(bytes);
    expect(JSON.stringify(now.values)).toBe(JSON.stringify(before(bytes).values));
    expect(JSON.stringify(now.values)).toBe('{"a":"x","b":2}');
    const s = new structproto.Struct();
    s.getFieldsMap().set("k", new structproto.Value());
    expect(() => wire.decodePlain(Buffer.from(s.serializeBinary()))).toThrow(/Unexpected struct type/);
    expect(() => structproto.Struct.deserializeBinary(s.serializeBinary()).toJavaScript()).toThrow(
      /Unexpected struct type/,
    );
  });

  it("splits a request off the wire (its Structs kept as bytes) and joins a response: the same messages as the generated classes'", () => {
    const news = {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": { cidr: "10.0.0.0/8", action: "allow" } },
      token: secret("s3cret"),
    };
    const req = new provproto.CheckRequest()
      .setUrn("urn:x")
      .setOlds(structproto.Struct.fromJavaScript({}))
      .setNews(structproto.Struct.fromJavaScript(news as never))
      .setName("r");
    const split = wire.deserialize(provproto.CheckRequest, ["olds", "news"], Buffer.from(req.serializeBinary()));
    expect(split.getUrn()).toBe("urn:x");
    expect(split.getName()).toBe("r");
    expect(split.getNews()).toBeFalsy(); // kept as bytes
    expect(wire.valuesOf(split, "news")).toEqual({ values: { ...news, token: "s3cret" }, secretKeys: ["token"] });
    expect(wire.valuesOf(req, "news")).toEqual(wire.valuesOf(split, "news")); // a request made in process: the same
    const resp = wire.setValues(new provproto.ReadResponse().setId("ipp_1"), "properties", { a: 1, __urn: "u" });
    wire.setValues(resp, "inputs", wire.bytesOf(split, "news"));
    const back = provproto.ReadResponse.deserializeBinary(new Uint8Array(wire.serialize(resp)));
    expect(back.getId()).toBe("ipp_1");
    expect(back.getProperties()!.toJavaScript()).toEqual({ a: 1 });
    expect(back.getInputs()!.toJavaScript()).toEqual(req.getNews()!.toJavaScript());
  });
});
