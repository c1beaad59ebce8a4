package composer

import "testing"

func TestNormalize(t *testing.T) {
	for v, want := range map[string]string{"1.2.3": "1.2.3.0", "1.2": "1.2.0.0", "v1.0.0-beta1": "1.0.0.0-beta1", "2.0.0-RC2": "2.0.0.0-RC2",
		"1.2.3.4": "1.2.3.4", "dev-main": "dev-main", "1.x-dev": "1.9999999.9999999.9999999-dev"} {
		if !validVersion(v) {
			t.Errorf("%q refused", v)
		}
		if got := normalize(v); got != want {
			t.Errorf("normalize(%q) = %q, want %q", v, got, want)
		}
	}
	for _, v := range []string{"", "latest", "1.0.0/../x", "dev-", "1..0", "1.0.0 beta"} {
		if validVersion(v) {
			t.Errorf("%q accepted", v)
		}
	}
}

func FuzzVersion(f *testing.F) {
	for _, s := range []string{"1.0.0", "v2.1-beta3", "dev-main", "1.x-dev"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if validVersion(v) && normalize(v) == "" {
			t.Fatalf("normalize(%q) is empty", v)
		}
	})
}
