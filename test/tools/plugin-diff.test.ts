// What the plugin's Diff tells the engine, which decides what `preview --diff` prints. Pulumi prints a
// resource's old inputs whole, unmarked, when every path of a detailed diff is hidden (hideDiffs):
// for a set, every rule as it was. So a set's rule-by-rule diff, all under its hideDiffs `rules`, is
// not sent; the changed property is (`~ rules (hidden)`, as on the dynamic host). Other resources
// keep their detailed diff.
import * as grpc from "@grpc/grpc-js";
import * as structproto from "google-protobuf/google/protobuf/struct_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const { providerService } = compiled("plugin/server.js");
const service = providerService({ version: "0.1.0", schema: "{}" });

function diff(
  type: string,
  olds: Record<string, unknown>,
  news: Record<string, unknown>,
): Promise<provproto.DiffResponse> {
  const req = new provproto.DiffRequest()
    .setUrn(`urn:pulumi:dev::p::accessctl:index:${type}::r`)
    .setId("ipp_1")
    .setOlds(structproto.Struct.fromJavaScript(olds as Record<string, structproto.JavaScriptValue>))
    .setNews(structproto.Struct.fromJavaScript(news as Record<string, structproto.JavaScriptValue>));
  return new Promise((resolve, reject) =>
    service.diff(
      { request: req } as grpc.ServerUnaryCall<unknown, unknown>,
      (e: unknown, res: provproto.DiffResponse) => (e ? reject(e) : resolve(res)),
    ),
  );
}

const member = (cidr: string, action: string, description = "") => ({
  id: `ipr_${cidr.replace(/\W/g, "")}`,
  cidr,
  action,
  description,
  metadata: "",
  uri: "/x",
  createdAt: "2026-01-01T00:00:00Z",
});

describe("the plugin's Diff", () => {
  it("of a set: the changed property, no rule-by-rule detailed diff (every path of it is under hideDiffs)", async () => {
    const olds = {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": member("10.0.0.0/8", "allow"), "0.0.0.0/0": member("0.0.0.0/0", "allow", "in a hurry") },
    };
    const news = {
      ipPolicyId: "ipp_1",
      rules: { "10.0.0.0/8": { cidr: "10.0.0.0/8", action: "allow", description: "HQ" } },
    };
    const res = await diff("IpPolicyRuleSet", olds, news);
    expect(res.getChanges()).toBe(provproto.DiffResponse.DiffChanges.DIFF_SOME);
    expect(res.getHasdetaileddiff()).toBe(false);
    expect(res.getDetaileddiffMap().getLength()).toBe(0);
    expect(res.getDiffsList()).toEqual(["rules"]);
    expect(res.getReplacesList()).toEqual([]);
  });

  it("of a set whose policy changes: the replacing property, in a detailed diff (Pulumi shows it)", async () => {
    const res = await diff("IpPolicyRuleSet", { ipPolicyId: "ipp_1", rules: {} }, { ipPolicyId: "ipp_2", rules: {} });
    expect(res.getHasdetaileddiff()).toBe(true);
    expect(res.getDetaileddiffMap().get("ipPolicyId")?.getKind()).toBe(provproto.PropertyDiff.Kind.UPDATE_REPLACE);
    expect(res.getReplacesList()).toEqual(["ipPolicyId"]);
  });

  it("of a rule: each changed property in a detailed diff", async () => {
    const olds = {
      ipPolicyId: "ipp_1",
      cidr: "10.0.0.0/8",
      action: "allow",
      description: "HQ",
      metadata: "",
      ipPolicy: { id: "ipp_1", uri: "/p" },
      uri: "/r",
      createdAt: "2026-01-01T00:00:00Z",
    };
    const res = await diff("IpPolicyRule", olds, {
      ipPolicyId: "ipp_1",
      cidr: "10.0.0.0/8",
      action: "allow",
      description: "Berlin HQ",
    });
    expect(res.getHasdetaileddiff()).toBe(true);
    expect(res.getDetaileddiffMap().get("description")?.getKind()).toBe(provproto.PropertyDiff.Kind.UPDATE);
    expect(res.getDiffsList()).toEqual(["description"]);
  });
});
