package autoscale

// OnlyConflicts exposes onlyConflicts to the tests.
var OnlyConflicts = onlyConflicts
