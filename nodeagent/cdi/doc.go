// Package cdi writes the node agent's own Container Device Interface spec files: one
// file per prepared ResourceClaim, of CDI kind tessera.dev/claim, in the directory the
// container runtime reads CDI specs from (default /var/run/cdi). Its devices carry what
// a claim adds to its containers beyond the GPU itself (the NVIDIA container toolkit's
// own spec provides that): a memory share's environment and the MPS pipe directory.
package cdi
