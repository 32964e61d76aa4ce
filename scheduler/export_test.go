package scheduler

// CapacityFor is how many tasks like t node n holds when empty, for the property tests.
var CapacityFor = capacityFor
