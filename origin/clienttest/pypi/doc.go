// Package pypi drives a real origin serving the pypi format with the real
// clients: dists built by Debian's setuptools, published with twine,
// installed with pip from wheels and from sdists; plus HTTP-level tests
// of the error and authorization paths that no client reaches on purpose.
//
// Needs twine (apt-get install twine: it brings setuptools and wheel to
// /usr/bin/python3), python3-venv, and pip in a python3 on PATH.
package pypi
