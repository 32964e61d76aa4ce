// Package dotprod is the dot-product (Tetris) baseline of the FGD paper: a node scores
// 100 x (1 - the dot product of its free (CPU, GPU) vector and the task's request, both
// normalised by the largest node spec and averaged over the two dimensions), so the node
// whose free resources align least with the request is preferred; shares go to the
// best-fitting GPU.
package dotprod
