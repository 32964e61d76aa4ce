// Command tessera is Tessera's control-plane binary. Its subcommands wire the packages
// together; no logic lives here: scheduler, webhook, autoscaler, simulate, explain,
// gitops, convert and version. It is pure Go (builds with CGO_ENABLED=0); the node
// agent, the one part that loads NVML through cgo, is its own binary,
// cmd/tessera-node-agent.
package main
