//go:build wasip1

// Package sdk writes plugins in Go: a plugin's main package registers
// its manifest and its handler in an init function, and is built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// The package exports the host interface's functions (depot_abi,
// depot_alloc, depot_handle) and wraps its imports (Artifact, List,
// Read, Log). See package abi for what the calls carry.
package sdk

import (
	"encoding/json"
	"errors"
	"unsafe"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
)

// Handler answers one request on a route of the manifest.
type Handler func(c *abi.Call) abi.Response

var (
	manifest abi.Manifest
	handler  Handler
	// pinned keeps what the host reads or writes alive until the next
	// call: the request it wrote, the answer it reads.
	pinned [][]byte
)

// Register declares the plugin: call it from an init function.
func Register(m abi.Manifest, h Handler) { manifest, handler = m, h }

//go:wasmexport depot_abi
func depotABI() uint32 { return abi.Version }

//go:wasmexport depot_alloc
func depotAlloc(n uint32) uint32 {
	b := make([]byte, max(n, 1))
	pinned = append(pinned, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport depot_handle
func depotHandle(ptr, n uint32) uint64 {
	var in []byte // the request, where depot_alloc gave the host room for it
	for _, b := range pinned {
		if ptrOf(b) == ptr && int(n) <= len(b) {
			in = b[:n]
		}
	}
	var c abi.Call
	var out any
	if err := json.Unmarshal(in, &c); err != nil {
		out = abi.Response{Status: 400, Error: "the host's call is not JSON: " + err.Error()}
	} else if c.Call == abi.CallManifest {
		out = manifest
	} else {
		out = handler(&c)
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(abi.Response{Status: 500, Error: err.Error()})
	}
	pinned = [][]byte{b}
	return uint64(uintptr(unsafe.Pointer(&b[0])))<<32 | uint64(len(b))
}

//go:wasmimport depot artifact
func hostArtifact(pathPtr, pathLen, outPtr, outCap uint32) int32

//go:wasmimport depot list
func hostList(prefixPtr, prefixLen, outPtr, outCap uint32) int32

//go:wasmimport depot read
func hostRead(pathPtr, pathLen uint32, offset int64, outPtr, outCap uint32) int32

//go:wasmimport depot log
func hostLog(ptr, n uint32)

// ErrRefused is a path the host refused (outside the repository).
var ErrRefused = errors.New("the host refused the path")

func ptrOf(b []byte) uint32 {
	if len(b) == 0 {
		b = []byte{0}
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

// fetch calls a host lookup, growing its buffer when the answer needs it.
func fetch(fn func(pathPtr, pathLen, outPtr, outCap uint32) int32, p string) ([]byte, error) {
	path := []byte(p)
	out := make([]byte, 64<<10) // most answers fit: one host call
	for range 3 {
		n := fn(ptrOf(path), uint32(len(path)), ptrOf(out), uint32(len(out)))
		switch {
		case n < 0:
			return nil, ErrRefused
		case n == 0:
			return nil, nil
		case int(n) <= len(out):
			return out[:n], nil
		}
		out = make([]byte, n)
	}
	return nil, errors.New("the answer kept growing")
}

// Artifact is the file of the request's repository at path (nil: none).
func Artifact(path string) (*abi.Artifact, error) {
	b, err := fetch(hostArtifact, path)
	if b == nil || err != nil {
		return nil, err
	}
	var a abi.Artifact
	return &a, json.Unmarshal(b, &a)
}

// List is the files of the request's repository under prefix (at most
// 1,000).
func List(prefix string) ([]abi.Artifact, error) {
	b, err := fetch(hostList, prefix)
	if b == nil || err != nil {
		return nil, err
	}
	var out []abi.Artifact
	return out, json.Unmarshal(b, &out)
}

// Read reads the bytes of the file at path from off into p: how many,
// 0 at its end.
func Read(path string, off int64, p []byte) (int, error) {
	b := []byte(path)
	n := hostRead(ptrOf(b), uint32(len(b)), off, ptrOf(p), uint32(len(p)))
	if n < 0 {
		return 0, ErrRefused
	}
	return int(n), nil
}

// Log writes a line to the registry's log.
func Log(msg string) {
	b := []byte(msg)
	hostLog(ptrOf(b), uint32(len(b)))
}
