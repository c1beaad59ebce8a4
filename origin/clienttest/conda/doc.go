// Package conda drives a real origin serving the conda format with
// py-rattler (the library behind pixi): packages in both formats, built
// here, are uploaded; rattler solves against the channel, fetches and
// installs into a prefix, and every hash is checked; against the origin
// and through an edge.
package conda
