// The operations of ../ip-policy-rule, each bounded in time (../operation.ts): the module the dynamic host
// runs (sdk/). Plain exported functions, serialized as the modules themselves are.
import * as m from "../ip-policy-rule";
import { inOperation, inWriteOperation } from "../operation";

export { configure } from "../config";

export async function check(...args: Parameters<typeof m.check>) {
  return inOperation(() => m.check(...args), undefined, "check");
}

export async function diff(...args: Parameters<typeof m.diff>) {
  return inOperation(() => m.diff(...args), undefined, "diff");
}

export async function create(...args: Parameters<typeof m.create>) {
  return inWriteOperation(() => m.create(...args), "create");
}

export async function read(...args: Parameters<typeof m.read>) {
  return inOperation(() => m.read(...args), undefined, "read");
}

export async function update(...args: Parameters<typeof m.update>) {
  return inWriteOperation(() => m.update(...args), "update");
}

export async function delete_(...args: Parameters<typeof m.delete>) {
  return inWriteOperation(() => m.delete(...args), "delete");
}
export { delete_ as delete };
