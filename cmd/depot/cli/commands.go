package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/config"
)

// The commands of each group are thin: read the flags, call the typed
// client, print. What is allowed and what is valid is the server's to
// say (its application layer); its message is shown as it is.

var repoView = view[Repository]{
	columns: []string{"NAME", "FORMAT", "PUBLIC", "ARTIFACTS", "SIZE", "CREATED", "ID"},
	row: func(r Repository) []string {
		return []string{r.Name, r.Format, yesNo(r.Public), strconv.FormatInt(r.ArtifactCount, 10), config.FormatBytes(r.SizeBytes), when(r.CreatedAt), r.ID}
	},
	detail: func(r Repository) [][2]string {
		return [][2]string{{"Name", r.Name}, {"ID", r.ID}, {"Format", r.Format}, {"Description", r.Description},
			{"Public", yesNo(r.Public)}, {"Artifacts", strconv.FormatInt(r.ArtifactCount, 10)},
			{"Size", config.FormatBytes(r.SizeBytes)}, {"Created", when(r.CreatedAt)}, {"Updated", when(r.UpdatedAt)}}
	},
}

var repoGroup = &group{name: "repo", summary: "list, show, create and delete repositories",
	about: "Manages the repositories of a Depot origin (/api/v1/repositories). A repository is named\n" +
		"by its name or its id.",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "the repositories you may read",
			about: "Lists the repositories the caller may read, every page of them (up to 10,000).",
			setup: func(set *config.Set) func(*session, []string) error {
				var format string
				set.String(&format, "format", "", "only the repositories of this format (npm, docker, ...)")
				return func(s *session, _ []string) error {
					items, more, err := s.client.Repositories(s.ctx, format)
					if err != nil {
						return err
					}
					if more {
						s.warnf("warning: only the first %d repositories are shown", len(items))
					}
					return printList(s.io.Out, s.output, repoView, items)
				}
			}},
		{name: "show", args: "REPOSITORY", minArgs: 1, maxArgs: 1, summary: "one repository's details",
			about: "Shows a repository, named by its name or id.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					r, err := s.client.Repository(s.ctx, args[0])
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, repoView, r)
				}
			}},
		{name: "create", args: "NAME --format FORMAT", minArgs: 1, maxArgs: 1, summary: "create a repository",
			about: "Creates a repository (POST /api/v1/repositories):\n\n  depot repo create js --format npm --description 'front-end packages' --public",
			setup: func(set *config.Set) func(*session, []string) error {
				var in NewRepository
				set.String(&in.Format, "format", "", "its package format: docker, maven, npm, pypi, go, helm, generic, ...")
				set.String(&in.Description, "description", "", "what it holds")
				set.Bool(&in.Public, "public", "", "anyone, signed in or not, may read it")
				return func(s *session, args []string) error {
					in.Name = args[0]
					r, err := s.client.CreateRepository(s.ctx, in)
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, repoView, r)
				}
			}},
		{name: "delete", args: "REPOSITORY...", minArgs: 1, maxArgs: -1, summary: "delete repositories and their artifacts",
			about: "Deletes repositories, each named by its name or id, with everything in them. It does not ask.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					for _, ref := range args {
						if err := s.client.DeleteRepository(s.ctx, ref); err != nil {
							return fmt.Errorf("repository %s: %w", ref, err)
						}
						s.done("deleted repository %s", ref)
					}
					return nil
				}
			}},
	},
}

var userView = view[User]{
	columns: []string{"USERNAME", "ROLE", "STATUS", "SOURCE", "EMAIL", "CREATED", "ID"},
	row: func(u User) []string {
		return []string{u.Username, u.Role, userStatus(u), u.Source, u.Email, when(u.CreatedAt), u.ID}
	},
}

// userStatus is whether a user's credentials work, as tables show it.
func userStatus(u User) string {
	if u.Disabled {
		return "disabled"
	}
	return "active"
}

