package format

import (
	"time"

	"github.com/depot-registry/depot/shared/blob"
	"github.com/depot-registry/depot/shared/meta"
)

// ArtifactView is the JSON shape of an artifact, the same on the REST API
// and on upload answers of formats that answer JSON.
type ArtifactView struct {
	ID             string         `json:"id"`
	RepositoryID   string         `json:"repository_id"`
	RepositoryName string         `json:"repository_name"`
	PackageName    string         `json:"package_name"`
	Version        string         `json:"version"`
	Path           string         `json:"path"`
	Format         string         `json:"format"`
	SizeBytes      int64          `json:"size_bytes"`
	ContentType    string         `json:"content_type"`
	Checksums      blob.Checksums `json:"checksums"`
	UploadedAt     time.Time      `json:"uploaded_at"`
	UploadedBy     string         `json:"uploaded_by"`
	// Properties are the artifact's key → values metadata ({} when none).
	Properties map[string][]string `json:"properties"`
}

// ViewArtifact renders a for clients.
func ViewArtifact(a *meta.Artifact, repoName string) ArtifactView {
	v := ArtifactView{ID: a.ID, RepositoryID: a.RepositoryID, RepositoryName: repoName, PackageName: a.PackageName,
		Version: a.Version, Path: a.Path, Format: a.Format, SizeBytes: a.SizeBytes, ContentType: a.ContentType,
		Checksums: a.Checksums, UploadedAt: a.UploadedAt, UploadedBy: a.UploadedBy, Properties: a.Properties}
	if v.Properties == nil {
		v.Properties = map[string][]string{}
	}
	return v
}
