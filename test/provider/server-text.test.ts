// A server's free texts (descriptions, metadata) that carry the caller's key are withheld from the state
// and the messages (provider/server-text.ts; issue 39): the single IpPolicyRule's read and the ApiKey's
// read, against the emulator listing what a hostile server (or a gateway that sees the key) would.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { compiled, configureRequest, newRun, serializedProvider } from "../helpers/provider";

const config = compiled("provider/config.js");
const serverText = compiled("provider/server-text.js");
const render = compiled("provider/http/render-msg.js");
const redact = compiled("provider/http/redact.js");

describe("which texts are withheld (textsToWithhold): the key's pieces, not ordinary texts", () => {
  const KEY = "k3vGIOL7e56eodXb5EajRoxY_cPgjkmm-IeZMfH11lzEEoLtn_gIUr317";
  const material = render.keyWindows([KEY]);
  const check = (body: object) => serverText.textsToWithhold(body, material, redact.scrub);
  it("withholds the key in 11- and 7-character pieces between words, in either field", () => {
    expect(check({ description: KEY.match(/.{1,11}/g)!.join(" and ") })).toEqual(["description"]);
    expect(
      check({
        description: KEY.replace(/[-_]/g, "")
          .match(/.{1,7}/g)!
          .join(" q "),
      }),
    ).toEqual(["description"]);
    expect(check({ metadata: JSON.stringify({ note: KEY.match(/.{1,7}/g)!.join(" q ") }) })).toEqual(["metadata"]);
  });
  it("keeps ordinary texts and a marker with its signature", () => {
    const marker = {
      "managed-by": "pulumi-accessctl",
      stack: "shop/a",
      attempt: "e7c4e297becc5bc2",
      sig: "UiIkqMZvGeUFj_JYPoSY9g",
    };
    const body = { description: "office VPN of the shop team, 2nd floor", metadata: JSON.stringify(marker) };
    expect(check(body)).toEqual([]);
  });
});

describe("a rule's and a key's read withhold a description that carries the caller's key", () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startEmulator(["--rate-limit", "off"]);
  });
  afterAll(async () => {
    await emu.stop();
  });
  const withKey = (key: string) =>
    config.configure(
      configureRequest({
        "accessctl:apiUrl": emu.url,
        "accessctl:apiKey": key,
        "accessctl:maxRequestsPerMinute": "1000000",
      }),
    );
  /** What `run` writes to stderr (the one line a read says without an engine). */
  const stderrOf = async <T>(run: () => Promise<T>): Promise<[T, string]> => {
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: any, ...rest: any[]) => {
      written.push(String(chunk));
      return write(chunk, ...rest);
    }) as any;
    try {
      return [await run(), written.join("")];
    } finally {
      process.stderr.write = write;
    }
  };
  const hostile = () => (emu.adminToken as string).match(/.{1,11}/g)!.join(" and ");
  const pieces = () => (emu.adminToken as string).match(/.{11}/g)!;

  for (const kind of ["ip-policy-rule", "api-key"] as const) {
    it(`${kind}: the read's outputs hold the placeholder, and one line says so (never the text)`, async () => {
      await withKey(emu.adminToken);
      newRun();
      const api = client(emu.url, emu.adminToken);
      const made =
        kind === "ip-policy-rule"
          ? await api.post("/ip_policy_rules", {
              ip_policy_id: emu.fixtures.ipPolicies[1],
              cidr: "198.51.100.0/24",
              action: "allow",
              description: hostile(),
            })
          : await api.post("/api_keys", { description: hostile() });
      expect(made.status).toBe(201);
      const provider = (await serializedProvider(kind)).provider;
      const [read, said] = await stderrOf(() => provider.read(made.body.id, {}));
      expect(read.props.description).toBe(serverText.WITHHELD_TEXT);
      const state = JSON.stringify(read);
      expect(pieces().filter((p) => state.includes(p) || said.includes(p))).toEqual([]);
      const lines = said.split("\n").filter((l) => l.includes("returned a text containing credential material"));
      expect(lines).toEqual([expect.stringContaining(`(description of ${made.body.id})`)]);
      if (kind === "ip-policy-rule") await api.delete(`/ip_policy_rules/${made.body.id}`);
    });
  }
});
