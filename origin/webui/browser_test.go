package webui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium driving the pages as a person would,
// watching for what a person would not see: console errors, uncaught
// exceptions, policy violations and failed requests of this server's
// pages. Each shot is kept in the test's artifact directory (go test
// -artifacts keeps them under the output directory).
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	problems []string
	failed   []network.EventLoadingFailed // resolved against ours when checked
	ours     func(network.RequestID) (url string, ok bool)
	dialogs  []string
	shots    int
}

// chromium finds the browser: skipped without it unless
// DEPOT_REQUIRE_CLIENTS is set, as every test of a real client.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("DEPOT_REQUIRE_CLIENTS") != "" {
		t.Fatal("chromium is required (DEPOT_REQUIRE_CLIENTS is set) but not installed (Debian: apt-get install chromium)")
	}
	t.Skip("chromium not installed (Debian: apt-get install chromium)")
	return ""
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests may run as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	// Failures name their request only: remember which are ours (the
	// provider's pages of a sign-in load what they load).
	var sentMu sync.Mutex
	sent := map[network.RequestID]string{}
	b := &browser{t: t, ctx: ctx, base: base}
	b.ours = func(id network.RequestID) (string, bool) {
		sentMu.Lock()
		defer sentMu.Unlock()
		u, ok := sent[id]
		return u, ok
	}
	ours := func(u string) bool { return strings.HasPrefix(u, base) }
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			// Failed loads are the network watch's; the rest of an error
			// (a script error, a policy violation) is a problem.
			if (m.Type == chromedp.ConsoleError || m.IsException()) && m.Source != "network" && (m.URL == "" || ours(m.URL)) {
				b.problem("console %s", m)
			}
		}
	}()
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for ev, err := range requests {
			if err != nil {
				return
			}
			if ours(ev.Request.URL) {
				sentMu.Lock()
				sent[ev.RequestID] = ev.Request.URL
				sentMu.Unlock()
			}
		}
	}()
	failed := chromedp.Events(ctx, network.LoadingFailed)
	go func() {
		for ev, err := range failed {
			if err != nil {
				return
			}
			if !ev.Canceled {
				b.mu.Lock()
				b.failed = append(b.failed, ev)
				b.mu.Unlock()
			}
		}
	}()
	responses := chromedp.Events(ctx, network.ResponseReceived)
	go func() {
		for ev, err := range responses {
			if err != nil {
				return
			}
			// A page may answer 4xx on purpose (a refused form); what it
			// loads may not, and nothing may answer 5xx.
			if ours(ev.Response.URL) && (ev.Response.Status >= 500 || ev.Response.Status >= 400 && ev.Type != network.ResourceTypeDocument) {
				b.problem("%s answered %d", ev.Response.URL, ev.Response.Status)
			}
		}
	}()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

func (b *browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// clean fails the test for every problem seen since the last call.
func (b *browser) clean() {
	b.t.Helper()
	time.Sleep(100 * time.Millisecond) // events of the last page arrive asynchronously
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range b.failed {
		if u, mine := b.ours(ev.RequestID); mine {
			b.problems = append(b.problems, fmt.Sprintf("%s failed: %s (%s)", u, ev.ErrorText, ev.Type))
		}
	}
	b.failed = nil
	for _, p := range b.problems {
		b.t.Errorf("in the browser: %s", p)
	}
	b.problems = nil
}

// takeDialogs returns the dialogs accepted since the last call.
func (b *browser) takeDialogs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.dialogs
	b.dialogs = nil
	return d
}

// do runs the steps, failing the test at the first that fails.
func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second) // one step, not the browser's life
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
		b.t.Fatalf("in the browser at %s: %v\n%s", loc, err, body)
	}
}

// open goes to path (under the server) and waits for its main content.
func (b *browser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("main")))
}

// labelled fails the test for every form control of the page without a
// label (a <label>, aria-label or aria-labelledby), as assistive
// technology would meet it.
func (b *browser) labelled() {
	b.t.Helper()
	bare, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(
		"input:not([type=hidden]):not([type=submit]), select, textarea")].filter(e =>
		e.labels.length === 0 && !e.getAttribute("aria-label") && !e.getAttribute("aria-labelledby")).map(e => e.outerHTML)`))
	if err != nil {
		b.t.Fatal(err)
	}
	for _, e := range bare {
		b.t.Errorf("%s: a control without a label: %s", b.location(), e)
	}
}

// text is the text of the first element sel finds.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("reading %s: %v", sel, err)
	}
	return s
}

// count is how many elements sel finds on the page.
func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatalf("counting %s: %v", sel, err)
	}
	return n
}

func (b *browser) location() string {
	b.t.Helper()
	loc, err := chromedp.Run(b.ctx, chromedp.Location())
	if err != nil {
		b.t.Fatal(err)
	}
	return loc
}

// shot keeps a screenshot of the whole page as <n>-<name>.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.mu.Lock()
	b.shots++
	n := b.shots
	b.mu.Unlock()
	if err := os.WriteFile(filepath.Join(b.t.ArtifactDir(), fmt.Sprintf("%02d-%s.png", n, name)), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// fill types each value into the field with that id.
func fill(fields ...string) []chromedp.Action[chromedp.Void] {
	var out []chromedp.Action[chromedp.Void]
	for i := 0; i+1 < len(fields); i += 2 {
		clear := chromedp.Evaluate[any](fmt.Sprintf("document.getElementById(%q).value = ''", fields[i]))
		out = append(out, chromedp.WaitVisible(chromedp.ID(fields[i])), asVoid(clear), chromedp.SendKeys(chromedp.ID(fields[i]), fields[i+1]))
	}
	return out
}

// then waits for sel after the steps (a new page's element).
func then(sel string, steps ...chromedp.Action[chromedp.Void]) []chromedp.Action[chromedp.Void] {
	return append(steps, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// asVoid runs an action for its effect.
func asVoid[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
