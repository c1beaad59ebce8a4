// Package plugin runs format handlers compiled to WebAssembly, in
// process, with wazero: each call has a memory bound, a time bound and a
// bound on what it answers, and sees only what its host lets it read (the
// repository of the request it serves). A broken or hostile module (an
// endless loop, a huge allocation, a panic, a read outside its
// repository) fails its call, never the registry.
//
// The host interface, version 1 ("depot-plugin/1"):
//
// A module exports
//
//	depot_abi() i32                      the interface version it speaks: 1
//	depot_alloc(size i32) i32            memory for the host to write a request into
//	depot_handle(ptr i32, len i32) i64   handles the request (JSON) at ptr; answers
//	                                     the response's (JSON) address << 32 | length
//
// and may import, from module "depot",
//
//	artifact(path_ptr, path_len, out_ptr, out_cap i32) i32
//	list(prefix_ptr, prefix_len, out_ptr, out_cap i32) i32
//	read(path_ptr, path_len i32, offset i64, out_ptr, out_cap i32) i32
//	log(ptr, len i32)
//
// artifact and list write the JSON of an artifact of the request's
// repository at a path (or of those under a prefix, at most 1,000) into
// out and answer its length: 0 when there is none, the length needed when
// it exceeds out_cap (nothing written: call again with room), -1 when the
// path is refused (absolute, with "..", or longer than 1,024 bytes).
// read writes the bytes of that file from offset, at most out_cap (and
// at most 1 MiB a call), and answers how many (0 at its end, -1 when
// there is no such file). Paths are the repository's own: a module
// cannot name another's. The JSON of the calls is package abi's.
package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/depot-registry/depot/shared/format/plugin/abi"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// ABI is the host interface version this package speaks.
const ABI = 1

// Limits bound a module and each of its calls.
type Limits struct {
	// Memory is a module instance's memory, in bytes (64 KiB pages).
	Memory uint32
	// Call bounds one call's time.
	Call time.Duration
	// Module bounds a module's size; Response a call's answer.
	Module, Response int
	// Instances is how many calls of one module run at once.
	Instances int
}

// DefaultLimits are the limits of a module unless said otherwise.
var DefaultLimits = Limits{Memory: 128 << 20, Call: 2 * time.Second, Module: 32 << 20, Response: 16 << 20, Instances: 4}

// Host is what a call may read: the repository of the request it serves.
type Host interface {
	// Artifact is the JSON of the artifact at path (nil: none).
	Artifact(ctx context.Context, path string) ([]byte, error)
	// List is the JSON of the artifacts under prefix (at most limit).
	List(ctx context.Context, prefix string, limit int) ([]byte, error)
	// Read reads the bytes of the file at path from off into p: how many
	// (0 at its end); an error when there is no such file.
	Read(ctx context.Context, path string, off int64, p []byte) (int, error)
}

// maxRead bounds one read call's bytes.
const maxRead = 1 << 20

// Errors of a call.
var (
	ErrTimeout  = errors.New("the plugin did not answer in time")
	ErrTrapped  = errors.New("the plugin failed")
	ErrTooLarge = errors.New("the plugin's answer is too large")
)

// Engine compiles and runs modules.
type Engine struct {
	rt     wazero.Runtime
	limits Limits
	log    *slog.Logger
}

// NewEngine makes an engine whose modules run within limits.
func NewEngine(ctx context.Context, limits Limits, log *slog.Logger) (*Engine, error) {
	return newEngine(ctx, limits, log, true)
}

// newEngine is NewEngine; without interruptible, compiled code has no
// checks of the call's deadline and an endless loop is never stopped
// (for benchmarks that measure what the checks cost, only).
func newEngine(ctx context.Context, limits Limits, log *slog.Logger, interruptible bool) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The compilation cache: a module compiled again (checked when it is
	// installed, then loaded to serve) is compiled once. Closing on the
	// context's end compiles checks into the code (at calls and loops),
	// which is what stops a call at its deadline.
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(limits.Memory / 65536).WithCloseOnContextDone(interruptible).
		WithCompilationCache(wazero.NewCompilationCache())
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	e := &Engine{rt: rt, limits: limits, log: log}
	b := rt.NewHostModuleBuilder("depot")
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(e.hostArtifact), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("artifact")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(e.hostList), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).Export("list")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(e.hostRead), []api.ValueType{i32, i32, api.ValueTypeI64, i32, i32}, []api.ValueType{i32}).Export("read")
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(e.hostLog), []api.ValueType{i32, i32}, nil).Export("log")
	if _, err := b.Instantiate(ctx); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

