package sim

import (
	"fmt"
	"math"
)

// CheckSeeds refuses seeds that runs cannot use: runs use first, first + 1, ...,
// first + seeds - 1, so first must be 1 or more, seeds 1 to MaxSeeds, and the last
// seed at most math.MaxInt64, beyond which it would wrap to a negative seed. The
// errors name the command's flags (--first-seed, --seeds).
func CheckSeeds(first int64, seeds int) error {
	switch {
	case seeds < 1 || seeds > MaxSeeds:
		return fmt.Errorf("--seeds: must be between 1 and %d, got %d", MaxSeeds, seeds)
	case first < 1:
		return fmt.Errorf("--first-seed %d: use 1 or more", first)
	case first > math.MaxInt64-int64(seeds-1):
		return fmt.Errorf("--first-seed %d with --seeds %d: the last run's seed would be beyond %d, the largest; use a --first-seed of at most %d",
			first, seeds, int64(math.MaxInt64), math.MaxInt64-int64(seeds-1))
	}
	return nil
}
