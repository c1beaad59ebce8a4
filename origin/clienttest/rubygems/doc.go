// Package rubygems drives a real origin serving the rubygems format with
// Debian's gem and bundler: gems built and pushed, installed with gem and
// with bundle install, yanked; the legacy Marshal indexes read back by
// Ruby itself; against the origin and through an edge.
package rubygems
