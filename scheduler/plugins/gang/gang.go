package gang

import "github.com/tessera-gpu/tessera/scheduler/framework"

// Name is the plugin's name in configuration.
const Name = "gang"

// Gang is the gang plugin.
type Gang struct{}

var _ framework.Gang = Gang{}

// Name implements framework.Plugin.
func (Gang) Name() string { return Name }

// MinAvailable implements framework.Gang.
func (Gang) MinAvailable(j *framework.Job) int {
	if j.MinMember < 1 {
		return 1
	}
	return min(j.MinMember, len(j.Tasks))
}
