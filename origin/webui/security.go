package webui

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/origin/service/scan"
	"github.com/depot-registry/depot/shared/apierr"
	"github.com/depot-registry/depot/shared/meta"
)

// The security pages: the scans of what the user may read (filtered by
// status), each scan's report, the advisory database in force, and the
// policies, which administrators create, change and delete here.

const securityPath = Prefix + "/security"

type securityPage struct {
	Scans    []meta.Scan
	Pager    pager
	Status   string
	Database *meta.AdvisoryDB
	Policies []meta.Policy
	Admin    bool
}

func (u *UI) security(w http.ResponseWriter, c *call) error {
	status := c.r.URL.Query().Get("status")
	pg := pageOf(c.r)
	list, err := u.d.App.ListScans(c.r.Context(), c.p, app.ScanFilter{Status: status, Page: pg})
	if err != nil {
		return err
	}
	db, err := u.d.App.Advisories(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	policies, err := u.d.App.ListPolicies(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	return u.render(w, c, 0, "security", "Security", securityPage{Scans: list.Items, Pager: pagerOf(c.r, list.Page, list.Total),
		Status: status, Database: db, Policies: policies, Admin: c.p.IsAdmin()})
}

type scanPage struct {
	Scan   *meta.Scan
	Report *scan.Report
}

func (u *UI) scanDetail(w http.ResponseWriter, c *call) error {
	sc, rep, err := u.d.App.GetScan(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	if sc.Status == meta.ScanQueued || sc.Status == meta.ScanRunning {
		w.Header().Set("Refresh", "2")
	}
	return u.render(w, c, 0, "scan", "Scan of "+sc.PackageName+" "+sc.Version, scanPage{Scan: sc, Report: rep})
}

// requestScan queues a scan of an artifact from its version's page.
func (u *UI) requestScan(w http.ResponseWriter, c *call) error {
	sc, _, err := u.d.App.RequestScan(c.r.Context(), c.p, c.r.PostForm.Get("artifact_id"), "")
	if err != nil {
		return u.after(w, c, err, "", securityPath)
	}
	http.Redirect(w, c.r, securityPath+"/scans/"+url.PathEscape(sc.ID), http.StatusSeeOther)
	return nil
}

// policyForm creates or edits a policy.
type policyForm struct {
	Policy                                   *meta.Policy // editing it; nil: a new one
	Name, Description, Repositories, Formats string
	Threshold, Allowlist                     string
	Enabled, BlockDownload, BlockUnscanned   bool
	BlockUpload, RequireSignature            bool
	SigningKeys                              []string // the keys a signature must be by (none: any)
	Keys                                     []meta.SigningKey
	Severities                               []string
	Err, Field                               string
}

func (f policyForm) formError() string { return f.Err }

func newPolicyForm() policyForm {
	return policyForm{Enabled: true, BlockDownload: true, Threshold: "high", Severities: []string{"critical", "high", "medium", "low"}}
}

// renderPolicy renders the policy form, with the signing keys to choose.
func (u *UI) renderPolicy(w http.ResponseWriter, c *call, status int, title string, f policyForm) error {
	keys, err := u.d.App.SigningKeys(c.r.Context(), c.p)
	if err != nil {
		return err
	}
	f.Keys = keys
	return u.render(w, c, status, "policy", title, f)
}

func (u *UI) newPolicy(w http.ResponseWriter, c *call) error {
	return u.renderPolicy(w, c, 0, "New security policy", newPolicyForm())
}

func (u *UI) editPolicy(w http.ResponseWriter, c *call) error {
	pol, err := u.d.App.GetPolicy(c.r.Context(), c.p, c.r.PathValue("id"))
	if err != nil {
		return err
	}
	f := newPolicyForm()
	f.Policy, f.Name, f.Description, f.Enabled = pol, pol.Name, pol.Description, pol.Enabled
	f.Threshold, f.BlockDownload, f.BlockUnscanned, f.BlockUpload = pol.Rules.SeverityThreshold, pol.Rules.BlockDownload,
		pol.Rules.BlockUnscanned, pol.Rules.BlockUpload
	f.RequireSignature, f.SigningKeys = pol.Rules.RequireSignature, pol.Rules.SigningKeys
	var names []string
	for _, id := range pol.Scope.Repositories {
		if r, err := u.d.App.GetRepository(c.r.Context(), c.p, id); err == nil {
			names = append(names, r.Name)
		}
	}
	f.Repositories, f.Formats = strings.Join(names, ", "), strings.Join(pol.Scope.Formats, ", ")
	var lines []string
	for _, a := range pol.Rules.Allow {
		line := a.ID + " | " + a.Reason
		if a.ExpiresAt != nil {
			line += " | " + a.ExpiresAt.UTC().Format("2006-01-02")
		}
		lines = append(lines, line)
	}
	f.Allowlist = strings.Join(lines, "\n")
	return u.renderPolicy(w, c, 0, pol.Name, f)
}

// policyInput reads the form: repositories and formats comma-separated,
// the allow-list a line per advisory, "id | reason | expiry date".
func policyInput(c *call) (policyForm, app.PolicyInput, error) {
	v := c.r.PostForm
	f := newPolicyForm()
	f.Name, f.Description, f.Repositories, f.Formats = v.Get("name"), v.Get("description"), v.Get("repositories"), v.Get("formats")
	f.Threshold, f.Allowlist = v.Get("severity_threshold"), v.Get("allowlist")
	f.Enabled, f.BlockDownload, f.BlockUnscanned, f.BlockUpload = v.Get("enabled") == "on", v.Get("block_download") == "on",
		v.Get("block_unscanned") == "on", v.Get("block_upload") == "on"
	f.RequireSignature, f.SigningKeys = v.Get("require_signature") == "on", v["signing_keys"]
	list := func(s string) []string {
		out := []string{}
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	rules := &app.RulesInput{SeverityThreshold: f.Threshold, BlockDownload: f.BlockDownload, BlockUnscanned: f.BlockUnscanned,
		BlockUpload: f.BlockUpload, RequireSignature: f.RequireSignature, SigningKeys: f.SigningKeys, Allowlist: []app.AllowInput{}}
	for _, line := range strings.Split(f.Allowlist, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		e := app.AllowInput{ID: strings.TrimSpace(parts[0])}
		if len(parts) > 1 {
			e.Reason = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 && strings.TrimSpace(parts[2]) != "" {
			t, err := time.Parse("2006-01-02", strings.TrimSpace(parts[2]))
			if err != nil {
				f.Err, f.Field = "allow-list: an expiry is a date, 2006-01-02", "rules.allowlist"
				return f, app.PolicyInput{}, err
			}
			e.ExpiresAt = &t
		}
		rules.Allowlist = append(rules.Allowlist, e)
	}
	in := app.PolicyInput{Name: &f.Name, Description: &f.Description, Enabled: &f.Enabled,
		Scope: &app.ScopeInput{Repositories: list(f.Repositories), Formats: list(f.Formats)}, Rules: rules}
	return f, in, nil
}

func (u *UI) savePolicy(w http.ResponseWriter, c *call) error {
	f, in, err := policyInput(c)
	title := "New security policy"
	id := c.r.PathValue("id")
	if err == nil {
		if id == "" {
			_, _, err = u.d.App.CreatePolicy(c.r.Context(), c.p, in)
		} else {
			f.Policy, title = &meta.Policy{ID: id, Name: f.Name}, f.Name
			_, _, err = u.d.App.UpdatePolicy(c.r.Context(), c.p, id, in)
		}
		if e, ok := refused(err, &f.Field); ok {
			f.Err = e.Message
			return u.renderPolicy(w, c, e.Status(), title, f)
		}
	} else if f.Err != "" {
		return u.renderPolicy(w, c, http.StatusBadRequest, title, f)
	}
	return u.after(w, c, err, "Policy "+f.Name+" saved: every node applies it at once.", securityPath)
}

func (u *UI) deletePolicy(w http.ResponseWriter, c *call) error {
	_, err := u.d.App.DeletePolicy(c.r.Context(), c.p, c.r.PathValue("id"))
	return u.after(w, c, err, "Policy deleted.", securityPath)
}

// loadAdvisories loads the OSV records an administrator uploaded from the
// security page (a zip of them, one record, or an array), streamed to
// the application's load within its bound.
func (u *UI) loadAdvisories(w http.ResponseWriter, c *call) error {
	part, err := c.parts.NextPart()
	if err != nil || part.FormName() != "advisories" || part.FileName() == "" {
		return u.after(w, c, apierr.Invalid("advisories", "choose a file of OSV records: a zip of them, or JSON"), "", securityPath)
	}
	load, db, err := u.d.App.LoadAdvisories(c.r.Context(), c.p, part.FileName(), part)
	done := ""
	if err == nil {
		done = fmt.Sprintf("Loaded %s: %d records read, %d new, %d updated; %d advisories in force. What they name is scanned again.",
			part.FileName(), load.Read, load.Added, load.Updated, db.Advisories)
	}
	return u.after(w, c, err, done, securityPath)
}
