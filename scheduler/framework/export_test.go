package framework

// CheckpointRule is checkpointRule.
type CheckpointRule = checkpointRule

// What Checkpoint does with each field, for the external test of Checkpoint.
const (
	RuleImmutable  = immutable
	RuleCached     = cached
	RuleRestored   = restored
	RuleReassigned = reassigned
	RuleRenewed    = renewed
)

// CheckpointFields is checkpointFields.
var CheckpointFields = checkpointFields
