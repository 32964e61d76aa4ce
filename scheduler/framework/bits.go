package framework

import (
	"math/bits"
	"time"
)

// Time is the session clock's type (virtual in the simulator).
type Time = time.Time

func trailingZeros(v uint64) int { return bits.TrailingZeros64(v) }
