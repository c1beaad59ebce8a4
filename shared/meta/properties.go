package meta

import (
	"slices"
	"strings"
)

// Properties: an artifact's own key → values metadata, as Artifactory
// keeps it ("build.number": ["42"]), set by people and tools through the
// API and carried over by migrations. Kept in the artifact's record, so
// they replicate with it and go when it goes (a file uploaded again at
// the same path starts without them).

const CmdArtifactProperties CmdType = 58

func init() {
	declareCommand(CmdArtifactProperties, func() Command { return new(ArtifactProperties) })
}

// Bounds of an artifact's properties.
const (
	MaxProperties        = 128  // keys
	MaxPropertyKey       = 255  // bytes
	MaxPropertyValues    = 100  // values of one key
	MaxPropertyValue     = 2400 // bytes of one value
	MaxPropertiesEncoded = 64 << 10
)

// ArtifactProperties changes artifact ID's properties: with Replace they
// become Set; otherwise each key of Set is replaced by its values and
// each key of Remove removed. The result is checked against the bounds
// (CheckProperties) when applied, so two changes applied one after the
// other cannot add up past them.
type ArtifactProperties struct {
	ID      string              `json:"id"`
	RepoID  string              `json:"repo_id"`
	Replace bool                `json:"replace,omitempty"`
	Set     map[string][]string `json:"set,omitempty"`
	Remove  []string            `json:"remove,omitempty"`
}

func (*ArtifactProperties) Type() CmdType   { return CmdArtifactProperties }
func (c *ArtifactProperties) Scope() string { return c.RepoID }

func (c *ArtifactProperties) apply(tx *Tx) error {
	a, err := tx.Artifact(c.ID)
	if err != nil {
		return err
	}
	if a.RepositoryID != c.RepoID {
		return NotFoundf("artifact %s", c.ID)
	}
	props := map[string][]string{}
	if !c.Replace {
		for k, v := range a.Properties {
			props[k] = v
		}
	}
	for _, k := range c.Remove {
		delete(props, k)
	}
	for k, v := range c.Set {
		props[k] = v
	}
	if err := CheckProperties(props); err != nil {
		return err
	}
	if len(props) == 0 {
		props = nil
	}
	a.Properties = props
	return tx.putRec(KindArtifact, a.ID, a)
}

// CheckProperties refuses properties out of bounds: keys of letters,
// digits and . _ - : only, values without control characters.
func CheckProperties(props map[string][]string) error {
	if len(props) > MaxProperties {
		return Invalidf("%d properties: at most %d", len(props), MaxProperties)
	}
	total := 0
	for k, vs := range props {
		if err := checkPropertyKey(k); err != nil {
			return err
		}
		if len(vs) > MaxPropertyValues {
			return Invalidf("property %s has %d values: at most %d", k, len(vs), MaxPropertyValues)
		}
		total += len(k)
		for _, v := range vs {
			if len(v) > MaxPropertyValue {
				return Invalidf("a value of property %s is %d bytes: at most %d", k, len(v), MaxPropertyValue)
			}
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				return Invalidf("a value of property %s has a control character", k)
			}
			total += len(v) + 4
		}
	}
	if total > MaxPropertiesEncoded {
		return Invalidf("properties of %d bytes: at most %d", total, MaxPropertiesEncoded)
	}
	return nil
}

func checkPropertyKey(k string) error {
	if k == "" || len(k) > MaxPropertyKey {
		return Invalidf("a property key is 1 to %d bytes", MaxPropertyKey)
	}
	ok := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:", r)
	}
	if i := strings.IndexFunc(k, func(r rune) bool { return !ok(r) }); i >= 0 {
		return Invalidf("property key %q: only letters, digits and . _ - : are allowed", k)
	}
	return nil
}

// SameProperties reports whether two sets of properties are the same
// (values in order).
func SameProperties(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !slices.Equal(v, w) {
			return false
		}
	}
	return true
}
