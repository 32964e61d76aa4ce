// Package yamlerr words YAML decoding errors for people who wrote YAML.
package yamlerr

import (
	"errors"
	"strings"
)

// prefixes are what sigs.k8s.io/yaml's JSON round trip puts before the reason.
var prefixes = []string{"error converting YAML to JSON: ", "error unmarshaling JSON: ", "while decoding JSON: ", "json: "}

// Clean drops the JSON decoder's prefixes from a YAML decoding error: the input is
// YAML, and "error unmarshaling JSON" misleads. nil stays nil.
func Clean(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range prefixes {
		msg = strings.TrimPrefix(msg, p)
	}
	return errors.New(msg)
}
