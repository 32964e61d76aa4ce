package gang

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "gang"

// Gang is the gang plugin.
type Gang struct{}

var _ framework.Gang = Gang{}

// Name implements framework.Plugin.
func (Gang) Name() string { return Name }

// MinAvailable implements framework.Gang: minMember, even while fewer pods exist. In a
// cluster a Job's pods are created one by one; a gang of 4 whose first 2 pods exist
// waits for the other 2 instead of binding a partial gang.
func (Gang) MinAvailable(j *framework.Job) int {
	return max(j.MinMember, 1)
}
