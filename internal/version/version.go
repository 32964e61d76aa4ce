package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set by `-ldflags "-X github.com/tessera-gpu/tessera/internal/version.Version=..."`.
var Version = "dev"

// String returns the version, the VCS revision when known, and the Go runtime.
func String() string {
	rev := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("tessera %s (revision %s, %s, %s/%s)", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
