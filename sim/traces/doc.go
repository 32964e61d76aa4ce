// Package traces ships the cluster traces the simulator replays without any file
// outside the binary: the Alibaba GPU cluster trace v2023 "openb" (the FGD paper's
// evaluation data: 1213 GPU nodes, 6212 GPUs, and its pod-list variants), byte-identical
// to the published files (see openb/MANIFEST.csv and openb/README-trace.md); and the
// figures published for the FGD paper's simulator on those lists (fgd/README.md), which
// fill-up tables show next to the simulator's own.
package traces
