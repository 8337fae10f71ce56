// TlsEdgeMutualTls: the mutual TLS module of a TLS edge. Create and update are the contract's PUT
// (so creating one takes over whatever module the edge had); the resource id is the edge id.
// This module is the dynamic provider itself (see provider/api-key.ts).
import { api, apiPath } from "./client";
import { claim } from "./ownership";
import { checkConnection, checkProfile, keptInputs, profileSource } from "./profiles";
import { CheckFailure, checkId, checkKnown, idProblem, isUnknown, UNKNOWN } from "./validate";

export { configure } from "./profiles";

const INPUTS = ["edgeId", "certificateAuthorityIds", "enabled", "profile"];

/** The module as the API returns it. */
export interface MutualTlsBody {
  enabled: boolean;
  certificate_authorities: { id: string; uri: string }[];
}

export interface TlsEdgeMutualTlsOutputs {
  edgeId: string;
  enabled: boolean;
  certificateAuthorityIds: string[];
  certificateAuthorities: { id: string; uri: string }[];
  profile?: string;
}

type Inputs = Record<string, any>;

const MODULE_FIELDS = { enabled: "boolean", certificate_authorities: "array" } as const;

function toOutputs(edgeId: string, body: MutualTlsBody): TlsEdgeMutualTlsOutputs {
  const refs = body.certificate_authorities.map((ca) => ({ id: ca.id, uri: ca.uri }));
  return { edgeId, enabled: body.enabled, certificateAuthorityIds: refs.map((ca) => ca.id), certificateAuthorities: refs };
}

export async function check(_olds: Inputs, news: Inputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  checkKnown(news, INPUTS, failures);
  checkId(news, "edgeId", ["edgtls"], failures, true);
  checkProfile(news, failures);
  const ids = news.certificateAuthorityIds;
  if (ids === undefined) {
    failures.push({ property: "certificateAuthorityIds", reason: "certificateAuthorityIds is required: the ids (ca_…) of the authorities that sign accepted client certificates" });
  } else if (ids !== UNKNOWN) {
    if (!Array.isArray(ids)) {
      failures.push({ property: "certificateAuthorityIds", reason: "certificateAuthorityIds must be a list of ids (ca_…)" });
    } else {
      ids.forEach((id: unknown, i: number) => {
        const problem = isUnknown(id) ? undefined : idProblem(id, ["ca"]);
        if (problem) failures.push({ property: `certificateAuthorityIds[${i}]`, reason: `certificateAuthorityIds[${i}] ${problem}` });
        else if (!isUnknown(id) && ids.indexOf(id) !== i) failures.push({ property: `certificateAuthorityIds[${i}]`, reason: `certificateAuthorityIds lists ${String(id)} twice` });
      });
    }
  }
  if (news.enabled !== undefined && !isUnknown(news.enabled) && typeof news.enabled !== "boolean") {
    failures.push({ property: "enabled", reason: "enabled must be true or false" });
  }
  return { inputs: news, failures };
}

export async function diff(_id: string, olds: Inputs, news: Inputs) {
  const replaces = isUnknown(news.edgeId) || news.edgeId !== olds.edgeId ? ["edgeId"] : [];
  if (isUnknown(news.profile) || (news.profile || "") !== (olds.profile || "")) replaces.push("profile"); // another account
  const enabledChanged = isUnknown(news.enabled) || (news.enabled !== false) !== (olds.enabled !== false);
  const idsChanged = isUnknown(news.certificateAuthorityIds) || JSON.stringify(news.certificateAuthorityIds ?? []) !== JSON.stringify(olds.certificateAuthorityIds ?? []);
  return { changes: replaces.length > 0 || enabledChanged || idsChanged, replaces, deleteBeforeReplace: false };
}

async function put(inputs: Inputs): Promise<TlsEdgeMutualTlsOutputs> {
  const edgeId: string = inputs.edgeId;
  const body = { enabled: inputs.enabled !== false, certificate_authority_ids: inputs.certificateAuthorityIds ?? [] };
  const res = await api<MutualTlsBody>("PUT", apiPath`/edges/tls/${edgeId}/mutual_tls`, { what: `set mutual TLS of TLS edge ${edgeId}`, body, expect: MODULE_FIELDS, source: profileSource(inputs.profile) });
  return { ...toOutputs(edgeId, res.body), ...keptInputs(inputs) };
}

export async function create(inputs: Inputs) {
  claim("TLS edge", inputs.edgeId, `set mutual TLS of TLS edge ${inputs.edgeId}`);
  return { id: inputs.edgeId as string, outs: await put(inputs) };
}

export async function read(id: string, props: Inputs) {
  const res = await api<MutualTlsBody>("GET", apiPath`/edges/tls/${id}/mutual_tls`, { what: `read mutual TLS of TLS edge ${id}`, allow404: true, expect: MODULE_FIELDS, source: profileSource(props.profile) });
  if (res.status === 404) return {}; // removed outside Pulumi: refresh drops it
  const outs = toOutputs(id, res.body);
  // Inputs as the live module would declare them (enabled only when off: true is the default), so
  // that `preview --diff` after a refresh marks the drifted properties (see ip-policy-rule.ts).
  const inputs = { edgeId: id, certificateAuthorityIds: outs.certificateAuthorityIds, ...(outs.enabled ? {} : { enabled: false }), ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(_id: string, _olds: Inputs, news: Inputs) {
  return { outs: await put(news) };
}

async function remove(id: string, props: Inputs): Promise<void> {
  await api("DELETE", apiPath`/edges/tls/${id}/mutual_tls`, { what: `delete mutual TLS of TLS edge ${id}`, allow404: true, source: profileSource(props.profile) });
}
export { remove as delete };
