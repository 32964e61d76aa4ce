// Package fgd is Fragmentation Gradient Descent (Weng et al., "Beware of Fragmentation",
// USENIX ATC '23), faithful to the paper's simulator: a node scores
// floor(sigmoid((F_n(M) - F_n'(M)) / 1000) x 100), n' being n after the placement and
// F the expected fragmented GPU share over the workload's typical pods; a GPU share
// tries every GPU with room and takes the first best one.
package fgd
