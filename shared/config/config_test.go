package config

import (
	"strings"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		env, flag string
		want      time.Duration
		bad       bool
	}{
		{want: time.Hour},
		{env: "90m", want: 90 * time.Minute},
		{env: "120", want: 2 * time.Minute},
		{flag: "0", want: 0},
		{env: "1h", flag: "2h30m", want: 150 * time.Minute},
		{env: "-1h", bad: true},
		{flag: "soon", bad: true},
	} {
		env := map[string]string{"TEST_GRACE": tc.env}
		d := time.Hour
		s := New("test", func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" })
		s.Duration(&d, "grace", "TEST_GRACE", "grace")
		var args []string
		if tc.flag != "" {
			args = []string{"--grace", tc.flag}
		}
		err := s.Parse(args)
		if tc.bad {
			if err == nil {
				t.Errorf("env %q flag %q: no error", tc.env, tc.flag)
			}
			continue
		}
		if err != nil || d != tc.want {
			t.Errorf("env %q flag %q = %v, %v; want %v", tc.env, tc.flag, d, err, tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1024": 1024, "50GiB": 50 << 30, "512MB": 512e6, "2 KiB": 2048, "7B": 7, "1TB": 1e12} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "5XB", "GiB", "99999999999TiB", "1.5GB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q): no error", bad)
		}
	}
}

// TestPrefixedNames: a setting named without DEPOT_ reads DEPOT_<name>
// first, then its own name; an error names the variable it read.
func TestPrefixedNames(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		want    bool
		wantErr string
	}{
		{env: map[string]string{}, want: false},
		{env: map[string]string{"REQUIRE_HTTPS": "true"}, want: true},
		{env: map[string]string{"DEPOT_REQUIRE_HTTPS": "true"}, want: true},
		{env: map[string]string{"REQUIRE_HTTPS": "true", "DEPOT_REQUIRE_HTTPS": "false"}, want: false},
		{env: map[string]string{"DEPOT_REQUIRE_HTTPS": "maybe"}, wantErr: `DEPOT_REQUIRE_HTTPS="maybe"`},
	} {
		s := New("test", func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		var got bool
		s.Bool(&got, "require-https", "REQUIRE_HTTPS", "https only")
		err := s.Parse(nil)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one naming %s", tc.env, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %v, %v; want %v", tc.env, got, err, tc.want)
		}
	}
}