// Close frees the engine and every module it loaded.
func (e *Engine) Close(ctx context.Context) error { return e.rt.Close(ctx) }

// Module is a loaded module: calls run on a few instances of it, each
// serving one call at a time; an instance a call broke is dropped.
type Module struct {
	e        *Engine
	compiled wazero.CompiledModule
	idle     chan api.Module
	slots    chan struct{}
	mu       sync.Mutex
	seq      int
}

// Load compiles a module and checks it speaks this interface.
func (e *Engine) Load(ctx context.Context, wasm []byte) (*Module, error) {
	if len(wasm) > e.limits.Module {
		return nil, fmt.Errorf("the module is %d bytes; at most %d", len(wasm), e.limits.Module)
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module")
	}
	compiled, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("compiling the module: %w", err)
	}
	exports := compiled.ExportedFunctions()
	for _, name := range []string{"depot_abi", "depot_alloc", "depot_handle"} {
		if _, ok := exports[name]; !ok {
			compiled.Close(ctx)
			return nil, fmt.Errorf("the module does not export %s (see the plugin host interface, version %d)", name, ABI)
		}
	}
	m := &Module{e: e, compiled: compiled, idle: make(chan api.Module, e.limits.Instances), slots: make(chan struct{}, e.limits.Instances)}
	inst, err := m.instance(ctx)
	if err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	res, err := inst.ExportedFunction("depot_abi").Call(ctx)
	if err != nil || len(res) != 1 || uint32(res[0]) != ABI {
		inst.Close(ctx)
		compiled.Close(ctx)
		return nil, fmt.Errorf("the module speaks another host interface (depot_abi: %v %v); this registry speaks version %d", res, err, ABI)
	}
	m.idle <- inst
	return m, nil
}

// Close frees the module.
func (m *Module) Close(ctx context.Context) error {
	for {
		select {
		case inst := <-m.idle:
			inst.Close(ctx)
		default:
			return m.compiled.Close(ctx)
		}
	}
}

func (m *Module) instance(ctx context.Context) (api.Module, error) {
	m.mu.Lock()
	m.seq++
	name := fmt.Sprintf("plugin-%p-%d", m, m.seq)
	m.mu.Unlock()
	cfg := wazero.NewModuleConfig().WithName(name).WithStartFunctions("_initialize").WithSysWalltime().WithSysNanotime().
		WithStdout(&logWriter{log: m.e.log}).WithStderr(&logWriter{log: m.e.log})
	inst, err := m.e.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: starting the module: %v", ErrTrapped, err)
	}
	return inst, nil
}

type hostKey struct{}

// maxManifest bounds a module's manifest.
const maxManifest = 64 << 10

// Manifest asks the module what it serves, and checks the answer.
func (m *Module) Manifest(ctx context.Context) (abi.Manifest, error) {
	var man abi.Manifest
	req, _ := json.Marshal(abi.Call{Call: abi.CallManifest})
	out, err := m.Call(ctx, nil, req)
	if err != nil {
		return man, fmt.Errorf("asking the module for its manifest: %w", err)
	}
	if len(out) > maxManifest {
		return man, fmt.Errorf("the module's manifest is %d bytes; at most %d", len(out), maxManifest)
	}
	if err := json.Unmarshal(out, &man); err != nil {
		return man, fmt.Errorf("the module's manifest is not the JSON of the host interface: %w", err)
	}
	return man, CheckManifest(man)
}

// Call has the module handle a request (JSON) for host, within the
// limits: its answer (JSON), or an error (ErrTimeout, ErrTrapped,
// ErrTooLarge) saying how the call failed.
func (m *Module) Call(ctx context.Context, host Host, req []byte) ([]byte, error) {
	select {
	case m.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.slots }()
	var inst api.Module
	select {
	case inst = <-m.idle:
	default:
		var err error
		if inst, err = m.instance(ctx); err != nil {
			return nil, err
		}
	}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, hostKey{}, host), m.e.limits.Call)
	defer cancel()
	out, err := m.call(cctx, inst, req)
	if err != nil {
		inst.Close(context.Background()) // what it left behind is not to be trusted
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, ErrTimeout
		}
		return nil, err
	}
	m.idle <- inst
	return out, nil
}

