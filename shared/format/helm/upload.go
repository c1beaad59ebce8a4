package helm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/depot-registry/depot/shared/format"
)

const (
	maxChartYAML = 256 << 10
	maxRecord    = 64 << 10 // what a chart version's record (and its index.yaml entry) keeps
	maxParts     = 8
	maxOtherPart = 1 << 20 // a provenance file, say: read and dropped
)

// post is ChartMuseum's upload: multipart field "chart", or the raw
// archive as the body; ?force replaces a version (for a caller who may
// delete).
func (f *Format) post(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	body, err := w.UploadBody(r, 0)
	if err != nil {
		return nil, err
	}
	if mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		if body, err = chartPart(body, params["boundary"]); err != nil {
			return nil, err
		}
	}
	_, force := r.Query["force"]
	return f.store(ctx, r, w, body, "", force)
}

// put stores the archive PUT at charts/<name>-<version>.tgz; the name
// must be the one its Chart.yaml gives.
func (f *Format) put(ctx context.Context, r *format.Request, w *format.Writer) (*format.Response, error) {
	body, err := w.UploadBody(r, 0)
	if err != nil {
		return nil, err
	}
	return f.store(ctx, r, w, body, r.Param("file"), false)
}

// chartPart finds the "chart" part of a multipart body, dropping the
// others (a provenance file) within small bounds.
func chartPart(body io.Reader, boundary string) (io.Reader, error) {
	if boundary == "" {
		return nil, format.BadRequest("a multipart upload needs a boundary")
	}
	mr := multipart.NewReader(body, boundary)
	for range maxParts {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, format.BadRequest("malformed multipart body: %v", err)
		}
		if p.FormName() == "chart" {
			return p, nil
		}
		if n, _ := io.Copy(io.Discard, io.LimitReader(p, maxOtherPart+1)); n > maxOtherPart {
			return nil, format.BadRequest("multipart field %q is larger than %d bytes", p.FormName(), maxOtherPart)
		}
	}
	return nil, format.BadRequest(`the upload has no "chart" field`)
}

func (f *Format) store(ctx context.Context, r *format.Request, w *format.Writer, body io.Reader, file string, force bool) (*format.Response, error) {
	tmp, size, remove, err := w.Spill(body, "helm")
	if err != nil {
		return nil, err
	}
	defer remove()
	chart, err := readChart(ctx, io.NewSectionReader(tmp, 0, size), size)
	if err != nil {
		return nil, err
	}
	name, version := chart["name"].(string), chart["version"].(string)
	if file != "" && file != name+"-"+version+".tgz" {
		return nil, format.BadRequest("the chart is %s %s: put it at %s-%s.tgz", name, version, name, version)
	}
	attrs, err := json.Marshal(chart)
	if err != nil {
		return nil, format.BadRequest("Chart.yaml: %v", err)
	}
	overwrite := format.OverwriteNever
	if force {
		overwrite = format.OverwriteIfDelete
	}
	a, idx, err := w.Store(ctx, r, format.Upload{Repo: r.Repo, Path: chartPath(name, version), Package: name, Version: version,
		ContentType: "application/gzip", Body: io.NewSectionReader(tmp, 0, size), Overwrite: overwrite, Attrs: attrs})
	if err != nil {
		return nil, err
	}
	resp := format.NewResponse(http.StatusCreated)
	format.SetIndex(resp.Header, idx)
	resp.Header.Set("Location", format.URL(r, r.Prefix, r.Repo.Name, "charts", strings.TrimPrefix(a.Path, "charts/")))
	resp.Header.Set("Content-Type", "application/json")
	resp.Body = []byte(`{"saved":true}`)
	return resp, nil
}

// chartFields are the Chart.yaml fields a chart version's entry in
// index.yaml carries (helm's ChartVersion); the rest stays in the
// archive.
var chartFields = []string{"apiVersion", "name", "version", "kubeVersion", "description", "type", "keywords", "home", "sources",
	"dependencies", "maintainers", "icon", "appVersion", "deprecated", "annotations"}

