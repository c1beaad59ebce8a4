// Package settings is the registry of the settings an administrator
// changes at run time (GET and PUT /api/v1/admin/settings): each one's
// key, type, bounds, default and the startup flag that may fix it. The
// values set are replicated records (meta.KindSetting), so every origin
// and edge applies a change without a restart; a setting whose flag or
// environment variable an origin was started with is fixed there, shown
// as such and refused by PUT, for the flag is what the operator wrote
// down.
package settings

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/depot-registry/depot/shared/meta"
)

// Values are the settings' effective values, one field per setting, its
// key the field's json tag.
type Values struct {
	UsersCreateRepositories bool   `json:"repositories.users_create"`
	DefaultPublic           bool   `json:"repositories.default_public"`
	RateLimitAPI            int64  `json:"rate_limit.api"`
	RateLimitLogin          int64  `json:"rate_limit.login"`
	RateLimitWindowSeconds  int64  `json:"rate_limit.window_seconds"`
	WebhooksEnabled         bool   `json:"webhooks.enabled"`
	WebhookTimeoutSeconds   int64  `json:"webhooks.timeout_seconds"`
	WebhookMaxRetries       int64  `json:"webhooks.max_retries"`
	WebhookRetryBackoff     string `json:"webhooks.retry_backoff"`
	WebhookRateLimit        int64  `json:"webhooks.rate_limit"`
	BackupIntervalHours     int64  `json:"backups.interval_hours"`
	BackupKeep              int64  `json:"backups.keep"`
	BackupIncludeArtifacts  bool   `json:"backups.include_artifacts"`
	BackupExportDirectory   string `json:"backups.export_directory"`
	RetentionIntervalHours  int64  `json:"retention.interval_hours"`
	RetentionKeepLast       int64  `json:"retention.keep_last"`
	RetentionOlderThanDays  int64  `json:"retention.older_than_days"`
	RetentionDownloadedDays int64  `json:"retention.keep_downloaded_days"`
	ScanOnUpload            bool   `json:"security.scan_on_upload"`
	AdvisoriesDirectory     string `json:"security.advisories_directory"`
}

// Retention is the rule of repositories without one of their own.
func (v Values) Retention() meta.Retention {
	return meta.Retention{KeepLast: int(v.RetentionKeepLast), OlderThanDays: int(v.RetentionOlderThanDays),
		KeepDownloadedDays: int(v.RetentionDownloadedDays)}
}

// RateWindow is the rate limits' window.
func (v Values) RateWindow() time.Duration {
	return time.Duration(v.RateLimitWindowSeconds) * time.Second
}

// Def describes one setting.
type Def struct {
	Key string
	// Flag is the startup flag (with its environment variable) that
	// fixes it on an origin started with it; "" none.
	Flag     string
	Doc      string
	Min, Max int64    // integers
	Enum     []string // strings: the values allowed
	Path     bool     // a string that is an absolute directory, or empty
}

// Defs are the settings, in the order they are listed.
var Defs = []Def{
	{Key: "repositories.users_create", Flag: "users-create-repos", Doc: "users with role 'user' may create repositories (administrators always may)"},
	{Key: "repositories.default_public", Doc: "a repository created without saying 'public' is public (readable by anyone, signed in or not)"},
	{Key: "rate_limit.api", Flag: "rate-limit", Min: 0, Max: 1_000_000_000, Doc: "API requests allowed per client per window (0 = unlimited)"},
	{Key: "rate_limit.login", Flag: "rate-limit-login", Min: 1, Max: 1_000_000, Doc: "login attempts allowed per client and username per window"},
	{Key: "rate_limit.window_seconds", Flag: "rate-limit-window", Min: 1, Max: 86_400, Doc: "the rate limits' window, in seconds"},
	{Key: "webhooks.enabled", Flag: "webhooks-enabled", Doc: "deliver events to webhooks (events are logged either way)"},
	{Key: "webhooks.timeout_seconds", Flag: "webhook-timeout", Min: 1, Max: 600, Doc: "a delivery succeeds on a 2xx answer within this many seconds"},
	{Key: "webhooks.max_retries", Flag: "webhook-max-retries", Min: 0, Max: 100, Doc: "retries after a failed delivery (given up 24 hours after its event in any case)"},
	{Key: "webhooks.retry_backoff", Flag: "webhook-retry-backoff", Enum: []string{"exponential", "linear"}, Doc: "retry schedule: exponential (1m, 5m, 30m, 2h, 6h) or linear (1m, 2m, 3m...)"},
	{Key: "webhooks.rate_limit", Flag: "webhook-rate-limit", Min: 0, Max: 1_000_000, Doc: "delivery attempts per webhook per minute (0 = unlimited)"},
	{Key: "backups.interval_hours", Min: 0, Max: 8760, Doc: "a scheduled backup is made this many hours after the last one (0 = none scheduled)"},
	{Key: "backups.keep", Min: 1, Max: 1000, Doc: "scheduled backups kept: older ones are deleted (backups asked for by hand are kept until deleted)"},
	{Key: "backups.include_artifacts", Doc: "scheduled backups hold every file, not only the metadata"},
	{Key: "backups.export_directory", Path: true, Doc: "an absolute directory (a mounted share, say) where the origin that makes a backup also writes a copy of its archive (empty: none)"},
	{Key: "retention.interval_hours", Min: 0, Max: 8760, Doc: "the leader applies the retention rules this many hours after the last run (0 = only on POST /admin/cleanup)"},
	{Key: "retention.keep_last", Min: 0, Max: 1_000_000, Doc: "default rule of repositories without their own: keep the newest N versions of each package (0 = any number)"},
	{Key: "retention.older_than_days", Min: 0, Max: meta.MaxRetentionDays, Doc: "default rule: delete only versions uploaded more than this many days ago (0 = any age)"},
	{Key: "retention.keep_downloaded_days", Min: 0, Max: meta.MaxRetentionDays, Doc: "default rule: keep versions downloaded in the last this many days (0 = downloads not considered)"},
	{Key: "security.advisories_directory", Path: true, Doc: "an absolute directory the leader loads OSV advisories from (*.json and *.zip files, read again when they change), as if uploaded (empty: none)"},
	{Key: "security.scan_on_upload", Doc: "scan each upload for known vulnerabilities, in repositories whose scan_on_upload setting does not say otherwise"},
}

