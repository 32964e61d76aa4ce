// Package failpoint names the steps of Tessera's components where a crash, an error or
// a delay matters (Points), and lets a fault-injection run trigger them.
//
// In a normal build Inject is an empty function the compiler removes: production
// binaries carry no fault points. Built with the tag `faults` (go build -tags faults),
// a component reads faults to inject from $TESSERA_FAILPOINTS at start
// ("point=action;point=action") and, when $TESSERA_FAILPOINTS_ADDR is set, serves them
// over HTTP so that a driver can arm them while it runs:
//
//	GET    /          every point with the times it was reached and fired, as JSON
//	PUT    /<point>   arm the point with the body's action
//	DELETE /<point>   disarm it
//
// Actions, optionally prefixed by a count "N*" (fire N times, then disarm):
//
//	crash       the process exits at once (exit status 86), as a kill at that step would
//	error       Inject returns an error, as a failed API call would
//	sleep(D)    Inject waits D (a Go duration), then returns nil
//
// test/faults drives these points against a real control plane (make faults).
package failpoint
