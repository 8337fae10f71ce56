// The plugin's launcher runs whatever `node` is first on PATH: an older one is refused with a line
// that says which it found (it once ran on Node 20, which the plugin is not built or tested for).
import { describe, expect, it } from "vitest";
import { compiled } from "../helpers/provider";

const { nodeProblem } = compiled("plugin/node-version.js");

describe("the plugin's Node.js", () => {
  it("refuses a Node.js older than 22, naming it; takes 22 and later", () => {
    expect(nodeProblem("v20.20.2")).toBe("needs Node.js 22 or later; the node first on PATH is v20.20.2");
    expect(nodeProblem("v22.0.0")).toBeUndefined();
    expect(nodeProblem("v24.21.0")).toBeUndefined();
  });
});
