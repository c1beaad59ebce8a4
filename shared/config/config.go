// Package config binds command-line flags to environment variables: every
// setting can come from a flag or from its variable, the flag winning, and
// --help names both.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Set is a flag set whose flags also read environment variables.
type Set struct {
	fs      *flag.FlagSet
	lookup  func(string) (string, bool)
	errs    []error
	entries []entry
	group   string // of the settings bound next (Group)
}

type entry struct{ group, name, env, usage, def string }

// Group starts a group of settings: those bound after it, until the next
// Group, are listed under title by PrintUsage.
func (s *Set) Group(title string) { s.group = title }

// New returns a set for a subcommand; lookup nil reads the process env.
func New(name string, lookup func(string) (string, bool)) *Set {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s := &Set{fs: flag.NewFlagSet(name, flag.ContinueOnError), lookup: lookup}
	// Errors are reported by the caller, with a pointer to --help.
	s.fs.Usage = func() {}
	s.fs.SetOutput(io.Discard)
	return s
}

// env is the value of a setting's variable, def when it is not set.
func (s *Set) env(name, env string, def string) string {
	v, _ := s.envNamed(env, def)
	return v
}

// envNamed is env's value and the name it was read under: a variable
// named without the DEPOT_ prefix (the spec's names, as JWT_SECRET) is
// read with it first, so a shared environment's REQUIRE_HTTPS or
// WEBHOOK_* meant for something else can be overridden, and Depot's own
// settings be told apart (DEPOT_JWT_SECRET).
func (s *Set) envNamed(env, def string) (string, string) {
	for _, k := range envNames(env) {
		if v, ok := s.lookup(k); ok && v != "" {
			return v, k
		}
	}
	return def, env
}

// envNames are the variables a setting reads, in order.
func envNames(env string) []string {
	switch {
	case env == "":
		return nil
	case strings.HasPrefix(env, "DEPOT_"):
		return []string{env}
	}
	return []string{"DEPOT_" + env, env}
}

func (s *Set) add(name, env, usage, def string) {
	s.entries = append(s.entries, entry{s.group, name, env, usage, def})
}

// String binds a string setting. An empty flag name makes it
// environment-only (for secrets that should not show in a process list).
func (s *Set) String(p *string, name, env, usage string) {
	def := *p
	*p = s.env(name, env, *p)
	s.add(name, env, usage, def)
	if name != "" {
		s.fs.StringVar(p, name, *p, usage)
	}
}

// Bool binds a boolean setting.
func (s *Set) Bool(p *bool, name, env, usage string) {
	def := strconv.FormatBool(*p)
	if v, k := s.envNamed(env, ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s=%q: want true or false", k, v))
		}
		*p = b
	}
	s.add(name, env, usage, def)
	if name != "" {
		s.fs.BoolVar(p, name, *p, usage)
	}
}

// bind binds a setting read by parse from its environment variable and
// its flag (the flag wins); def is the default as --help shows it.
func bind[T any](s *Set, p *T, name, env, usage, def string, parse func(string) (T, error)) {
	if v, k := s.envNamed(env, ""); v != "" {
		if x, err := parse(v); err != nil {
			s.errs = append(s.errs, fmt.Errorf("%s=%q: %w", k, v, err))
		} else {
			*p = x
		}
	}
	s.add(name, env, usage, def)
	if name != "" {
		s.fs.Func(name, usage, func(v string) error {
			x, err := parse(v)
			if err == nil {
				*p = x
			}
			return err
		})
	}
}

// Int binds an integer setting.
func (s *Set) Int(p *int64, name, env, usage string) {
	bind(s, p, name, env, usage, strconv.FormatInt(*p, 10), func(v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want an integer")
		}
		return n, nil
	})
}

// Count binds a non-negative integer setting held in an int.
func (s *Set) Count(p *int, name, env, usage string) {
	bind(s, p, name, env, usage, strconv.Itoa(*p), func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("want a whole number, 0 or more")
		}
		return n, nil
	})
}

