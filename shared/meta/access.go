package meta

import (
	"slices"
	"strings"
)

// Which repositories a caller may read, from indexes: listings check
// access on a thousand repositories without decoding a thousand records.

// RepoIDs lists every repository id, sorted (keys only).
func (tx *Tx) RepoIDs() []string {
	var ids []string
	cur := tx.space(Space(KindRepo)).Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		ids = append(ids, string(k))
	}
	return ids
}

// PublicRepoIDs lists the ids of the public repositories, sorted.
func (tx *Tx) PublicRepoIDs() []string { return tx.prefixKeys(bPublicRepos, "") }

// GrantedRepoIDs lists, sorted, the repositories on which the user or
// one of its groups holds a permission that implies action.
func (tx *Tx) GrantedRepoIDs(userID, action string) ([]string, error) {
	groups, err := tx.GroupsOf(userID)
	if err != nil {
		return nil, err
	}
	subjects := []string{userSubject(userID)}
	for _, g := range groups {
		subjects = append(subjects, groupSubject(g))
	}
	var out []string
	for _, s := range subjects {
		for _, k := range tx.prefixKeys(bPermSubject, key(s, "")) {
			repo, id, _ := strings.Cut(k, "\x00")
			p, err := tx.Permission(id)
			if err != nil {
				return nil, err
			}
			if slices.ContainsFunc(p.Permissions, func(have string) bool { return Implies(have, action) }) {
				out = append(out, repo)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// buildPublicRepos fills bPublicRepos from the repository records.
func buildPublicRepos(tx *Tx) error {
	return tx.scan(Space(KindRepo), "", func(id string, raw []byte) error {
		_, r, err := decodePair[Repository](nil, raw)
		if err != nil || !r.Public {
			return err
		}
		return tx.setKey(bPublicRepos, id)
	})
}

// RepoIDsByName lists every repository id in the order of the
// repositories' names (keys of the name index only).
func (tx *Tx) RepoIDsByName() ([]string, error) {
	var ids []string
	err := tx.scan(SpaceRepoNames, "", func(_ string, id []byte) error {
		ids = append(ids, string(id))
		return nil
	})
	return ids, err
}
