// Command gen derives the embedded curve table from the genai2026 archives:
//
//	go run ./gen -memory pod_gpu_memory_used_bytes_anon.tar.gz -duty pod_gpu_duty_cycle_anon.tar.gz -o genai2026.txt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/tessera-gpu/tessera/internal/tracearchive"
	"github.com/tessera-gpu/tessera/sim/curves"
)

func main() {
	memory := flag.String("memory", "", "pod_gpu_memory_used_bytes_anon.tar.gz")
	duty := flag.String("duty", "", "pod_gpu_duty_cycle_anon.tar.gz")
	out := flag.String("o", "genai2026.txt", "table to write")
	flag.Parse()
	if err := run(*memory, *duty, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(memory, duty, out string) error {
	if memory == "" || duty == "" {
		return fmt.Errorf("give -memory and -duty, the two genai2026 archives")
	}
	m, err := tracearchive.ReadCSV(memory)
	if err != nil {
		return err
	}
	d, err := tracearchive.ReadCSV(duty)
	if err != nil {
		return err
	}
	cs, err := curves.Derive(m, d)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := curves.Write(f, cs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
