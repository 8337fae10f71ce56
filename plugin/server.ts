// Host 2: the provider modules served over Pulumi's provider protocol, as the plugin
// `pulumi-resource-accessctl` (host 1 is Pulumi's dynamic-provider host, sdk/). Nothing here knows
// a resource: each request goes to the module the registry (provider/resources.ts) gives its type
// token, with the same check / diff / create / read / update / delete the dynamic host calls, and
// comes back in the protocol's terms.
// What the protocol adds, and this file does:
// - Configure hands the stack config (`accessctl:*`) to config.ts, as the dynamic host's configure
//   does; a plain-text apiKey is refused there (only Configure sees which values are secrets).
//   CheckConfig refuses a bad URL or limit at preview; DiffConfig never replaces (a stack moving
//   from the dynamic classes changes provider, and that must not replace anything).
// - The resource's URN goes to the modules as `__urn` (messages under it, and which resource of a
//   run manages a policy), and the names of the inputs the program made secret as `__secrets` (a
//   plan never shows their values); both are taken out of whatever goes back.
// - Secrets: the engine sends them marked (Configure accepts secrets), so this file marks what goes
//   back: every property whose input was secret (what the engine does for a provider that does not
//   accept them), and the outputs the registry calls secret (an API key's token).
// - A per-property diff (DetailedDiff) where Pulumi can show it: not when every path of it lies
//   under the resource's hideDiffs (a set's rules), which Pulumi would print as the old inputs whole.
// - Previews of Create and Update (supportsPreview): they change nothing and hand the inputs back, and
//   are where what Check and Diff reported about the resource is sent (held back until then), so that
//   Pulumi shows it on the step's own row (docs/design/plugin.md, "Where messages go").
// - Read without properties (`pulumi import`); Invoke for the list functions; Cancel.
import * as grpc from "@grpc/grpc-js";
import * as anyproto from "google-protobuf/google/protobuf/any_pb";
import * as emptyproto from "google-protobuf/google/protobuf/empty_pb";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import * as statusproto from "@pulumi/pulumi/proto/status_pb";
import { isSecretValue, SECRET_SIG, SECRET_VALUE, unwrapSecrets } from "../provider/secret-values";
import { bytesOf, serialize, setValues, valuesOf, withStructs } from "./wire";
import {
  configProblems,
  configure as configureProvider,
  plainTextKey,
  plainTextPlanKey,
  plainTextTeamKey,
  profilesHoldKey,
} from "../provider/config";
import { holdReports, releaseReports, stopRequests, watchEngine } from "../provider/engine";
import { plainError } from "../provider/errors";
import { scrub } from "../provider/http/redact";
import { bounded, inOperation } from "../provider/operation";
import type { DiffResult, Props } from "../provider/module";
import {
  FUNCTIONS as FUNCTION_LIST,
  FunctionEntry,
  RESOURCES as RESOURCE_LIST,
  ResourceEntry,
} from "../provider/resources";

/** The resources of the registry (provider/resources.ts), by type token. */
export const RESOURCES = Object.fromEntries(Object.values(RESOURCE_LIST).map((r) => [r.token, r])) satisfies Record<
  string,
  ResourceEntry
>;

/** The functions of the registry, by token. */
export const FUNCTIONS = Object.fromEntries(Object.values(FUNCTION_LIST).map((f) => [f.token, f])) satisfies Record<
  string,
  FunctionEntry
>;

/**
 * The service: the protocol's, with the property bags (Structs) of the large requests and responses
 * read and written as plain values (plugin/wire.ts): each request's Struct fields, by method.
 */
export const RESOURCE_PROVIDER_SERVICE = withStructs(provrpc.ResourceProviderService, {
  check: { request: provproto.CheckRequest, structs: ["olds", "news"] },
  diff: { request: provproto.DiffRequest, structs: ["olds", "news", "oldInputs"] },
  create: { request: provproto.CreateRequest, structs: ["properties"] },
  read: { request: provproto.ReadRequest, structs: ["properties", "inputs"] },
  update: { request: provproto.UpdateRequest, structs: ["olds", "news", "oldInputs"] },
  delete: { request: provproto.DeleteRequest, structs: ["properties", "oldInputs"] },
  invoke: { request: provproto.InvokeRequest, structs: ["args"] },
});

/** Marks `keys` of `values` as secrets (those it has). */
const markSecret = (values: Props, keys: readonly string[]): Props => ({
  ...values,
  ...Object.fromEntries(
    keys.filter((k) => values[k] !== undefined).map((k) => [k, { [SECRET_SIG]: SECRET_VALUE, value: values[k] }]),
  ),
});

