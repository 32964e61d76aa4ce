// Package topology keeps a multi-node gang close: a node scores higher when it shares
// the narrowest topology domain (rack, then zone, as configured) with the tasks of the
// same job already placed.
package topology
