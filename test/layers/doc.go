// Package layers holds the test that keeps the dependency arrows of the design: the
// pure core, the planner and the simulator import no client, each heavy dependency has
// one adapter package, and nothing imports upwards.
package layers
