package meta

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"
)

// CmdType identifies a command on the wire. Append only: a number, once
// used, keeps its meaning forever, because old log entries are replayed.
type CmdType uint16

// Command types.
const (
	CmdUserCreate       CmdType = 1
	CmdUserUpdate       CmdType = 2
	CmdUserDelete       CmdType = 3
	CmdTokenCreate      CmdType = 4
	CmdTokenRevoke      CmdType = 5
	CmdSessionCreate    CmdType = 6
	CmdSessionRevoke    CmdType = 7
	CmdGroupCreate      CmdType = 8
	CmdGroupAddMembers  CmdType = 9
	CmdPermissionCreate CmdType = 10
	CmdPermissionDelete CmdType = 11
	CmdRepoCreate       CmdType = 12
	CmdRepoUpdate       CmdType = 13
	CmdRepoDelete       CmdType = 14
	CmdArtifactPut      CmdType = 15
	CmdArtifactDelete   CmdType = 16
	CmdSessionPurge     CmdType = 17
	CmdKVApply          CmdType = 18
	CmdArtifactsApply   CmdType = 19
)

// wireVersion is the first byte of every encoded command. A future change
// of the envelope gets a new version; Decode keeps reading the old ones.
const wireVersion byte = 1

// Command is a metadata change. Payloads carry everything Apply needs,
// including ids and timestamps, so applying is deterministic.
type Command interface {
	Type() CmdType
}

// UserCreate adds a user; the username must be free.
type UserCreate struct {
	User User `json:"user"`
}

// UserUpdate changes the given fields of a user. When RevokeSessions is set
// every session of the user but KeepSession is revoked (password change).
type UserUpdate struct {
	ID                 string    `json:"id"`
	Email              *string   `json:"email,omitempty"`
	PasswordHash       *string   `json:"password_hash,omitempty"`
	Role               *Role     `json:"role,omitempty"`
	MustChangePassword *bool     `json:"must_change_password,omitempty"`
	RevokeSessions     bool      `json:"revoke_sessions,omitempty"`
	KeepSession        string    `json:"keep_session,omitempty"`
	At                 time.Time `json:"at"`
}

// UserDelete removes a user with its tokens, sessions, grants and group
// memberships.
type UserDelete struct {
	ID string `json:"id"`
}

// TokenCreate stores a new API token (its hash).
type TokenCreate struct {
	Token Token `json:"token"`
}

// TokenRevoke deletes a token of a user.
type TokenRevoke struct {
	ID     string `json:"id"`
	UserID string `json:"user_id"`
}

// SessionCreate records a login.
type SessionCreate struct {
	Session Session `json:"session"`
}

// SessionRevoke ends a session (logout).
type SessionRevoke struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

// SessionPurge drops sessions that expired before Before.
type SessionPurge struct {
	Before time.Time `json:"before"`
}

// GroupCreate adds a group; its name must be free.
type GroupCreate struct {
	Group Group `json:"group"`
}

// GroupAddMembers adds existing users to a group (idempotent).
type GroupAddMembers struct {
	GroupID string   `json:"group_id"`
	UserIDs []string `json:"user_ids"`
}

// PermissionCreate grants actions on a repository.
type PermissionCreate struct {
	Permission Permission `json:"permission"`
}

// PermissionDelete revokes a grant.
type PermissionDelete struct {
	ID string `json:"id"`
}

// RepoCreate adds a repository. When CreatorGrant is set it is stored with
// the repository, in the same transaction (the creator's admin grant).
type RepoCreate struct {
	Repo         Repository  `json:"repo"`
	CreatorGrant *Permission `json:"creator_grant,omitempty"`
}

// RepoUpdate changes the given fields of a repository.
type RepoUpdate struct {
	ID          string            `json:"id"`
	Description *string           `json:"description,omitempty"`
	Public      *bool             `json:"public,omitempty"`
	Settings    map[string]string `json:"settings,omitempty"`
	At          time.Time         `json:"at"`
}

// RepoDelete removes a repository, its artifacts and its grants.
type RepoDelete struct {
	ID string `json:"id"`
}

// ArtifactPut records an artifact whose blob is already durable. An
// artifact at the same path is a conflict unless Replace is set. KV ops of
// the artifact's repository apply in the same transaction.
type ArtifactPut struct {
	Artifact Artifact `json:"artifact"`
	Replace  bool     `json:"replace,omitempty"`
	KV       []KVOp   `json:"kv,omitempty"`
}

// ArtifactDelete removes the metadata of artifact ID and of IDs (all of
// one repository, or the command is refused), then applies KV ops to
// RepoID (which must be set when KV is).
type ArtifactDelete struct {
	ID     string   `json:"id,omitempty"`
	IDs    []string `json:"ids,omitempty"`
	RepoID string   `json:"repo_id,omitempty"`
	KV     []KVOp   `json:"kv,omitempty"`
}