func (m *Module) call(ctx context.Context, inst api.Module, req []byte) ([]byte, error) {
	res, err := inst.ExportedFunction("depot_alloc").Call(ctx, uint64(len(req)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrapped, err)
	}
	ptr := uint32(res[0])
	if !inst.Memory().Write(ptr, req) {
		return nil, fmt.Errorf("%w: it gave memory out of its bounds for the request", ErrTrapped)
	}
	res, err = inst.ExportedFunction("depot_handle").Call(ctx, uint64(ptr), uint64(len(req)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrapped, err)
	}
	optr, olen := uint32(res[0]>>32), uint32(res[0])
	if int(olen) > m.e.limits.Response {
		return nil, fmt.Errorf("%w: %d bytes; at most %d", ErrTooLarge, olen, m.e.limits.Response)
	}
	out, ok := inst.Memory().Read(optr, olen)
	if !ok {
		return nil, fmt.Errorf("%w: its answer is out of its memory's bounds", ErrTrapped)
	}
	return bytes.Clone(out), nil
}

// maxPath bounds a path a module names.
const maxPath = 1024

// cleanPath is a path a module named, as the repository's own, or false.
func cleanPath(p string, prefix bool) (string, bool) {
	if len(p) > maxPath || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", false
	}
	if p == "" {
		return "", prefix
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if seg == ".." || seg == "." || seg == "" {
			return "", false
		}
	}
	c := path.Clean(p)
	if prefix && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c, true
}

// answer writes what a host function answers into the module's out
// buffer: its length, or the length needed (nothing written).
func answer(m api.Module, data []byte, out, capacity uint32) int32 {
	if data == nil {
		return 0
	}
	if uint32(len(data)) > capacity {
		return int32(len(data))
	}
	if !m.Memory().Write(out, data) {
		return -1
	}
	return int32(len(data))
}

func (e *Engine) hostArtifact(ctx context.Context, m api.Module, stack []uint64) {
	stack[0] = api.EncodeI32(e.lookup(ctx, m, stack, false))
}

func (e *Engine) hostList(ctx context.Context, m api.Module, stack []uint64) {
	stack[0] = api.EncodeI32(e.lookup(ctx, m, stack, true))
}

func (e *Engine) lookup(ctx context.Context, m api.Module, stack []uint64, list bool) int32 {
	host, _ := ctx.Value(hostKey{}).(Host)
	raw, ok := m.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	if host == nil || !ok {
		return -1
	}
	p, ok := cleanPath(string(raw), list)
	if !ok {
		return -1
	}
	var data []byte
	var err error
	if list {
		data, err = host.List(ctx, p, 1000)
	} else {
		data, err = host.Artifact(ctx, p)
	}
	if err != nil {
		return -1
	}
	return answer(m, data, uint32(stack[2]), uint32(stack[3]))
}

func (e *Engine) hostRead(ctx context.Context, m api.Module, stack []uint64) {
	stack[0] = api.EncodeI32(e.read(ctx, m, stack))
}

func (e *Engine) read(ctx context.Context, m api.Module, stack []uint64) int32 {
	host, _ := ctx.Value(hostKey{}).(Host)
	raw, ok := m.Memory().Read(uint32(stack[0]), min(uint32(stack[1]), maxPath+1))
	off, out, capacity := int64(stack[2]), uint32(stack[3]), min(uint32(stack[4]), maxRead)
	if host == nil || !ok || off < 0 {
		return -1
	}
	p, ok := cleanPath(string(raw), false)
	if !ok {
		return -1
	}
	buf := make([]byte, capacity)
	n, err := host.Read(ctx, p, off, buf)
	if err != nil {
		return -1
	}
	if n > 0 && !m.Memory().Write(out, buf[:n]) {
		return -1
	}
	return int32(n)
}

func (e *Engine) hostLog(ctx context.Context, m api.Module, stack []uint64) {
	n := min(uint32(stack[1]), 4096)
	if raw, ok := m.Memory().Read(uint32(stack[0]), n); ok {
		e.log.Info("plugin", "module", m.Name(), "message", string(raw))
	}
}

// logWriter takes a module's standard output and error, bounded, into
// the log.
type logWriter struct {
	log  *slog.Logger
	seen int
}

func (w *logWriter) Write(p []byte) (int, error) {
	if w.seen < 64<<10 {
		w.log.Info("plugin output", "text", string(p[:min(len(p), 4096)]))
	}
	w.seen += len(p)
	return len(p), nil
}

var _ io.Writer = (*logWriter)(nil)
