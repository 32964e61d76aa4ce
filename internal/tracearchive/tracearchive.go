package tracearchive

import (
	"archive/tar"
	"compress/gzip"
	"encoding/csv"
	"fmt"
	"os"
	"strings"
)

// ReadCSV returns every row of the first .csv file in the archive at path, its header
// first.
func ReadCSV(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, fmt.Errorf("%s: no .csv file in the archive: %w", path, err)
		}
		if h.Typeflag == tar.TypeReg && strings.HasSuffix(h.Name, ".csv") {
			break
		}
	}
	rows, err := csv.NewReader(tr).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}