// ArtifactsApply changes several artifacts of one repository and its
// format keyspace at once: Drop removes artifacts (by id), then each of Put
// is stored, replacing whatever is at its path, then KV applies. Formats
// whose one client action touches several records (an OCI tag moving from
// one manifest to another) stay a single command.
type ArtifactsApply struct {
	RepoID string     `json:"repo_id"`
	Drop   []string   `json:"drop,omitempty"`
	Put    []Artifact `json:"put,omitempty"`
	KV     []KVOp     `json:"kv,omitempty"`
}

// KVApply changes a repository's format keyspace.
type KVApply struct {
	RepoID string `json:"repo_id"`
	Ops    []KVOp `json:"ops"`
}

// Type implementations.
func (UserCreate) Type() CmdType       { return CmdUserCreate }
func (UserUpdate) Type() CmdType       { return CmdUserUpdate }
func (UserDelete) Type() CmdType       { return CmdUserDelete }
func (TokenCreate) Type() CmdType      { return CmdTokenCreate }
func (TokenRevoke) Type() CmdType      { return CmdTokenRevoke }
func (SessionCreate) Type() CmdType    { return CmdSessionCreate }
func (SessionRevoke) Type() CmdType    { return CmdSessionRevoke }
func (SessionPurge) Type() CmdType     { return CmdSessionPurge }
func (GroupCreate) Type() CmdType      { return CmdGroupCreate }
func (GroupAddMembers) Type() CmdType  { return CmdGroupAddMembers }
func (PermissionCreate) Type() CmdType { return CmdPermissionCreate }
func (PermissionDelete) Type() CmdType { return CmdPermissionDelete }
func (RepoCreate) Type() CmdType       { return CmdRepoCreate }
func (RepoUpdate) Type() CmdType       { return CmdRepoUpdate }
func (RepoDelete) Type() CmdType       { return CmdRepoDelete }
func (ArtifactPut) Type() CmdType      { return CmdArtifactPut }
func (ArtifactDelete) Type() CmdType   { return CmdArtifactDelete }
func (KVApply) Type() CmdType          { return CmdKVApply }
func (ArtifactsApply) Type() CmdType   { return CmdArtifactsApply }

// newPayload returns an empty payload for a type; unknown types are nil.
func newPayload(t CmdType) Command {
	switch t {
	case CmdUserCreate:
		return &UserCreate{}
	case CmdUserUpdate:
		return &UserUpdate{}
	case CmdUserDelete:
		return &UserDelete{}
	case CmdTokenCreate:
		return &TokenCreate{}
	case CmdTokenRevoke:
		return &TokenRevoke{}
	case CmdSessionCreate:
		return &SessionCreate{}
	case CmdSessionRevoke:
		return &SessionRevoke{}
	case CmdSessionPurge:
		return &SessionPurge{}
	case CmdGroupCreate:
		return &GroupCreate{}
	case CmdGroupAddMembers:
		return &GroupAddMembers{}
	case CmdPermissionCreate:
		return &PermissionCreate{}
	case CmdPermissionDelete:
		return &PermissionDelete{}
	case CmdRepoCreate:
		return &RepoCreate{}
	case CmdRepoUpdate:
		return &RepoUpdate{}
	case CmdRepoDelete:
		return &RepoDelete{}
	case CmdArtifactPut:
		return &ArtifactPut{}
	case CmdArtifactDelete:
		return &ArtifactDelete{}
	case CmdKVApply:
		return &KVApply{}
	case CmdArtifactsApply:
		return &ArtifactsApply{}
	}
	return nil
}

// Encode renders a command for the log: version byte, big-endian uint16
// type, JSON payload.
func Encode(c Command) ([]byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 3, 3+len(body))
	out[0] = wireVersion
	binary.BigEndian.PutUint16(out[1:3], uint16(c.Type()))
	return append(out, body...), nil
}

// Decode parses an encoded command. An unknown version or type is an
// error; the state machine treats it as fatal, because skipping a command
// would fork this replica from the others.
func Decode(b []byte) (Command, error) {
	if len(b) < 3 {
		return nil, fmt.Errorf("meta: command too short (%d bytes)", len(b))
	}
	if b[0] != wireVersion {
		return nil, fmt.Errorf("meta: unknown command wire version %d", b[0])
	}
	t := CmdType(binary.BigEndian.Uint16(b[1:3]))
	c := newPayload(t)
	if c == nil {
		return nil, fmt.Errorf("meta: unknown command type %d", t)
	}
	if err := json.Unmarshal(b[3:], c); err != nil {
		return nil, fmt.Errorf("meta: command %d: %w", t, err)
	}
	return c, nil
}