var userGroup = &group{name: "user", summary: "list, create, delete, disable and enable users (administrators)",
	about: "Manages the users of a Depot origin (/api/v1/users; administrators only). A user is named\n" +
		"by username or id.",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "every user",
			about: "Lists every user: its role, whether it is active or disabled, and where it comes from\n" +
				"(local, ldap or oidc).",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, _ []string) error {
					users, err := s.client.Users(s.ctx)
					if err != nil {
						return err
					}
					return printList(s.io.Out, s.output, userView, users)
				}
			}},
		{name: "create", args: "USERNAME [--role ROLE] [--email EMAIL] [--password-stdin]", minArgs: 1, maxArgs: 1,
			summary: "create a local user",
			about: "Creates a local user with a password: read from standard input with --password-stdin (one\n" +
				"line), else asked twice on the terminal. Roles: admin, user, viewer (the server's default: user).\n\n" +
				"  echo \"$PW\" | depot user create alice --email alice@example.com --role user --password-stdin",
			setup: func(set *config.Set) func(*session, []string) error {
				var in NewUser
				var stdin bool
				set.String(&in.Role, "role", "", "admin, user or viewer")
				set.String(&in.Email, "email", "", "the user's email address")
				set.Bool(&stdin, "password-stdin", "", "read the password from the first line of standard input")
				return func(s *session, args []string) error {
					in.Username = args[0]
					pw, err := s.newPassword(stdin)
					if err != nil {
						return err
					}
					in.Password = pw
					u, err := s.client.CreateUser(s.ctx, in)
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, userView, u)
				}
			}},
		{name: "delete", args: "USER...", minArgs: 1, maxArgs: -1, summary: "delete users",
			about: "Deletes users, each named by username or id. Their tokens and sessions stop working.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					users, err := s.client.Users(s.ctx)
					if err != nil {
						return err
					}
					for _, ref := range args {
						id, err := resolve("user", "depot user list", ref, users,
							func(u User) string { return u.ID }, func(u User) string { return u.Username })
						if err != nil {
							return err
						}
						if err := s.client.DeleteUser(s.ctx, id); err != nil {
							return fmt.Errorf("user %s: %w", ref, err)
						}
						s.done("deleted user %s", ref)
					}
					return nil
				}
			}},
		userSwitch(true),
		userSwitch(false),
	},
}

// userSwitch is `depot user disable` (disable true) or `depot user
// enable`: PUT /users/:id {"disabled": ...}.
func userSwitch(disable bool) *command {
	c := &command{name: "enable", args: "USER", minArgs: 1, maxArgs: 1,
		summary: "let a disabled user sign in again",
		about: "Enables a disabled user again, named by username or id (PUT /api/v1/users/:id): its\n" +
			"password works again, and a directory user may sign in again. The API tokens revoked when it\n" +
			"was disabled stay revoked: the user makes new ones.\n\n" +
			"  depot user enable alice"}
	if disable {
		c.name, c.summary = "disable", "end a user's sessions and revoke their API tokens at once"
		c.about = "Disables a user, named by username or id (PUT /api/v1/users/:id). At once, every session\n" +
			"of the user ends and every API token of the user is revoked (deleted), at origins and edges;\n" +
			"the password is refused until an administrator enables the user again (depot user enable),\n" +
			"which restores no token. A directory sign-in or sync does not enable it. Nobody disables\n" +
			"their own account, and the last administrator is not disabled.\n\n" +
			"  depot user disable alice"
	}
	c.setup = func(*config.Set) func(*session, []string) error {
		return func(s *session, args []string) error {
			users, err := s.client.Users(s.ctx)
			if err != nil {
				return err
			}
			id, err := resolve("user", "depot user list", args[0], users,
				func(u User) string { return u.ID }, func(u User) string { return u.Username })
			if err != nil {
				return err
			}
			u, err := s.client.SetUserDisabled(s.ctx, id, disable)
			if err != nil {
				return fmt.Errorf("user %s: %w", args[0], err)
			}
			if s.output == outJSON {
				return printJSON(s.io.Out, u)
			}
			name := clean([]string{u.Value.Username})[0] // the server's text, kept off the terminal's controls
			if disable {
				s.done("disabled user %s: their sessions were ended and their API tokens revoked at once.\n"+
					"They cannot sign in until an administrator runs: depot user enable %s", name, name)
			} else {
				s.done("enabled user %s: they may sign in again. The API tokens revoked when they were\n"+
					"disabled stay revoked: they make new ones.", name)
			}
			return nil
		}
	}
	return c
}