/**
 * What a module gets of a request's properties (the Struct
 * field `field`): the values, and the names of the secret ones.
 */
const plainWith = (req: object, field: string, urn: string): Props => {
  const { values, secretKeys } = valuesOf(req, field);
  return { ...values, __urn: urn, ...(secretKeys.length ? { __secrets: secretKeys } : {}) };
};

/** A request's Struct field `field` as plain values, secrets unwrapped. */
const fromStruct = (req: object, field: string): Props => valuesOf(req, field).values;

/** The resource of a request's URN (its type token is the URN's last type). */
/** A resource's module, each operation bounded in time (provider/operation.ts). */
const moduleOf = (resource: ResourceEntry) => bounded(resource.load());

function resourceOf(urn: string): ResourceEntry {
  const token = urn.split("::")[2]?.split("$").pop() ?? "";
  const found = RESOURCES[token];
  if (!found) throw new Error(`unknown resource type ${token}`);
  return found;
}

/**
 * Outputs for the engine: those of secret inputs (`from`: what the request held), and the resource's secret outputs,
 * marked (written without undefined, nor __urn, __secrets, __provider).
 */
const outputs = (resource: ResourceEntry, outs: Props, from: Props) =>
  markSecret(outs, [...new Set([...(from.__secrets ?? []), ...(resource.secretOutputs ?? [])])]);

/**
 * Whether what Check and Diff report about a resource is held back until the step's own call
 * (provider/engine.ts holdReports): only where the engine makes that call in a preview too, that is
 * once Configure has answered supportsPreview (an unknown config leaves the provider unconfigured)
 * and Pulumi was not told to skip provider previews.
 */
const session = { holding: false };

/**
 * Runs `call` with what it reports about `urn` held back; what it
 * says comes out at once when `now` says no step will call us for it.
 */
async function holding<T>(urn: string, call: () => Promise<T>, now: (result: T) => boolean): Promise<T> {
  if (session.holding) holdReports(urn);
  try {
    const result = await call();
    if (now(result)) await releaseReports(urn);
    return result;
  } catch (e) {
    await releaseReports(urn);
    throw e;
  }
}

const failuresOf = (failures: { property: string; reason: string }[]) =>
  failures.map((f) => new provproto.CheckFailure().setProperty(f.property).setReason(f.reason));

// ---- configuration ------------------------------------------------------------------------------

async function checkConfig(req: provproto.CheckRequest) {
  return new provproto.CheckResponse()
    .setInputs(req.getNews())
    .setFailuresList(failuresOf(configProblems(fromStruct(req, "news"))));
}

async function diffConfig(req: provproto.DiffRequest) {
  const changed = JSON.stringify(fromStruct(req, "olds")) !== JSON.stringify(fromStruct(req, "news"));
  return new provproto.DiffResponse().setChanges(
    changed ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE,
  );
}

async function configure(req: provproto.ConfigureRequest) {
  const raw = (req.getArgs()?.toJavaScript() ?? {}) as Props;
  // Only here does the engine say which config values are secrets.
  if (typeof raw.apiKey === "string") throw new Error(plainTextKey());
  if (typeof raw.planKey === "string") throw new Error(plainTextPlanKey());
  if (typeof raw.teamKey === "string") throw new Error(plainTextTeamKey());
  if (raw.profiles !== undefined && !isSecretValue(raw.profiles) && profilesHoldKey(raw.profiles))
    throw new Error(plainTextKey("accessctl:profiles"));
  const values = unwrapSecrets(raw);
  await configureProvider({ config: { get: (key: string) => values[key.replace(/^accessctl:/, "")] } });
  watchEngine();
  // Previews of Create and Update: the engine calls them once the step has begun, which is when what
  // Check and Diff said about it is shown (holding); they change nothing and hand the inputs back as
  // the outputs, as the engine does for a provider without previews.
  session.holding = !/^(1|true)$/i.test(process.env.PULUMI_DISABLE_PROVIDER_PREVIEW ?? "");
  // Secrets come marked from now on (so a plan can leave their values out); this file marks what goes back.
  return new provproto.ConfigureResponse()
    .setAcceptsecrets(true)
    .setSupportspreview(true)
    .setAcceptresources(false)
    .setAcceptoutputs(false);
}

// ---- resources ----------------------------------------------------------------------------------