// Seconds binds a duration given in whole seconds (the spec's variables
// are in seconds).
func (s *Set) Seconds(p *time.Duration, name, env, usage string) {
	bind(s, p, name, env, usage, strconv.FormatInt(int64(*p/time.Second), 10), func(v string) (time.Duration, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("want a positive number of seconds")
		}
		return time.Duration(n) * time.Second, nil
	})
}

// Duration binds a duration written as Go writes them ("90m", "1h30m")
// or as a whole number of seconds; it must not be negative, and 0 is
// allowed (settings use it for "off").
func (s *Set) Duration(p *time.Duration, name, env, usage string) {
	bind(s, p, name, env, usage, p.String(), parseDuration)
}

func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 90m or 1h, or a number of seconds")
	}
	return d, nil
}

// Bytes binds a size written as a number of bytes or with a unit (KB,
// MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024),
// e.g. "50GiB".
func (s *Set) Bytes(p *int64, name, env, usage string) {
	bind(s, p, name, env, usage, strconv.FormatInt(*p, 10), ParseBytes)
}

// ParseBytes reads a size such as "1048576", "512MB" or "50GiB".
func ParseBytes(v string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, mult := strings.TrimSpace(v), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a size such as 50GiB, 512MB or a number of bytes")
	}
	return n * mult, nil
}

// FormatBytes writes a size for people, in binary units: "512 B",
// "1.5 MiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Parse parses args; environment errors are reported first. Errors name
// flags as --help shows them (--name; the flag package says -name).
func (s *Set) Parse(args []string) error {
	if len(s.errs) > 0 {
		return s.errs[0]
	}
	err := s.fs.Parse(args)
	if err == nil || err == flag.ErrHelp {
		return err
	}
	return errors.New(flagName.ReplaceAllString(err.Error(), "${1}--$2"))
}

// flagName is a flag as the flag package's errors name it.
var flagName = regexp.MustCompile(`(^|: |flag |for )-([A-Za-z])`)

// Given says how a setting was given, when it was: "--name" when its
// flag is on the command line, else the name of its environment variable
// when that is set; "" when it has its default.
func (s *Set) Given(name string) string {
	given := ""
	s.fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			given = "--" + name
		}
	})
	if given != "" {
		return given
	}
	for _, e := range s.entries {
		if e.name == name {
			if v, k := s.envNamed(e.env, ""); v != "" {
				return k
			}
		}
	}
	return ""
}

// Args are the arguments left after the flags.
func (s *Set) Args() []string { return s.fs.Args() }

// usageWidth is the width PrintUsage wraps at.
const usageWidth = 100

// PrintUsage lists the settings by group, in the order they were bound:
// for each, its flag, variable and default on a line, then its meaning,
// wrapped.
func (s *Set) PrintUsage(w io.Writer) {
	group := ""
	for i, e := range s.entries {
		if e.group != group || i == 0 && e.group != "" {
			group = e.group
			fmt.Fprintf(w, "\n%s:\n", group)
		}
		head := "(environment only)"
		if e.name != "" {
			head = "--" + e.name
		}
		usage := e.usage
		if names := envNames(e.env); len(names) > 0 {
			head += "  $" + names[0]
			if len(names) > 1 {
				usage += " (also read from $" + names[1] + ")"
			}
		}
		if e.def != "" && e.def != "0" && e.def != "false" {
			head += "  (default " + e.def + ")"
		}
		fmt.Fprintf(w, "  %s\n", head)
		for _, line := range wrap(usage, usageWidth-8) {
			fmt.Fprintf(w, "        %s\n", line)
		}
	}
}

// wrap breaks text into lines of at most width characters at spaces (a
// longer word stands on its own line).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// IsHelp reports whether err is the flag package's answer to -h/--help.
func IsHelp(err error) bool { return err == flag.ErrHelp }
