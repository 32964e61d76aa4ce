// Command tessera is Tessera's single binary. Its subcommands wire the packages
// together; no logic lives here: scheduler, webhook, autoscaler, node-agent,
// simulate, explain, gitops, convert and version.
package main
