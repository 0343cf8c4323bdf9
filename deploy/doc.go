// Package deploy holds the deployment files (Kubernetes manifests, Prometheus rules) and the
// tests that check them: a module of its own, so the Kubernetes and Prometheus libraries the
// checks use stay out of the server's module.
package deploy
