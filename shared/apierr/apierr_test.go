package apierr

import (
	"regexp"
	"testing"
)

// TestRegistry: every code has a status and a description (documentation
// is generated from them), and codes are SHOUTING_SNAKE.
func TestRegistry(t *testing.T) {
	snake := regexp.MustCompile(`^[A-Z]+(_[A-Z]+)*$`)
	for _, c := range Codes() {
		if c.Status() < 400 || len(c.Description()) < 20 || !snake.MatchString(string(c)) {
			t.Errorf("%s: status %d, description %q", c, c.Status(), c.Description())
		}
	}
	if len(Codes()) < 17 {
		t.Fatalf("%d codes", len(Codes()))
	}
	if Code("NOPE").Status() != 500 || Code("NOPE").Description() != "" {
		t.Error("an unknown code")
	}
}
