// Package rego holds Tessera's default admission policies, embedded with go:embed,
// and their _test.rego tests. Defaults returns them as a policy.Set; `go test` (and so
// `make test`) runs every Rego test and fails on the first failing one by name.
package rego
