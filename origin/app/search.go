package app

import (
	"context"
	"strings"

	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/auth"
	"github.com/depot-registry/depot/shared/format"
	"github.com/depot-registry/depot/shared/meta"
)

// maxChecksumResults bounds a checksum search's answer (the same bytes
// stored in that many places is a rarity).
const maxChecksumResults = 1000

// checksumAlgorithm is the algorithm a hex checksum of that length is.
func checksumAlgorithm(hex string) (string, bool) {
	for _, r := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return "", false
		}
	}
	switch len(hex) {
	case 32:
		return "md5", true
	case 40:
		return "sha1", true
	case 64:
		return "sha256", true
	}
	return "", false
}

// SearchChecksum finds the artifacts p may read whose MD5, SHA-1 or
// SHA-256 (told apart by the checksum's length) is checksum, exactly: the
// algorithm and the artifacts, with their repositories' names.
func (a *App) SearchChecksum(_ context.Context, p *auth.Principal, checksum string) (string, []format.ArtifactView, error) {
	algo, ok := checksumAlgorithm(checksum)
	if !ok {
		return "", nil, apierr.Invalid("checksum", "checksum must be an MD5 (32), SHA-1 (40) or SHA-256 (64) in hexadecimal")
	}
	out := []format.ArtifactView{}
	err := a.view(func(tx *meta.Tx) error {
		readable := map[string]*meta.Repository{}
		for _, id := range tx.ArtifactsByChecksum(algo, checksum, maxChecksumResults) {
			art, err := tx.Artifact(id)
			if err != nil {
				continue // deleted in between: not found
			}
			repo, seen := readable[art.RepositoryID]
			if !seen {
				repo, _ = RepoAccess(tx, p, art.RepositoryID, meta.ActionRead)
				readable[art.RepositoryID] = repo
			}
			if repo != nil {
				out = append(out, format.ViewArtifact(art, repo.Name))
			}
		}
		return nil
	})
	return algo, out, err
}