var tokenView = view[Token]{
	columns: []string{"NAME", "SCOPES", "HINT", "EXPIRES", "CREATED", "ID"},
	row: func(t Token) []string {
		exp := whenPtr(t.ExpiresAt, "never")
		if t.Expired {
			exp += " (expired)"
		}
		return []string{t.Name, strings.Join(t.Scopes, ","), t.Hint, exp, when(t.CreatedAt), t.ID}
	},
}

var tokenGroup = &group{name: "token", summary: "list, create and delete your API tokens",
	about: "Manages the caller's own API tokens (/api/v1/users/me/tokens). A token is named by its name\n" +
		"(when no other token has it) or its id. Managing tokens needs a token with the admin scope\n" +
		"(an administrator's depot login has one) or a session.",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "your API tokens",
			about: "Lists the caller's API tokens (the secrets are never shown again; the hint is their start).",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, _ []string) error {
					toks, err := s.client.Tokens(s.ctx)
					if err != nil {
						return err
					}
					return printList(s.io.Out, s.output, tokenView, toks)
				}
			}},
		{name: "create", args: "NAME --scopes SCOPE[,SCOPE...] [--expires DURATION]", minArgs: 1, maxArgs: 1,
			summary: "create an API token; it is shown this once",
			about: "Creates an API token for the caller. Scopes: \"admin\" (everything; administrators only),\n" +
				"\"repository:<read|write|delete|admin>\" (every repository) or\n" +
				"\"repository:<action>:<repository>\" (one). The token is printed this once: keep it now.\n\n" +
				"  depot token create ci --scopes repository:write:js --expires 2160h --output json | jq -r .token",
			setup: func(set *config.Set) func(*session, []string) error {
				var scopes string
				var expires time.Duration
				set.String(&scopes, "scopes", "", "comma-separated scopes")
				set.Duration(&expires, "expires", "", "how long it lasts, e.g. 720h; 0: until revoked")
				return func(s *session, args []string) error {
					in := NewToken{Name: args[0]}
					if scopes != "" {
						in.Scopes = splitList(scopes)
					}
					if expires > 0 {
						at := time.Now().Add(expires).UTC()
						in.ExpiresAt = &at
					}
					t, err := s.client.CreateToken(s.ctx, in)
					if err != nil {
						return err
					}
					if s.output == outJSON {
						return printJSON(s.io.Out, t)
					}
					if err := printItem(s.io.Out, s.output, tokenView, t); err != nil {
						return err
					}
					fmt.Fprintf(s.io.Out, "\ntoken: %s\n", t.Value.Token)
					s.warnf("Keep the token now: it is not shown again.")
					return nil
				}
			}},
		{name: "delete", args: "TOKEN...", minArgs: 1, maxArgs: -1, summary: "revoke API tokens",
			about: "Revokes API tokens of the caller, each named by name or id: they stop working at once.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					toks, err := s.client.Tokens(s.ctx)
					if err != nil {
						return err
					}
					for _, ref := range args {
						id, err := resolve("token", "depot token list", ref, toks,
							func(t Token) string { return t.ID }, func(t Token) string { return t.Name })
						if err != nil {
							return err
						}
						if err := s.client.RevokeToken(s.ctx, id); err != nil {
							return fmt.Errorf("token %s: %w", ref, err)
						}
						s.done("revoked token %s", ref)
						if s.tokenFrom == "config" && id == s.cfg.TokenID {
							s.warnf("That was the token depot login stored: run depot login again.")
						}
					}
					return nil
				}
			}},
	},
}

var edgeView = view[EdgeNode]{
	columns: []string{"NAME", "STATUS", "URL", "REGION", "LAG", "REPOSITORIES", "ID"},
	row: func(e EdgeNode) []string {
		return []string{e.Name, e.Status, e.URL, e.Region, lag(e.Lag), edgeRepos(e), e.ID}
	},
	detail: func(e EdgeNode) [][2]string {
		return [][2]string{{"Name", e.Name}, {"ID", e.ID}, {"URL", e.URL}, {"Region", e.Region}, {"Status", e.Status},
			{"Last contact", whenPtr(e.LastContact, "never")}, {"Lag", lag(e.Lag)}, {"Version", e.Version},
			{"Repositories", edgeRepos(e)}, {"Created", when(e.CreatedAt)}}
	},
}

func lag(n *uint64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatUint(*n, 10)
}

