package sim

import (
	"math"
	"strings"
	"testing"
)

func TestCheckSeeds(t *testing.T) {
	for _, c := range []struct {
		first int64
		seeds int
		err   string
	}{
		{FirstSeed, 1, ""},
		{1, MaxSeeds, ""},
		{math.MaxInt64, 1, ""},
		{math.MaxInt64 - 1, 2, ""},
		{math.MaxInt64, 2, "--first-seed 9223372036854775807 with --seeds 2: the last run's seed would be beyond 9223372036854775807, the largest; use a --first-seed of at most 9223372036854775806"},
		{math.MaxInt64 - 998, MaxSeeds, "with --seeds 1000"},
		{0, 1, "--first-seed 0: use 1 or more"},
		{-5, 3, "--first-seed -5: use 1 or more"},
		{1, 0, "--seeds: must be between 1 and 1000, got 0"},
		{1, MaxSeeds + 1, "--seeds: must be between 1 and 1000, got 1001"},
	} {
		err := CheckSeeds(c.first, c.seeds)
		if (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("CheckSeeds(%d, %d) = %v, want %q", c.first, c.seeds, err, c.err)
		}
	}
}
