// Connection settings for code that runs in the program process (the list helpers): the stack
// config, read when called, and handed to each request rather than kept in a module variable.
import * as pulumi from "@pulumi/pulumi";
import { ConfigSource } from "../provider/config";

export function programConfig(): ConfigSource {
  return {
    apiUrl: pulumi.runtime.getConfig("accessctl:apiUrl"),
    apiKey: pulumi.runtime.getConfig("accessctl:apiKey"),
    maxRequestsPerMinute: pulumi.runtime.getConfig("accessctl:maxRequestsPerMinute"),
  };
}
