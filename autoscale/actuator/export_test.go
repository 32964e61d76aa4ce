package actuator

// OnlyConflicts exposes onlyConflicts to the tests.
var OnlyConflicts = onlyConflicts
