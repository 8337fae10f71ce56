// Pulumi resources for an account's access control: API keys, IP policy rules, and the mutual TLS module of a TLS edge.
package accessctl
