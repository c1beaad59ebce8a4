package logx

import (
	"bytes"
	"strings"
	"testing"
)

func TestHCLogBridge(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, "json", "debug")
	h := HCLog(l, "raft")
	h.Info("entering leader state", "term", 3)
	h.Warn("heartbeat timeout")
	out := buf.String()
	for _, want := range []string{`"msg":"entering leader state"`, `"component":"raft"`, `"term":3`, `"level":"WARN"`} {
		if !strings.Contains(out, want) {
			t.Errorf("bridged log lacks %s:\n%s", want, out)
		}
	}
	buf.Reset()
	HCLog(New(&buf, "text", "info"), "raft").Info("chatty")
	if buf.Len() != 0 {
		t.Errorf("raft info lines shown at info level: %s", buf.String())
	}
}

func TestHCLogDemoting(t *testing.T) {
	var buf bytes.Buffer
	h := HCLogDemoting(New(&buf, "text", "debug"), "raft", func(msg string) bool { return msg == "expected here" })
	h.Warn("expected here")
	h.Warn("a real warning")
	out := buf.String()
	if !strings.Contains(out, `level=DEBUG msg="expected here"`) || !strings.Contains(out, `level=WARN msg="a real warning"`) {
		t.Errorf("demoted message not at debug or other message demoted:\n%s", out)
	}
	buf.Reset()
	HCLogDemoting(New(&buf, "text", "info"), "raft", func(string) bool { return true }).Warn("expected here")
	if buf.Len() != 0 {
		t.Errorf("demoted message shown at info level: %s", buf.String())
	}
}
