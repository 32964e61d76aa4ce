package gpu

import (
	"reflect"
	"testing"
)

func TestIslands(t *testing.T) {
	devs := func(n int) []Device {
		d := make([]Device, n)
		for i := range d {
			d[i].Index = i
		}
		return d
	}
	for _, tc := range []struct {
		name  string
		n     int
		links []Link
		want  map[int]int32
	}{
		{"no links", 3, nil, map[int]int32{0: 0, 1: 1, 2: 2}},
		{"two pairs", 4, []Link{{A: 0, B: 1, NVLinks: 4}, {A: 2, B: 3, NVLinks: 4}, {A: 0, B: 2}},
			map[int]int32{0: 0, 1: 0, 2: 1, 3: 1}},
		{"chain is one island", 4, []Link{{A: 0, B: 3, NVLinks: 1}, {A: 1, B: 3, NVLinks: 2}},
			map[int]int32{0: 0, 1: 0, 2: 1, 3: 0}},
		{"links to unknown devices are ignored", 2, []Link{{A: 0, B: 5, NVLinks: 2}}, map[int]int32{0: 0, 1: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Islands(devs(tc.n), tc.links); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Islands = %v, want %v", got, tc.want)
			}
		})
	}
}