func edgeRepos(e EdgeNode) string {
	names := make([]string, len(e.Repositories))
	for i, r := range e.Repositories {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}

var edgeGroup = &group{name: "edge", summary: "list, register, delete edge nodes and assign them repositories",
	about: "Manages the edge nodes registered on the origins (/api/v1/edge-nodes; administrators only).\n" +
		"A node is named by its name or id; a repository by its name or id. (`depot edge [flags]`,\n" +
		"without one of these commands, runs an edge node: see 'depot help edge'.)",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "the registered edge nodes",
			about: "Lists the registered edge nodes, their status (from their last heartbeat) and repositories.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, _ []string) error {
					nodes, err := s.client.EdgeNodes(s.ctx)
					if err != nil {
						return err
					}
					return printList(s.io.Out, s.output, edgeView, nodes)
				}
			}},
		{name: "show", args: "NODE", minArgs: 1, maxArgs: 1, summary: "one edge node's details",
			about: "Shows an edge node.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					id, err := s.edgeID(args[0])
					if err != nil {
						return err
					}
					e, err := s.client.EdgeNode(s.ctx, id)
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, edgeView, e)
				}
			}},
		{name: "create", args: "NAME URL [--region REGION]", minArgs: 2, maxArgs: 2,
			summary: "register an edge node; its credential is shown this once",
			about: "Registers an edge node: its name and the base URL its clients reach it at. The answer\n" +
				"carries the node's credential, printed this once, with the command that starts the node.\n\n" +
				"  depot edge create near-ci http://10.0.0.5:8081 --region eu-west",
			setup: func(set *config.Set) func(*session, []string) error {
				var region string
				set.String(&region, "region", "", "where it stands, for people (at most 64 characters)")
				return func(s *session, args []string) error {
					e, err := s.client.CreateEdgeNode(s.ctx, NewEdgeNode{Name: args[0], URL: args[1], Region: region})
					if err != nil {
						return err
					}
					if s.output == outJSON {
						return printJSON(s.io.Out, e)
					}
					if err := printItem(s.io.Out, s.output, edgeView, e); err != nil {
						return err
					}
					fmt.Fprintf(s.io.Out, "\ntoken: %s\n", e.Value.Token)
					s.warnf("Keep the credential now: it is not shown again. Start the node with it, e.g.:\n"+
						"  DEPOT_NODE_TOKEN=%s depot edge --origin %s --node-id %s --listen <addr:port> --cache-dir <dir>\n"+
						"and give it repositories: depot edge assign %s <repository>...",
						e.Value.Token, s.url, e.Value.ID, e.Value.Name)
					return nil
				}
			}},
		{name: "delete", args: "NODE...", minArgs: 1, maxArgs: -1, summary: "deregister edge nodes",
			about: "Deregisters edge nodes: their credentials stop working at once.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					for _, ref := range args {
						id, err := s.edgeID(ref)
						if err != nil {
							return err
						}
						if err := s.client.DeleteEdgeNode(s.ctx, id); err != nil {
							return fmt.Errorf("edge node %s: %w", ref, err)
						}
						s.done("deleted edge node %s", ref)
					}
					return nil
				}
			}},
		{name: "assign", args: "NODE REPOSITORY...", minArgs: 2, maxArgs: -1, summary: "give an edge node repositories to serve",
			about: "Gives an edge node repositories to serve (each by name or id); assigning one it has is no error.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					id, err := s.edgeID(args[0])
					if err != nil {
						return err
					}
					e, err := s.client.AssignRepositories(s.ctx, id, args[1:])
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, edgeView, e)
				}
			}},
		{name: "unassign", args: "NODE REPOSITORY", minArgs: 2, maxArgs: 2, summary: "take a repository from an edge node",
			about: "Takes a repository (by name or id) from an edge node, which drops its copy.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					id, err := s.edgeID(args[0])
					if err != nil {
						return err
					}
					e, err := s.client.UnassignRepository(s.ctx, id, args[1])
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, edgeView, e)
				}
			}},
	},
}

// edgeID is the id of the edge node ref names (the API takes ids).
func (s *session) edgeID(ref string) (string, error) {
	nodes, err := s.client.EdgeNodes(s.ctx)
	if err != nil {
		return "", err
	}
	return resolve("edge node", "depot edge list", ref, nodes,
		func(e EdgeNode) string { return e.ID }, func(e EdgeNode) string { return e.Name })
}