async function check(req: provproto.CheckRequest) {
  const urn = req.getUrn();
  const news = plainWith(req, "news", urn);
  await releaseReports(urn); // anything held before (a refresh's diff) is not about the step to come
  const result = await holding(
    urn,
    () => moduleOf(resourceOf(urn)).check(fromStruct(req, "olds"), news),
    (r) => r.failures.length > 0,
  );
  return setValues(
    new provproto.CheckResponse(),
    "inputs",
    markSecret(result.inputs, news.__secrets ?? []),
  ).setFailuresList(failuresOf(result.failures));
}

const DIFF_KINDS: Record<string, provproto.PropertyDiff.Kind> = {
  add: 0,
  "add-replace": 1,
  delete: 2,
  "delete-replace": 3,
  update: 4,
  "update-replace": 5,
};

async function diff(req: provproto.DiffRequest) {
  const urn = req.getUrn();
  const resource = resourceOf(urn);
  const result = await holding(
    urn,
    () => moduleOf(resource).diff(req.getId(), plainWith(req, "olds", urn), plainWith(req, "news", urn)),
    (r) => !r.changes,
  );
  const resp = new provproto.DiffResponse()
    .setChanges(
      result.changes ? provproto.DiffResponse.DiffChanges.DIFF_SOME : provproto.DiffResponse.DiffChanges.DIFF_NONE,
    )
    .setReplacesList(result.replaces)
    .setDeletebeforereplace(!!result.deleteBeforeReplace);
  const detailed = shownDetail(resource, result);
  for (const [path, kind] of Object.entries(detailed ?? {}))
    resp.getDetaileddiffMap().set(path, new provproto.PropertyDiff().setKind(DIFF_KINDS[kind]));
  const top = (path: string) => path.split(/[.[]/)[0];
  resp.setDiffsList([
    ...new Set([...result.replaces, ...(result.diffs ?? []), ...Object.keys(result.detailedDiff ?? {}).map(top)]),
  ]);
  return resp.setHasdetaileddiff(detailed !== undefined);
}

/**
 * The detailed diff to send: none when every path of it lies under the resource's hideDiffs. Pulumi
 * (pkg/backend/display/diff.go, renderDiff) prints the resource's old inputs whole, unmarked, when a
 * detailed diff holds nothing it may show: every rule of a set, as it was, in a preview --diff. With
 * only the changed properties (`diffs`), it diffs the inputs itself and prints `~ rules (hidden)`.
 */
function shownDetail(resource: ResourceEntry, result: DiffResult): DiffResult["detailedDiff"] {
  const hidden = resource.hideDiffs ?? [];
  const paths = Object.keys(result.detailedDiff ?? {});
  const under = (path: string) =>
    hidden.some((h) => path === h || path.startsWith(`${h}.`) || path.startsWith(`${h}[`));
  if (paths.length && paths.every(under)) return undefined;
  return result.detailedDiff;
}

async function create(req: provproto.CreateRequest) {
  await releaseReports(req.getUrn());
  if (req.getPreview()) return handBack(new provproto.CreateResponse().setId(""), "properties", req, "properties");
  const resource = resourceOf(req.getUrn());
  const inputs = plainWith(req, "properties", req.getUrn());
  const result = await moduleOf(resource)
    .create(inputs)
    .catch(partial((outs) => outputs(resource, outs, inputs)));
  return setValues(
    new provproto.CreateResponse().setId(result.id),
    "properties",
    outputs(resource, result.outs, inputs),
  );
}

/** A preview's response: the request's Struct field `from` handed back as it came, as the field `to`. */
function handBack<M extends object>(resp: M, to: string, req: object, from: string): M {
  const bytes = bytesOf(req, from);
  return bytes ? setValues(resp, to, bytes) : resp;
}

async function read(req: provproto.ReadRequest) {
  await releaseReports(req.getUrn());
  const resource = resourceOf(req.getUrn());
  const props = plainWith(req, "properties", req.getUrn());
  const known = Object.keys(props).some((k) => !k.startsWith("__")); // none: an import
  const result = await moduleOf(resource).read(req.getId(), known ? props : undefined);
  const resp = new provproto.ReadResponse();
  if (!result.id) return resp; // gone: the engine drops it
  setValues(resp.setId(result.id), "properties", outputs(resource, result.props ?? {}, props));
  return result.inputs ? setValues(resp, "inputs", markSecret(result.inputs, props.__secrets ?? [])) : resp;
}

async function update(req: provproto.UpdateRequest) {
  const urn = req.getUrn();
  await releaseReports(urn);
  if (req.getPreview()) return handBack(new provproto.UpdateResponse(), "properties", req, "news");
  const resource = resourceOf(urn);
  const news = plainWith(req, "news", urn);
  const result = await moduleOf(resource)
    .update(req.getId(), plainWith(req, "olds", urn), news)
    .catch(partial((outs) => outputs(resource, outs, news)));
  return setValues(new provproto.UpdateResponse(), "properties", outputs(resource, result.outs, news));
}

async function remove(req: provproto.DeleteRequest) {
  await releaseReports(req.getUrn());
  await moduleOf(resourceOf(req.getUrn())).delete(req.getId(), plainWith(req, "properties", req.getUrn()));
  return new emptyproto.Empty();
}

// ---- functions ----------------------------------------------------------------------------------

/** A function's list, under the property its result holds it in (the schema's). */
async function invoke(req: provproto.InvokeRequest) {
  const fn = FUNCTIONS[req.getTok()];
  if (!fn) throw new Error(`unknown function ${req.getTok()}`);
  const args = valuesOf(req, "args");
  const result = { [fn.result]: await inOperation(() => fn.invoke(args.values)) };
  // What a secret argument selected is secret too.
  return setValues(
    new provproto.InvokeResponse(),
    "return",
    args.secretKeys.length ? markSecret(result, Object.keys(result)) : result,
  );
}

async function cancel() {
  stopRequests("the operation was cancelled");
  return new emptyproto.Empty();
}

export interface ServerOptions {
  version: string;
  schema: string;
}

/** The ResourceProvider service over the modules. */
export function providerService(options: ServerOptions): grpc.UntypedServiceImplementation {
  return {
    // The engine falls back to the older handshake when this is not implemented.
    handshake: unimplemented("Handshake"),
    parameterize: unimplemented("Parameterize"),
    construct: unimplemented("Construct"),
    call: unimplemented("Call"),
    attach: unimplemented("Attach"),
    list: (stream: grpc.ServerWritableStream<unknown, unknown>) =>
      stream.emit("error", { code: grpc.status.UNIMPLEMENTED, details: "List is not implemented" }),
    getMapping: unary(async () => new provproto.GetMappingResponse()),
    getMappings: unary(async () => new provproto.GetMappingsResponse()),
    getPluginInfo: unary(async () => new plugproto.PluginInfo().setVersion(options.version)),
    getSchema: unary(async () => new provproto.GetSchemaResponse().setSchema(options.schema)),
    cancel: unary(cancel),
    checkConfig: unary(checkConfig),
    diffConfig: unary(diffConfig),
    configure: unary(configure),
    check: unary(check),
    diff: unary(diff),
    create: unary(create),
    read: unary(read),
    update: unary(update),
    delete: unary(remove),
    invoke: unary(invoke),
  };
}

/**
 * A unary handler: the answer, or the error as Pulumi shows it (one line; a partial create or update keeps its object).
 */
function unary<Req, Res>(handle: (req: Req) => Promise<Res>) {
  return (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
    handle(call.request).then(
      (res) => callback(null, res),
      // Scrubbed of every credential of the process, whatever made the error.
      (e: Error & { grpc?: Partial<grpc.StatusObject> }) =>
        callback(
          e.grpc
            ? { ...e.grpc, details: scrub(e.grpc.details ?? "") }
            : { code: grpc.status.UNKNOWN, details: scrub(String(e?.message ?? e)) },
        ),
    );
  };
}

function unimplemented(what: string) {
  return (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
    callback({ code: grpc.status.UNIMPLEMENTED, details: `${what} is not implemented by pulumi-resource-accessctl` });
}

/**
 * A create or update that failed after its object came to exist (the error carries `id` and the
 * outputs as `properties`, as provider/ownership.ts objectExists and the set's apply make it): sent
 * as ErrorResourceInitFailed, which the engine records as a partial create or update.
 */
function partial(outputs: (outs: Props) => Props) {
  return (e: Error & { id?: string; properties?: Props; reasons?: string[] }): never => {
    if (!e.id) throw e;
    const message = scrub(e.message);
    const detail = setValues(
      new provproto.ErrorResourceInitFailed().setId(e.id),
      "properties",
      outputs(e.properties ?? {}),
    ).setReasonsList((e.reasons ?? [e.message]).map(scrub));
    const any = new anyproto.Any();
    any.pack(new Uint8Array(serialize(detail)), "pulumirpc.ErrorResourceInitFailed");
    const status = new statusproto.Status().setCode(grpc.status.UNKNOWN).setMessage(message);
    status.addDetails(any);
    const metadata = new grpc.Metadata();
    metadata.add("grpc-status-details-bin", Buffer.from(status.serializeBinary()));
    throw Object.assign(plainError(message), { grpc: { code: grpc.status.UNKNOWN, details: message, metadata } });
  };
}
