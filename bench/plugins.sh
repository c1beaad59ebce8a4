#!/bin/sh
# A read served by an installed plugin (the example Terraform module
# registry, WebAssembly) beside the same read served by a built-in handler,
# on one origin in process: a version list of 50 versions and a 64 KiB
# download, serially and from 8 clients. Usage: bench/plugins.sh [benchtime]
set -e
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'Read' -benchmem -benchtime "${1:-3s}" ./bench/pluginread
# The calls alone, without HTTP or a store.
go test -run '^$' -bench 'Call' -benchmem -benchtime "${1:-3s}" ./shared/format/plugin