var webhookView = view[Webhook]{
	columns: []string{"ID", "URL", "EVENTS", "ACTIVE", "SECRET", "DESCRIPTION"},
	row: func(h Webhook) []string {
		return []string{h.ID, h.URL, strings.Join(h.Events, ","), yesNo(h.Active), yesNo(h.HasSecret), h.Description}
	},
}

var webhookGroup = &group{name: "webhook", summary: "list, create and delete webhooks (administrators)",
	about: "Manages webhooks (/api/v1/webhooks; administrators only): signed HTTP POSTs of events.\n" +
		"A webhook is named by its id, or by its URL when no other webhook has it.",
	cmds: []*command{
		{name: "list", maxArgs: 0, summary: "every webhook",
			about: "Lists every webhook.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, _ []string) error {
					hooks, err := s.client.Webhooks(s.ctx)
					if err != nil {
						return err
					}
					return printList(s.io.Out, s.output, webhookView, hooks)
				}
			}},
		{name: "create", args: "URL --events EVENT[,EVENT...]", minArgs: 1, maxArgs: 1, summary: "create a webhook",
			about: "Creates a webhook delivering the events named (\"*\" for all: artifact.uploaded,\n" +
				"artifact.downloaded, artifact.deleted, repository.created, repository.deleted, user.created, ...)\n" +
				"to URL, signed with the secret when one is given.\n\n" +
				"  depot webhook create https://ci.example.com/hooks/depot --events artifact.uploaded --repository js",
			setup: func(set *config.Set) func(*session, []string) error {
				var events, description, secret, repo, format string
				var inactive bool
				set.String(&events, "events", "", "comma-separated event names, or *")
				set.String(&description, "description", "", "what it is for")
				set.String(&secret, "secret", "", "the secret deliveries are signed with (X-Webhook-Signature)")
				set.String(&repo, "repository", "", "only the events of this repository (name or id)")
				set.String(&format, "format", "", "only the events of repositories of this format")
				set.Bool(&inactive, "inactive", "", "create it switched off")
				return func(s *session, args []string) error {
					in := NewWebhook{URL: args[0], Description: description, Secret: secret}
					if events != "" {
						in.Events = splitList(events)
					}
					if inactive {
						off := false
						in.Active = &off
					}
					if repo != "" || format != "" {
						in.Filters = map[string]any{}
						if repo != "" {
							in.Filters["repository_id"] = repo
						}
						if format != "" {
							in.Filters["format"] = format
						}
					}
					h, err := s.client.CreateWebhook(s.ctx, in)
					if err != nil {
						return err
					}
					return printItem(s.io.Out, s.output, webhookView, h)
				}
			}},
		{name: "delete", args: "WEBHOOK...", minArgs: 1, maxArgs: -1, summary: "delete webhooks",
			about: "Deletes webhooks, each named by id or URL; their pending deliveries are dropped.",
			setup: func(*config.Set) func(*session, []string) error {
				return func(s *session, args []string) error {
					hooks, err := s.client.Webhooks(s.ctx)
					if err != nil {
						return err
					}
					for _, ref := range args {
						id, err := resolve("webhook", "depot webhook list", ref, hooks,
							func(h Webhook) string { return h.ID }, func(h Webhook) string { return h.URL })
						if err != nil {
							return err
						}
						if err := s.client.DeleteWebhook(s.ctx, id); err != nil {
							return fmt.Errorf("webhook %s: %w", ref, err)
						}
						s.done("deleted webhook %s", ref)
					}
					return nil
				}
			}},
	},
}

// done reports a change that answers nothing to print: a line in table
// output, nothing in JSON output (the API answered no body).
func (s *session) done(format string, args ...any) {
	if s.output == outTable {
		fmt.Fprintf(s.io.Out, format+"\n", args...)
	}
}

// newPassword is a new user's password: the first line of standard input,
// or asked twice on the terminal.
func (s *session) newPassword(stdin bool) (string, error) {
	pw, err := s.readSecret("Password: ", stdin)
	if err != nil || stdin {
		return pw, err
	}
	again, err := s.readSecret("Password again: ", false)
	if err != nil {
		return "", err
	}
	if pw != again {
		return "", usageError("the two passwords differ")
	}
	return pw, nil
}

// splitList splits a comma-separated flag, spaces around items dropped.
func splitList(v string) []string {
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}
