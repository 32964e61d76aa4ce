// Package tlscert manages the webhook's serving certificate without cert-manager: it
// generates a CA and a serving certificate for the webhook Service, keeps them in a
// Secret shared by all replicas, writes them where the webhook server reads them,
// injects the CA bundle into the mutating and validating webhook configurations, and
// rotates both before they expire. During a rotation the bundle carries the new and
// the previous CA so that replicas still serving the old certificate stay trusted.
package tlscert
