// Package crds embeds the CustomResourceDefinitions that `make generate` writes here
// from api/v1alpha1, and validates objects against their OpenAPI schemas, defaults and
// CEL rules with the API server's own code, so that tools working offline (the
// simulator's manifests) accept and reject exactly what the API server would.
package crds
