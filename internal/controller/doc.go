// Package controller is what Tessera's three daemons (scheduler, autoscaler, webhook)
// share: a controller-runtime manager with leader election, metrics and health probes
// (NewManager), their command-line flags declared once (Serving.AddFlags), events
// rate-limited per object (EventSink) and eviction through the Eviction API (Evict).
package controller
