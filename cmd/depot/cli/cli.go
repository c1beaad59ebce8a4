package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/config"
)

// IO is what a command reads and writes: standard input (passwords with
// --password-stdin; a terminal is asked when it is one), output,
// messages, and the environment (nil: the process's).
type IO struct {
	In       io.Reader
	Out, Err io.Writer
	Lookup   func(string) (string, bool)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the server refused, or could not be reached
	exitUsage = 2 // the command line is wrong, or lacks what it needs
)

// command is one command: `depot login`, `depot repo create`...
type command struct {
	name    string // as typed after its group: "create"; the whole name for a command alone
	args    string // after the name in its usage line: "NAME --format FORMAT"
	summary string // one line, in its group's list
	about   string // its help
	// minArgs and maxArgs bound its arguments (maxArgs -1: no bound).
	minArgs, maxArgs int
	// setup binds the command's own flags and returns what runs it.
	setup func(*config.Set) func(*session, []string) error
	// local commands keep the URL to themselves (login, logout).
	local bool
}

// group is a noun with its verbs: `depot repo list|show|create|delete`.
type group struct {
	name, summary, about string
	cmds                 []*command
}

func (g *group) find(name string) *command {
	for _, c := range g.cmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

// groups are the nouns, in the order the help lists them.
var groups = []*group{repoGroup, userGroup, tokenGroup, edgeGroup, webhookGroup, pluginGroup}

// IsCommand reports whether word is a command of the command line that
// Run runs (besides edge's, see IsEdgeCommand).
func IsCommand(word string) bool {
	switch word {
	case "login", "logout", "migrate":
		return true
	}
	for _, g := range groups {
		if g.name == word && g != edgeGroup {
			return true
		}
	}
	return false
}

// IsEdgeCommand reports whether `depot edge <word>` is one of the
// commands managing edge nodes (else it runs an edge node).
func IsEdgeCommand(word string) bool {
	return word == "help" || edgeGroup.find(word) != nil
}

// Run runs a command of the command line: args[0] is its first word,
// login, logout, repo, user, token, webhook or edge (with a word
// IsEdgeCommand knows).
// The exit code is 0 on success, 1 when the server refused or could not
// be reached, 2 for a wrong command line.
func Run(args []string, stdio IO) int {
	if stdio.Lookup == nil {
		stdio.Lookup = os.LookupEnv
	}
	if stdio.In == nil {
		stdio.In = os.Stdin
	}
	switch args[0] {
	case "login":
		return runCommand("depot login", loginCmd, args[1:], stdio)
	case "logout":
		return runCommand("depot logout", logoutCmd, args[1:], stdio)
	case "migrate":
		return runCommand("depot migrate", migrateCmd, args[1:], stdio)
	}
	for _, g := range groups {
		if g.name == args[0] {
			return runGroup(g, args[1:], stdio)
		}
	}
	fmt.Fprintf(stdio.Err, "depot: unknown command %q\n", args[0])
	return exitUsage
}

func runGroup(g *group, args []string, stdio IO) int {
	if len(args) == 0 {
		printGroupHelp(stdio.Err, g)
		return exitUsage
	}
	verb := args[0]
	switch verb {
	case "-h", "--help", "help":
		if len(args) > 1 {
			if c := g.find(args[1]); c != nil {
				return runCommand("depot "+g.name+" "+c.name, c, []string{"--help"}, stdio)
			}
			fmt.Fprintf(stdio.Err, "depot %s: unknown command %q\n\n", g.name, args[1])
			printGroupHelp(stdio.Err, g)
			return exitUsage
		}
		printGroupHelp(stdio.Out, g)
		return exitOK
	}
	c := g.find(verb)
	if c == nil {
		fmt.Fprintf(stdio.Err, "depot %s: unknown command %q\n\n", g.name, verb)
		printGroupHelp(stdio.Err, g)
		return exitUsage
	}
	return runCommand("depot "+g.name+" "+c.name, c, args[1:], stdio)
}

// printGroupHelp lists a group's commands.
func printGroupHelp(w io.Writer, g *group) {
	fmt.Fprintf(w, "Usage: depot %s <command> [arguments] [flags]\n\n%s\n\nCommands:\n", g.name, g.about)
	for _, c := range g.cmds {
		head := "  " + c.name + " " + c.args
		if len(head) > 36 {
			fmt.Fprintf(w, "%s\n  %-34s  %s\n", head, "", c.summary)
			continue
		}
		fmt.Fprintf(w, "%-36s  %s\n", head, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'depot %s <command> --help' for a command's flags. Every command also takes\n"+
		"the connection and output flags: --url, --token, --output table|json, --config, --ca-file,\n"+
		"--timeout (each command's --help describes them).\n", g.name)
}

// globals are the settings every command takes.
type globals struct {
	url, token, output, config, caFile string
	timeout                            time.Duration
}

func (o *globals) bind(set *config.Set) {
	set.Group("Connection and output")
	set.String(&o.url, "url", "DEPOT_URL", "base URL of the Depot origin (or of an edge in front of it), e.g. "+
		"https://depot.example.com; default: the one depot login stored")
	set.String(&o.token, "token", "DEPOT_TOKEN", "API token (or access token) to call with instead of the one depot login "+
		"stored; for CI jobs")
	set.String(&o.output, "output", "DEPOT_OUTPUT", "table (aligned columns) or json (the server's JSON: an array for "+
		"lists, an object for one item)")
	set.String(&o.config, "config", "DEPOT_CONFIG", "the file depot login keeps the URL, username and API token in "+
		"(default <user config dir>/depot/config.json)")
	set.String(&o.caFile, "ca-file", "DEPOT_CA_FILE", "PEM certificates to trust besides the system's, for an origin "+
		"whose certificate a private CA signed")
	set.Duration(&o.timeout, "timeout", "DEPOT_TIMEOUT", "how long one request may take")
}

// session is a command being run: its settings, the stored config and
// the API client.
type session struct {
	ctx     context.Context
	io      IO
	name    string // "depot repo create", for messages
	output  string
	cfgPath string
	cfg     userConfig
	// url and token are what calls go to and with; tokenFrom says where
	// the token came from ("config", "flag" or "").
	url, token, tokenFrom string
	client                *Client
}

func runCommand(name string, c *command, args []string, stdio IO) int {
	set := config.New(strings.TrimPrefix(name, "depot "), stdio.Lookup)
	set.Group("Flags")
	run := c.setup(set)
	g := globals{output: outTable, timeout: time.Minute}
	g.bind(set)
	pos, err := parseInterspersed(set, args)
	if err != nil {
		if config.IsHelp(err) {
			fmt.Fprintf(stdio.Out, "Usage: %s %s\n\n%s\n", name, strings.TrimSpace(c.args+" [flags]"), c.about)
			set.PrintUsage(stdio.Out)
			return exitOK
		}
		fmt.Fprintf(stdio.Err, "%s: %v\nRun '%s --help' for the flags.\n", name, err, name)
		return exitUsage
	}
	switch {
	case len(pos) < c.minArgs || (c.maxArgs >= 0 && len(pos) > c.maxArgs):
		fmt.Fprintf(stdio.Err, "%s: want %s\nRun '%s --help' for more.\n", name, argsWanted(c), name)
		return exitUsage
	case g.output != outTable && g.output != outJSON:
		fmt.Fprintf(stdio.Err, "%s: --output %q: want table or json\n", name, g.output)
		return exitUsage
	}
	s := &session{ctx: context.Background(), io: stdio, name: name, output: g.output, cfgPath: g.config}
	if err := s.connect(g, c.local); err != nil {
		return s.report(err)
	}
	return s.report(run(s, pos))
}

// argsWanted says what arguments a command takes, for an error.
func argsWanted(c *command) string {
	args := strings.Fields(c.args)
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.HasPrefix(a, "[-") || strings.ToUpper(a) != a {
			break
		}
		words = append(words, a)
	}
	if len(words) == 0 {
		return "no arguments"
	}
	return strings.Join(words, " ")
}

// parseInterspersed parses flags wherever they stand among the
// arguments (`repo create js --format npm`), as users of other registry
// command lines expect; after "--" everything is an argument.
func parseInterspersed(set *config.Set, args []string) ([]string, error) {
	var pos []string
	for {
		if err := set.Parse(args); err != nil {
			return nil, err
		}
		rest := set.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// connect settles the URL and the credential: the flags' (or their
// variables'), else the stored config's. The stored token goes only to
// the URL it was stored for.
func (s *session) connect(g globals, local bool) error {
	if s.cfgPath == "" {
		s.cfgPath = defaultConfigPath()
	}
	cfg, err := loadConfig(s.cfgPath)
	if err != nil && (local || g.url == "" || g.token == "") {
		return err // else unused: a CI job giving both is not stopped by it
	}
	s.cfg = cfg
	if g.url != "" {
		if s.url, err = ParseBaseURL(g.url); err != nil {
			return usageError("--url: " + err.Error())
		}
	} else {
		s.url = cfg.URL
	}
	switch {
	case g.token != "":
		s.token, s.tokenFrom = g.token, "flag"
	case cfg.Token != "" && cfg.URL == s.url:
		s.token, s.tokenFrom = cfg.Token, "config"
	}
	if s.url == "" && !local {
		return usageError("not signed in: run depot login --url https://<your depot>, or give --url and --token " +
			"(DEPOT_URL, DEPOT_TOKEN)")
	}
	if s.token == "" && !local {
		// Anonymous callers see public repositories only: say so, or an
		// empty list after a logout looks like everything is gone.
		s.warnf("not signed in to %s: answering as an anonymous caller (run depot login to sign in)", s.url)
	}
	hc, err := newHTTPClient(g.caFile, g.timeout)
	if err != nil {
		return usageError(err.Error())
	}
	s.client = &Client{base: s.url, token: s.token, http: hc}
	return nil
}

// usageError is a command line that cannot run: exit 2.
type usageError string

func (e usageError) Error() string { return string(e) }

// report prints err as the command's message and returns the exit code.
func (s *session) report(err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ae *APIError
	var ne *NetError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(s.io.Err, "%s: %v\n", s.name, err)
		return exitUsage
	case errors.As(err, &ae) && ae.Status == 401:
		fmt.Fprintf(s.io.Err, "%s: %s\n", s.name, s.refused(ae))
	case errors.As(err, &ne):
		fmt.Fprintf(s.io.Err, "%s: cannot reach %s: %v\n", s.name, s.url, err)
	default:
		fmt.Fprintf(s.io.Err, "%s: %v\n", s.name, err)
	}
	return exitFail
}

// refused explains a 401 by where the credential came from.
func (s *session) refused(e *APIError) string {
	switch s.tokenFrom {
	case "config":
		return fmt.Sprintf("the token depot login stored for %s was refused (%s): it was revoked or has expired; run depot login again",
			s.url, e.Message)
	case "flag":
		return fmt.Sprintf("the token given with --token or DEPOT_TOKEN was refused by %s (%s)", s.url, e.Message)
	}
	return fmt.Sprintf("not signed in to %s (%s): run depot login --url %s, or give --token (DEPOT_TOKEN)", s.url, e.Message, s.url)
}

// warnf prints a message that is not the command's output.
func (s *session) warnf(format string, args ...any) {
	fmt.Fprintf(s.io.Err, format+"\n", args...)
}

// resolve finds the id of the item of a listing that ref names: its id,
// else the one whose name is ref (exactly, else ignoring case). kind
// names the resource in messages.
func resolve[T any](kind, list, ref string, items []Item[T], id, name func(T) string) (string, error) {
	var exact, folded []string
	for _, it := range items {
		switch {
		case id(it.Value) == ref:
			return ref, nil
		case name(it.Value) == ref:
			exact = append(exact, id(it.Value))
		case strings.EqualFold(name(it.Value), ref):
			folded = append(folded, id(it.Value))
		}
	}
	for _, m := range [][]string{exact, folded} {
		switch {
		case len(m) == 1:
			return m[0], nil
		case len(m) > 1:
			slices.Sort(m)
			return "", fmt.Errorf("%d %ss are named %q: give the id (%s)", len(m), kind, ref, strings.Join(m, ", "))
		}
	}
	return "", fmt.Errorf("no %s %q (%s lists them)", kind, ref, list)
}
