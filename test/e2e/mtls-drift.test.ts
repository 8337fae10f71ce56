// A mutual TLS module disabled by hand, as `preview --refresh --diff` shows it with the real CLI: a
// change back to the declared value (`~ enabled: false => true`), not a removal (`- enabled: false`),
// whether the program states `enabled: true` or leaves it to the default; an unchanged module shows
// no marker at all, before and after the drift is put back.
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { client, RunningEmulator, startEmulator } from "../helpers/emulator";
import { Spec, testStack } from "../helpers/stack";

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator(["--rate-limit", "off"]);
});
afterAll(async () => {
  await emu?.stop();
});

it("a module disabled by hand reads as ~ enabled: false => true in preview --refresh --diff", async () => {
  const f = emu.fixtures;
  const spec: Spec = {
    modules: {
      stated: { edgeId: f.tlsEdges[0], certificateAuthorityIds: [f.certificateAuthorities[0]], enabled: true },
      implied: { edgeId: f.tlsEdges[1], certificateAuthorityIds: [f.certificateAuthorities[1]] },
    },
  };
  const stack = testStack({ project: inject("e2e"), emulator: emu, name: "mtls" });
  try {
    await stack.ok("up", spec);
    const clean = await stack.ok("preview", spec, { refresh: true });
    expect(clean.changeSummary).toEqual({ same: 3 });
    expect(clean.output).not.toMatch(/\[diff: |[-~] enabled/);

    const api = client(emu.url, emu.adminToken);
    for (const [edge, ca] of [
      [f.tlsEdges[0], f.certificateAuthorities[0]],
      [f.tlsEdges[1], f.certificateAuthorities[1]],
    ]) {
      expect(
        (await api.put(`/edges/tls/${edge}/mutual_tls`, { enabled: false, certificate_authority_ids: [ca] })).status,
      ).toBe(200);
    }
    const drift = await stack.ok("preview", spec, { refresh: true });
    expect(drift.changeSummary).toMatchObject({ update: 2 });
    const section = (name: string) =>
      drift.output
        .split(/\n {4}(?=[~+-] )/)
        .filter((s) => s.includes(`::${name}]`))
        .pop() ?? "";
    for (const name of ["stated", "implied"]) {
      expect(section(name)).toMatch(/\(update\)[\s\S]*~ enabled\s*: false => true/);
      expect(section(name)).not.toMatch(/- enabled/);
    }

    await stack.ok("up", spec, { refresh: true });
    for (const edge of f.tlsEdges) expect((await api.get(`/edges/tls/${edge}/mutual_tls`)).body.enabled).toBe(true);
    const after = await stack.ok("preview", spec, { refresh: true, expectNoChanges: true });
    expect(after.changeSummary).toEqual({ same: 3 });
    expect(after.output).not.toMatch(/\[diff: |[-~] enabled/);
    await stack.ok("destroy");
  } finally {
    stack.cleanup();
  }
});
