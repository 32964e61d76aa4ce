// Package yamlerrtest holds hostile YAML for the tests of the readers that bound it.
package yamlerrtest
