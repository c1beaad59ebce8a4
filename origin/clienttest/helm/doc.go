// Package helm drives a real origin serving the helm format with the real
// helm CLI (built from its Go module in CI setup): charts packaged by
// helm, uploaded the ChartMuseum way and with a plain PUT, then found,
// pulled and rendered through `helm repo add`, against the origin and
// through an edge.
package helm
