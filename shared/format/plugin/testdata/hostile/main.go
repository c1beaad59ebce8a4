// A plugin for the host's tests: well-behaved on some paths, hostile on
// others (an endless loop, a huge allocation, a panic, a read outside its
// repository). Built with GOOS=wasip1 GOARCH=wasm -buildmode=c-shared.
package main

import (
	"encoding/json"
	"unsafe"
)

//go:wasmimport depot artifact
func hostArtifact(pathPtr, pathLen, outPtr, outCap uint32) int32

//go:wasmimport depot log
func hostLog(ptr, n uint32)

var keep [][]byte

//go:wasmexport depot_abi
func abi() uint32 { return 1 }

//go:wasmexport depot_alloc
func alloc(n uint32) uint32 {
	b := make([]byte, max(n, 1))
	keep = append(keep, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

// request is a raw call ({"path", "arg"}) or a call of the host
// interface (the manifest; a route's, its op and arg in the path and
// the query).
type request struct {
	Call   string              `json:"call"`
	Path   string              `json:"path"`
	Arg    string              `json:"arg"`
	Params map[string]string   `json:"params"`
	Query  map[string][]string `json:"query"`
}

const manifest = `{"id":"hostile","name":"A hostile plugin","version":"0.0.1","format":"hostile","prefix":"/hostile",` +
	`"routes":[{"method":"GET","path":"/{repo}/{op}","action":"read"}]}`

func artifact(path string) (int32, string) {
	out := make([]byte, 16)
	p := []byte(path)
	if len(p) == 0 {
		p = []byte{0}
	}
	n := hostArtifact(uint32(uintptr(unsafe.Pointer(&p[0]))), uint32(len(path)), uint32(uintptr(unsafe.Pointer(&out[0]))), uint32(len(out)))
	if n > int32(len(out)) {
		out = make([]byte, n)
		n = hostArtifact(uint32(uintptr(unsafe.Pointer(&p[0]))), uint32(len(path)), uint32(uintptr(unsafe.Pointer(&out[0]))), uint32(len(out)))
	}
	if n <= 0 {
		return n, ""
	}
	return n, string(out[:n])
}

var sink [][]byte

//go:wasmexport depot_handle
func handle(ptr, n uint32) uint64 {
	keep = nil
	in := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
	var req request
	_ = json.Unmarshal(in, &req)
	if req.Call == "manifest" {
		out := []byte(manifest)
		keep = append(keep, out)
		return uint64(uintptr(unsafe.Pointer(&out[0])))<<32 | uint64(len(out))
	}
	if op := req.Params["op"]; op != "" {
		req.Path = "/" + op
		if a := req.Query["arg"]; len(a) > 0 {
			req.Arg = a[0]
		}
	}
	var resp any
	switch req.Path {
	case "/loop":
		for {
		}
	case "/alloc":
		for {
			sink = append(sink, make([]byte, 16<<20))
		}
	case "/panic":
		panic("a plugin gone wrong")
	case "/artifact":
		code, body := artifact(req.Arg)
		resp = map[string]any{"code": code, "body": body}
	case "/huge":
		b := make([]byte, 20<<20)
		return uint64(uintptr(unsafe.Pointer(&b[0])))<<32 | uint64(len(b))
	default:
		msg := []byte("echo " + req.Path)
		hostLog(uint32(uintptr(unsafe.Pointer(&msg[0]))), uint32(len(msg)))
		resp = map[string]any{"echo": req.Path}
	}
	out, _ := json.Marshal(resp)
	if req.Call == "handle" { // a route's answer: the document
		out, _ = json.Marshal(map[string]any{"headers": map[string]string{"Content-Type": "application/json"}, "body": string(out)})
	}
	keep = append(keep, out)
	return uint64(uintptr(unsafe.Pointer(&out[0])))<<32 | uint64(len(out))
}

func main() {}