// Lookup finds a setting by key.
func Lookup(key string) (Def, bool) {
	i := slices.IndexFunc(Defs, func(d Def) bool { return d.Key == key })
	if i < 0 {
		return Def{}, false
	}
	return Defs[i], true
}

// field is the field of v holding key's value.
func field(v *Values, key string) reflect.Value {
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		if rv.Type().Field(i).Tag.Get("json") == key {
			return rv.Field(i)
		}
	}
	panic("settings: no field for " + key)
}

// Get is key's value in v.
func (v Values) Get(key string) any { return field(&v, key).Interface() }

// Type names a setting's JSON type: boolean, integer, string (one of
// Enum) or path.
func (d Def) Type() string {
	var v Values
	switch field(&v, d.Key).Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int64:
		return "integer"
	}
	if d.Path {
		return "path"
	}
	return "string"
}

// Check decodes and validates raw as d's value, answering a message for
// the caller when it is not one.
func (d Def) Check(raw json.RawMessage) (any, error) {
	switch d.Type() {
	case "boolean":
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, fmt.Errorf("%s must be true or false", d.Key)
		}
		return b, nil
	case "integer":
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil || n < d.Min || n > d.Max {
			return nil, fmt.Errorf("%s must be an integer from %d to %d", d.Key, d.Min, d.Max)
		}
		return n, nil
	}
	var s string
	if d.Path {
		if err := json.Unmarshal(raw, &s); err != nil || len(s) > 4096 || s != "" && (!filepath.IsAbs(s) || filepath.Clean(s) != s) {
			return nil, fmt.Errorf("%s must be an absolute, clean directory path, or empty", d.Key)
		}
		return s, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil || !slices.Contains(d.Enum, s) {
		return nil, fmt.Errorf("%s must be one of %s", d.Key, strings.Join(d.Enum, ", "))
	}
	return s, nil
}

// set puts a checked value into v.
func set(v *Values, key string, x any) { field(v, key).Set(reflect.ValueOf(x)) }

// Source is where a node's settings come from besides the store: the
// values its flags and environment gave (or their defaults), which are
// the settings' defaults there, and which of them were given (key -> the
// flag or variable named, e.g. "--rate-limit" or "RATE_LIMIT_API"): those
// are fixed.
type Source struct {
	Startup Values
	Fixed   map[string]string
}

// Effective is what applies: a fixed setting's startup value, else the
// value stored (when it is still valid), else the startup value.
func (s Source) Effective(stored map[string]meta.Setting) Values {
	v := s.Startup
	for _, d := range Defs {
		if _, fixed := s.Fixed[d.Key]; fixed {
			continue
		}
		if st, ok := stored[d.Key]; ok {
			if x, err := d.Check(st.Value); err == nil {
				set(&v, d.Key, x)
			}
		}
	}
	return v
}

// Row is one setting as GET /admin/settings shows it.
type Row struct {
	Key         string   `json:"key"`
	Type        string   `json:"type"`
	Value       any      `json:"value"`
	Default     any      `json:"default"`
	Source      string   `json:"source"` // default, settings, flag or environment
	FixedBy     string   `json:"fixed_by,omitempty"`
	Description string   `json:"description"`
	Min         *int64   `json:"min,omitempty"`
	Max         *int64   `json:"max,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	// UpdatedBy and UpdatedAt say who last set a stored value, and when.
	UpdatedBy string     `json:"updated_by,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// Rows lists every setting with its value and where it comes from.
func (s Source) Rows(stored map[string]meta.Setting) []Row {
	eff := s.Effective(stored)
	out := make([]Row, 0, len(Defs))
	for _, d := range Defs {
		r := Row{Key: d.Key, Type: d.Type(), Value: eff.Get(d.Key), Default: s.Startup.Get(d.Key), Source: "default",
			Description: d.Doc, Enum: d.Enum}
		if r.Type == "integer" {
			r.Min, r.Max = &d.Min, &d.Max
		}
		if st, ok := stored[d.Key]; ok {
			at := st.UpdatedAt
			r.Source, r.UpdatedBy, r.UpdatedAt = "settings", st.UpdatedBy, &at
		}
		if by, fixed := s.Fixed[d.Key]; fixed {
			r.Source, r.FixedBy = "environment", by
			if strings.HasPrefix(by, "--") {
				r.Source = "flag"
			}
		}
		out = append(out, r)
	}
	return out
}
