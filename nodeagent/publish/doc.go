// Package publish writes the node agent's findings to the API server with server-side
// apply (field manager "tessera-node-agent"): the GPUNode named after the node (owned
// by the Node, so it is garbage-collected with it; inventory and activity in its status
// subresource), the node labels tessera.dev/gpu-model and tessera.dev/gpu-count, and
// tessera.dev/gpu-memory (MiB) in the Node's status capacity and allocatable.
package publish
