// Package golden keeps generated files equal to what tests generate: a test renders
// the file and Check compares it, or writes it when the update variable is set (as
// `make generate` does).
package golden
