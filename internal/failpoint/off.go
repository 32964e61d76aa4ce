//go:build !faults

package failpoint

// Enabled says whether this build can fire fault points (built with -tags faults).
const Enabled = false

// Inject does nothing: this build has no fault points.
func Inject(Point) error { return nil }
