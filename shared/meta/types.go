package meta

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/depot-registry/depot/shared/blob"
)

// Domain sentinels. Stores return these (wrapped with a message); the
// transports map them to status codes.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")

	// ErrLastAdmin refuses a delete or demotion that would leave no
	// administrator.
	ErrLastAdmin = fmt.Errorf("%w: cannot remove the last administrator", ErrConflict)
)

// NotFoundf wraps ErrNotFound with a message meant for the client.
func NotFoundf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFound}, args...)...)
}

// Conflictf wraps ErrConflict with a message meant for the client.
func Conflictf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrConflict}, args...)...)
}

// Role is a built-in user role.
type Role string

// The three built-in roles.
const (
	RoleAdmin  Role = "admin"
	RoleUser   Role = "user"
	RoleViewer Role = "viewer"
)

// Valid reports whether r is a built-in role.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleUser || r == RoleViewer }

// User is an account. PasswordHash never leaves the process.
type User struct {
	ID                 string    `json:"id"`
	Username           string    `json:"username"`
	Email              string    `json:"email"`
	Role               Role      `json:"role"`
	PasswordHash       string    `json:"password_hash,omitempty"`
	MustChangePassword bool      `json:"must_change_password,omitempty"`
	Source             string    `json:"source,omitempty"` // local (default), ldap, oidc
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

// Group is a named set of users that permissions can be granted to.
type Group struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Members     []string  `json:"members"` // user ids, sorted
	CreatedAt   time.Time `json:"created_at"`
}

// Repository actions, ordered by power; see Implies.
const (
	ActionRead   = "read"
	ActionWrite  = "write"
	ActionDelete = "delete"
	ActionAdmin  = "admin"
)

// Actions lists the repository actions in a stable order.
var Actions = []string{ActionRead, ActionWrite, ActionDelete, ActionAdmin}

// ValidAction reports whether a is a repository action.
func ValidAction(a string) bool {
	for _, x := range Actions {
		if x == a {
			return true
		}
	}
	return false
}

// Implies reports whether holding granted lets one do want: admin implies
// everything, write and delete imply read.
func Implies(granted, want string) bool {
	switch {
	case granted == want, granted == ActionAdmin:
		return true
	case want == ActionRead:
		return granted == ActionWrite || granted == ActionDelete
	}
	return false
}

// Permission grants actions on one repository to a user or a group.
type Permission struct {
	ID           string    `json:"id"`
	RepositoryID string    `json:"repository_id"`
	UserID       string    `json:"user_id,omitempty"`
	GroupID      string    `json:"group_id,omitempty"`
	Permissions  []string  `json:"permissions"`
	CreatedAt    time.Time `json:"created_at"`
}

// Token is an API token. Only the hash of its secret is kept.
type Token struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Hash      string     `json:"hash"`
	Hint      string     `json:"hint"` // the first characters of the secret, to recognise it in a list
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// Expired reports whether the token has expired at now.
func (t *Token) Expired(now time.Time) bool {
	return t.ExpiresAt != nil && !now.Before(*t.ExpiresAt)
}

// Session is one login: its access and refresh tokens carry its id, and
// revoking it (logout) stops both.
type Session struct {
	ID        string     `json:"id"`
	UserID    string     `json:"user_id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Active reports whether the session can still authenticate at now.
func (s *Session) Active(now time.Time) bool {
	return s.RevokedAt == nil && now.Before(s.ExpiresAt)
}

// Repository holds artifacts of one format.
type Repository struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Format        string            `json:"format"`
	Description   string            `json:"description"`
	Public        bool              `json:"public"`
	Settings      map[string]string `json:"settings,omitempty"`
	CreatedBy     string            `json:"created_by,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`
	ArtifactCount int64             `json:"artifact_count"`
	SizeBytes     int64             `json:"size_bytes"`
}

// Artifact is one stored file. Path is unique within its repository and is
// chosen by the format (generic: package/version/filename).
type Artifact struct {
	ID           string         `json:"id"`
	RepositoryID string         `json:"repository_id"`
	Path         string         `json:"path"`
	PackageName  string         `json:"package_name"`
	Version      string         `json:"version"`
	Format       string         `json:"format"`
	SizeBytes    int64          `json:"size_bytes"`
	Digest       string         `json:"digest"` // blob address
	Checksums    blob.Checksums `json:"checksums"`
	ContentType  string         `json:"content_type,omitempty"`
	UploadedAt   time.Time      `json:"uploaded_at"`
	UploadedBy   string         `json:"uploaded_by"`
	UploaderID   string         `json:"uploader_id,omitempty"`
	// Attrs is the format's own record of the file (an npm version
	// manifest, a wheel's metadata, an OCI media type...), opaque here.
	Attrs json.RawMessage `json:"attrs,omitempty"`
	// Refs are other blobs this artifact needs (a wheel's extracted
	// METADATA): garbage collection keeps them as long as the artifact.
	Refs []string `json:"refs,omitempty"`
}

// KVOp sets (Value non-empty) or deletes (Value empty) one key of a
// repository's format keyspace: the state a format keeps beside its
// artifacts (tags, dist-tags, blob links...).
type KVOp struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value,omitempty"`
}

// KVPair is one entry of a repository's format keyspace.
type KVPair struct {
	Key   string
	Value json.RawMessage
}

// PackageSummary is one package of a repository, aggregated over versions.
type PackageSummary struct {
	Name           string    `json:"name"`
	RepositoryID   string    `json:"repository_id"`
	Format         string    `json:"format"`
	LatestVersion  string    `json:"latest_version"`
	VersionCount   int       `json:"version_count"`
	TotalSizeBytes int64     `json:"total_size_bytes"`
	LastUpdated    time.Time `json:"last_updated"`
}

// VersionSummary is one version of a package. ArtifactID is its first file.
type VersionSummary struct {
	Version      string    `json:"version"`
	ArtifactID   string    `json:"artifact_id"`
	RepositoryID string    `json:"repository_id"`
	SizeBytes    int64     `json:"size_bytes"`
	UploadedAt   time.Time `json:"uploaded_at"`
	FileCount    int       `json:"file_count"`
}

// Stats are totals over the whole store.
type Stats struct {
	Repositories   int64 `json:"repositories"`
	Artifacts      int64 `json:"artifacts"`
	TotalSizeBytes int64 `json:"total_size_bytes"`
	Users          int64 `json:"users"`
}