// readChart reads a chart archive: a gzip'd tar of one top directory,
// every entry inside it, whose Chart.yaml says apiVersion, a name (a
// single path segment) and a semver version. It returns the Chart.yaml
// fields index.yaml repeats (chartFields), within maxRecord bytes.
func readChart(ctx context.Context, archive io.Reader, size int64) (map[string]any, error) {
	chart, _, err := parseChart(ctx, archive, size)
	return chart, err
}

// parseChart is readChart, and what the chart says of itself as its
// inspector answers it: the one reading of a chart, for uploads and
// inspections alike.
func parseChart(ctx context.Context, archive io.Reader, size int64) (map[string]any, format.PackageInfo, error) {
	var top string
	files := &format.FileList{}
	rules := format.ArchiveRules{What: "a chart archive", All: true, Limits: format.ArchiveLimits{Member: maxChartYAML},
		Check: files.Check(func(e format.Entry) error {
			dir, _, _ := strings.Cut(e.Name, "/")
			if top == "" {
				top = dir
			}
			if dir != top {
				return format.BadRequest("not a chart archive: %s is outside the chart's directory %s/", e.Name, top)
			}
			return nil
		}),
		Want: func(name string) bool { return name == top+"/Chart.yaml" }}
	var info format.PackageInfo
	ms, err := format.ReadTar(ctx, archive, size, format.Gzip, rules)
	if err != nil {
		return nil, info, err
	}
	if len(ms) == 0 {
		return nil, info, format.BadRequest("not a chart archive: no %s/Chart.yaml", top)
	}
	var all map[string]any
	if err := format.DecodeYAML(ms[0].Data, &all, "Chart.yaml"); err != nil {
		return nil, info, err
	}
	chart, err := format.Record(all, chartFields, maxRecord, "Chart.yaml")
	if err != nil {
		return nil, info, err
	}
	name, _ := chart["name"].(string)
	version, _ := chart["version"].(string)
	api, _ := chart["apiVersion"].(string)
	if name == "" || strings.ContainsAny(name, `/\ `) || name == "." || name == ".." || api == "" {
		return nil, info, format.BadRequest("Chart.yaml must give apiVersion and a name (one path segment); it gives %q, %q", api, name)
	}
	if !semver.IsValid("v" + strings.TrimPrefix(version, "v")) {
		return nil, info, format.BadRequest("Chart.yaml's version %q is not a semantic version", version)
	}
	info = chartInfo(all)
	files.Fill(&info)
	return chart, info, nil
}

// chartInfo is what a Chart.yaml says of its chart. Helm has no licence
// field: charts give it as an annotation, Artifact Hub's or "licenses".
func chartInfo(all map[string]any) format.PackageInfo {
	info := format.PackageInfo{Format: Name, Name: format.Str(all["name"]), Version: format.Str(all["version"]),
		Summary: format.Str(all["description"]), Homepage: format.Str(all["home"]), Keywords: format.Strs(all["keywords"])}
	if src := format.Strs(all["sources"]); len(src) > 0 {
		info.Repository = src[0]
	}
	ann, _ := all["annotations"].(map[string]any)
	for _, k := range []string{"artifacthub.io/license", "licenses", "license"} {
		if l := format.Str(ann[k]); l != "" {
			info.Licenses = []string{l}
			break
		}
	}
	deps, _ := all["dependencies"].([]any)
	for _, d := range deps {
		m, _ := d.(map[string]any)
		if format.Str(m["name"]) == "" {
			continue
		}
		cond := format.Str(m["condition"])
		if tags := format.Strs(m["tags"]); cond == "" && len(tags) > 0 {
			cond = "tags: " + strings.Join(tags, ", ")
		}
		info.Dependencies = append(info.Dependencies, format.Dependency{Name: format.Str(m["name"]), Constraint: format.Str(m["version"]),
			Kind: "runtime", Condition: cond, Ecosystem: Name})
	}
	return info
}
