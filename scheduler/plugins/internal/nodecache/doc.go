// Package nodecache memoises a placer's verdict per (node, task shape) until the node's
// allocation changes, so that scoring every node for every task stays cheap when most
// nodes did not change since the last task of the same shape.
package nodecache
