// `pulumi-resource-accessctl`: the plugin's entry. Pulumi starts it with the engine's address as an
// argument (and flags such as --logtostderr or -v=9 before it) and reads the port it serves on from
// its first line of stdout. The bundle of this file (npm run plugin) is what the plugin runs.
import * as grpc from "@grpc/grpc-js";
import { toStderr, watchEngine } from "../provider/engine";
import { quietHostErrorLog } from "../provider/errors";
import { setVersion } from "../provider/http/transport";
import { nodeProblem } from "./node-version";
import { providerService, RESOURCE_PROVIDER_SERVICE } from "./server";

// Both embedded by the bundle (relative to dist/plugin/, where tsc writes this file).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- read at run time from dist/ (tsc copies no JSON up)
const { version } = require("../../package.json") as { version: string };
// eslint-disable-next-line @typescript-eslint/no-require-imports -- read at run time from dist/, as the version is
const schema = JSON.stringify(require("../../schema/schema.json"));

async function main(): Promise<void> {
  const problem = nodeProblem(process.version);
  if (problem) throw new Error(problem);
  setVersion(version);
  quietHostErrorLog();
  const server = new grpc.Server({ "grpc.max_receive_message_length": 400 * 1024 * 1024 });
  server.addService(RESOURCE_PROVIDER_SERVICE, providerService({ version, schema }));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  process.stdout.write(`${port}\n`);
  // From the start, not from Configure: an engine gone before it calls Configure leaves no one to stop us.
  watchEngine();
}

main().catch((e) => {
  toStderr(`pulumi-resource-accessctl: ${(e as Error).message}\n`);
  process.exit(1);
});
