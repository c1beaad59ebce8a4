// Package logx sets up structured logging (log/slog) and bridges the
// hclog loggers of raft and memberlist into it.
package logx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// New returns a logger writing to w as JSON (format "json") or as
// key=value text (anything else), at the given level name.
func New(w io.Writer, format, level string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: ParseLevel(level)}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// ParseLevel maps debug/info/warn/error to a slog level (info by default).
func ParseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// HCLog returns an hclog.Logger whose records end up in l, tagged with
// the component name. Raft and memberlist chat at info level about every
// state change, so their info lines only show when l logs debug.
func HCLog(l *slog.Logger, component string) hclog.Logger {
	return HCLogDemoting(l, component, nil)
}

// HCLogDemoting is HCLog, except that the messages for which demote
// reports true are logged at debug level, whatever level the library gave
// them (a warning that is normal in this process's situation).
func HCLogDemoting(l *slog.Logger, component string, demote func(msg string) bool) hclog.Logger {
	level := hclog.Warn
	if l.Enabled(context.Background(), slog.LevelDebug) {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       component,
		Level:      level,
		JSONFormat: true,
		Output:     &bridge{l: l, demote: demote},
	})
}

// bridge re-emits hclog's JSON lines as slog records.
type bridge struct {
	l      *slog.Logger
	demote func(msg string) bool
}

func (b *bridge) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			b.l.Info(string(line))
			continue
		}
		msg, _ := rec["@message"].(string)
		lvl := ParseLevel(str(rec["@level"]))
		if lvl > slog.LevelDebug && b.demote != nil && b.demote(msg) {
			lvl = slog.LevelDebug
		}
		attrs := []any{}
		if m, ok := rec["@module"]; ok {
			attrs = append(attrs, "component", m)
		}
		keys := make([]string, 0, len(rec))
		for k := range rec {
			if !strings.HasPrefix(k, "@") {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			attrs = append(attrs, k, rec[k])
		}
		b.l.Log(context.Background(), lvl, msg, attrs...)
	}
	return len(p), nil
}

func str(v any) string { s, _ := v.(string); return s }
