// TlsEdgeMutualTls: the mutual TLS module of a TLS edge. Create and update are the contract's PUT
// (so creating one takes over whatever module the edge had); the resource id is the edge id.
// This module is the dynamic provider itself (see provider/api-key.ts).
import { ID_PREFIX } from "../contract/common";
import { MUTUAL_TLS_ENABLED_DEFAULT, MUTUAL_TLS_PATH_SUFFIX, MutualTlsBody, MutualTlsReplaceBody, TLS_EDGES_PATH } from "../contract/tls-edge-mutual-tls";
import { api, apiPath } from "./http/api";
import { changedFields, checkFields, Fields, updateBody } from "./fields";
import { claim } from "./ownership";
import { checkConnection, keptInputs, PROFILE_FIELD, ProfileInput } from "./profiles";
import { profileSource } from "./config";
import { boolean, CheckFailure, id, idProblem, isUnknown } from "./validate";

export { configure } from "./config";

/** The inputs of a TlsEdgeMutualTls; the SDK's TlsEdgeMutualTlsArgs is made from this (its docs too). */
export interface TlsEdgeMutualTlsInputs extends ProfileInput {
  /** The TLS edge (`edgtls_…`). Changing it moves the module: the old edge's module is deleted. */
  edgeId: string;
  /** The certificate authorities (`ca_…`) that sign accepted client certificates, in order, no repeats. */
  certificateAuthorityIds: string[];
  /** Whether the module applies to traffic. Default true. */
  enabled?: boolean;
}

export interface TlsEdgeMutualTlsOutputs {
  edgeId: string;
  enabled: boolean;
  certificateAuthorityIds: string[];
  certificateAuthorities: { id: string; uri: string }[];
  profile?: string;
}

/** The ids of certificate authorities: each a `ca_…` id, none twice; elements not known yet pass. */
function authorityIds(ids: unknown): string | CheckFailure[] {
  if (!Array.isArray(ids)) return "must be a list of ids (ca_…)";
  const failures: CheckFailure[] = [];
  ids.forEach((ca: unknown, i: number) => {
    const problem = isUnknown(ca) ? undefined : idProblem(ca, [ID_PREFIX.certificateAuthority]);
    if (problem) failures.push({ property: `certificateAuthorityIds[${i}]`, reason: `certificateAuthorityIds[${i}] ${problem}` });
    else if (!isUnknown(ca) && ids.indexOf(ca) !== i) failures.push({ property: `certificateAuthorityIds[${i}]`, reason: `certificateAuthorityIds lists ${String(ca)} twice` });
  });
  return failures;
}

/** Every input. The module moves with its edge, or to another account, by replacement; the rest is one PUT. */
export const FIELDS: Fields<TlsEdgeMutualTlsInputs, keyof MutualTlsReplaceBody> = {
  edgeId: { required: true, check: id(ID_PREFIX.tlsEdge), onChange: "replace" },
  certificateAuthorityIds: {
    wire: "certificate_authority_ids",
    required: ": the ids (ca_…) of the authorities that sign accepted client certificates",
    check: authorityIds,
    same: (a, b) => JSON.stringify(a ?? []) === JSON.stringify(b ?? []), // order counts
    onChange: "update",
    unset: [],
  },
  enabled: { wire: "enabled", check: boolean, same: (a, b) => (a ?? MUTUAL_TLS_ENABLED_DEFAULT) === (b ?? MUTUAL_TLS_ENABLED_DEFAULT), onChange: "update", unset: MUTUAL_TLS_ENABLED_DEFAULT },
  profile: PROFILE_FIELD,
};

const MODULE_FIELDS = { enabled: "boolean", certificate_authorities: "array" } as const;

const modulePath = (edgeId: string) => TLS_EDGES_PATH + apiPath`/${edgeId}` + MUTUAL_TLS_PATH_SUFFIX;

function toOutputs(edgeId: string, body: MutualTlsBody): TlsEdgeMutualTlsOutputs {
  const refs = body.certificate_authorities.map((ca) => ({ id: ca.id, uri: ca.uri }));
  return { edgeId, enabled: body.enabled, certificateAuthorityIds: refs.map((ca) => ca.id), certificateAuthorities: refs };
}

export async function check(_olds: TlsEdgeMutualTlsInputs, news: TlsEdgeMutualTlsInputs) {
  const failures: CheckFailure[] = [];
  checkConnection(news, failures);
  const inputs = checkFields(FIELDS, news, failures);
  // `enabled` is always stated, its default filled in, as read() reports a live module: so a module
  // disabled by hand shows as `~ enabled: false => true` after a refresh, and an unchanged one as nothing.
  if (inputs.enabled === undefined) inputs.enabled = MUTUAL_TLS_ENABLED_DEFAULT;
  return { inputs, failures };
}

export async function diff(_id: string, olds: TlsEdgeMutualTlsOutputs, news: TlsEdgeMutualTlsInputs) {
  const { replaces, updates } = changedFields(FIELDS, olds, news);
  return { changes: replaces.length + updates.length > 0, replaces, deleteBeforeReplace: false };
}

/** Create and update alike: the contract's PUT sets the module as a whole. */
async function put(inputs: TlsEdgeMutualTlsInputs): Promise<TlsEdgeMutualTlsOutputs> {
  const edgeId = inputs.edgeId;
  const body = updateBody<MutualTlsReplaceBody>(FIELDS, inputs);
  const res = await api<MutualTlsBody>("PUT", modulePath(edgeId), { what: `set mutual TLS of TLS edge ${edgeId}`, body, expect: MODULE_FIELDS, source: profileSource(inputs.profile) });
  return { ...toOutputs(edgeId, res.body), ...keptInputs(inputs) };
}

export async function create(inputs: TlsEdgeMutualTlsInputs) {
  claim("TLS edge", inputs.edgeId, `set mutual TLS of TLS edge ${inputs.edgeId}`);
  return { id: inputs.edgeId, outs: await put(inputs) };
}

export async function read(id: string, props: Partial<TlsEdgeMutualTlsOutputs> = {}) {
  const res = await api<MutualTlsBody>("GET", modulePath(id), { what: `read mutual TLS of TLS edge ${id}`, allow404: true, expect: MODULE_FIELDS, source: profileSource(props.profile) });
  if (res.status === 404) return {}; // removed outside Pulumi: refresh drops it
  const outs = toOutputs(id, res.body);
  // Inputs as the live module would declare them (enabled always, as check() states it), so that
  // `preview --diff` after a refresh marks the drifted properties (see ip-policy-rule.ts).
  const inputs = { edgeId: id, certificateAuthorityIds: outs.certificateAuthorityIds, enabled: outs.enabled, ...keptInputs(props) };
  return { id, props: { ...outs, ...keptInputs(props) }, inputs };
}

export async function update(_id: string, _olds: TlsEdgeMutualTlsOutputs, news: TlsEdgeMutualTlsInputs) {
  return { outs: await put(news) };
}

async function remove(id: string, props: TlsEdgeMutualTlsOutputs): Promise<void> {
  await api("DELETE", modulePath(id), { what: `delete mutual TLS of TLS edge ${id}`, allow404: true, source: profileSource(props.profile) });
}
export { remove as delete };
