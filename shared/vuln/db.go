package vuln

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/google/osv-scalibr/semantic"
)

// DB is a set of advisories indexed by the packages they name; it is not
// changed once built, so any number of scans read it at once.
type DB struct {
	advs       []Advisory
	index      map[string][]hit // ecosystem \x00 normal name -> where it is named
	ecosystems map[string]int
}

type hit struct {
	adv, aff int
	ranges   [][]event          // the entry's ranges, events parsed and sorted
	listed   map[string]bool    // the versions it lists, as written
	versions []semantic.Version // and parsed, in order (those that parse)
}

func indexKey(ecosystem, name string) string { return ecosystem + "\x00" + NormalName(ecosystem, name) }

// Build indexes advisories. Of two records with one id the later
// modified is kept; withdrawn records are kept (they say what was
// withdrawn) but never match.
func Build(advs []Advisory) *DB {
	byID := map[string]int{}
	var kept []Advisory
	for _, a := range advs {
		if i, ok := byID[a.ID]; ok {
			if a.Modified.After(kept[i].Modified) {
				kept[i] = a
			}
			continue
		}
		byID[a.ID] = len(kept)
		kept = append(kept, a)
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].ID < kept[j].ID })
	db := &DB{advs: kept, index: map[string][]hit{}, ecosystems: map[string]int{}}
	for i := range kept {
		seen := map[string]bool{}
		for j, af := range kept[i].Affected {
			k := indexKey(af.Package.Ecosystem, af.Package.Name)
			db.index[k] = append(db.index[k], prepare(i, j, &kept[i].Affected[j]))
			if e := af.Package.Ecosystem; !seen[e] {
				seen[e] = true
				db.ecosystems[e]++
			}
		}
	}
	return db
}

// Len is how many advisories the database holds.
func (db *DB) Len() int {
	if db == nil {
		return 0
	}
	return len(db.advs)
}

// Advisories are the records, in id order (not to be changed).
func (db *DB) Advisories() []Advisory { return db.advs }

// Ecosystems counts the advisories naming a package of each ecosystem.
func (db *DB) Ecosystems() map[string]int { return maps.Clone(db.ecosystems) }

// Covers reports whether the database holds advisories of an ecosystem.
func (db *DB) Covers(ecosystem string) bool { return db.Len() > 0 && db.ecosystems[ecosystem] > 0 }

// Finding is an advisory that affects a package at a version.
type Finding struct {
	ID         string   `json:"id"`
	Aliases    []string `json:"aliases,omitempty"`
	Ecosystem  string   `json:"ecosystem"`
	Package    string   `json:"package"`
	Version    string   `json:"installed_version"`
	Fixed      []string `json:"fixed_versions,omitempty"`
	Severity   string   `json:"severity"`
	Summary    string   `json:"summary,omitempty"`
	References []string `json:"references,omitempty"`
}

// Match lists the advisories affecting package name at version in
// ecosystem, by the OSV evaluation: the version is one the record lists,
// or, walking a range's events in version order, the last one at or
// below it introduced the vulnerability (fixed and last_affected end
// it). A version the ecosystem cannot parse is an error.
func (db *DB) Match(ecosystem, name, version string) ([]Finding, error) {
	if db == nil {
		return nil, nil
	}
	hits := db.index[indexKey(ecosystem, name)]
	if len(hits) == 0 {
		return nil, nil
	}
	v, err := parseVersion(ecosystem, version)
	if err != nil {
		return nil, fmt.Errorf("%s is not a version %s orders: %w", version, ecosystem, err)
	}
	var out []Finding
	for _, h := range hits {
		a := &db.advs[h.adv]
		if a.Withdrawn != nil {
			continue
		}
		af := &a.Affected[h.aff]
		if !h.affects(v, version) {
			continue
		}
		if i := slices.IndexFunc(out, func(f Finding) bool { return f.ID == a.ID }); i >= 0 {
			continue // the record names the package twice
		}
		f := Finding{ID: a.ID, Aliases: a.Aliases, Ecosystem: ecosystem, Package: name, Version: version,
			Severity: a.SeverityLevel(), Summary: a.Summary, Fixed: fixedVersions(af)}
		for _, r := range a.References {
			f.References = append(f.References, r.URL)
		}
		out = append(out, f)
	}
	return out, nil
}

// prepare parses an affected entry's versions and range events once,
// in its package's ecosystem, events sorted by version ("0" first).
func prepare(adv, aff int, af *Affected) hit {
	h := hit{adv: adv, aff: aff, listed: map[string]bool{}}
	eco := af.Package.Ecosystem
	for _, lv := range af.Versions {
		h.listed[lv] = true
		if p, err := parseVersion(eco, lv); err == nil {
			h.versions = append(h.versions, p.v)
		}
	}
	slices.SortFunc(h.versions, func(a, b semantic.Version) int { c, _ := a.Compare(b); return c })
	for _, r := range af.Ranges {
		events := make([]event, 0, len(r.Events))
		for _, e := range r.Events {
			ev := event{Event: e}
			raw := ev.version()
			if raw == "" {
				continue
			}
			if e.Introduced != "0" {
				p, err := parseVersion(eco, raw)
				if err != nil {
					continue // a version the ecosystem cannot order says nothing
				}
				ev.at = p.v
			}
			events = append(events, ev)
		}
		sort.SliceStable(events, func(i, j int) bool {
			a, b := events[i].at, events[j].at
			switch {
			case a == nil:
				return b != nil
			case b == nil:
				return false
			}
			c, err := a.Compare(b)
			return err == nil && c < 0
		})
		h.ranges = append(h.ranges, events)
	}
	return h
}

// affects evaluates the entry for version v (raw as given).
func (h *hit) affects(v version, raw string) bool {
	for _, events := range h.ranges {
		if inRange(events, v) {
			return true
		}
	}
	if h.listed[raw] {
		return true
	}
	i := sort.Search(len(h.versions), func(i int) bool { c, _ := v.v.Compare(h.versions[i]); return c <= 0 })
	if i < len(h.versions) {
		if c, err := v.v.Compare(h.versions[i]); err == nil && c == 0 {
			return true
		}
	}
	return false
}

// event is one event of a range with its version parsed ("0": nil,
// before everything).
type event struct {
	Event
	at semantic.Version
}

func (e event) version() string {
	switch {
	case e.Introduced != "":
		return e.Introduced
	case e.Fixed != "":
		return e.Fixed
	case e.LastAffected != "":
		return e.LastAffected
	}
	return e.Limit
}

// inRange walks a range's sorted events: the last one at or below v
// decides.
func inRange(events []event, v version) bool {
	affected := false
	for _, e := range events {
		c := 1 // v against the event's version ("0": v is above)
		if e.at != nil {
			var err error
			if c, err = v.v.Compare(e.at); err != nil {
				continue
			}
		}
		switch {
		case e.Introduced != "":
			if c >= 0 {
				affected = true
			}
		case e.Fixed != "":
			if c >= 0 {
				affected = false
			}
		case e.LastAffected != "":
			if c > 0 {
				affected = false
			}
		}
	}
	return affected
}

// fixedVersions are the versions the ranges say fix the package.
func fixedVersions(af *Affected) []string {
	var out []string
	for _, r := range af.Ranges {
		for _, e := range r.Events {
			if e.Fixed != "" && !slices.Contains(out, e.Fixed) {
				out = append(out, e.Fixed)
			}
		}
	}
	return out
}

// Advisory is the record of an id, if the database holds it.
func (db *DB) Advisory(id string) (*Advisory, bool) {
	if db == nil {
		return nil, false
	}
	i := sort.Search(len(db.advs), func(i int) bool { return db.advs[i].ID >= id })
	if i < len(db.advs) && db.advs[i].ID == id {
		return &db.advs[i], true
	}
	return nil, false
}

// Named lists the advisories naming package name of ecosystem (withdrawn
// ones left out), with the affected entries that name it.
func (db *DB) Named(ecosystem, name string) []Named {
	if db == nil {
		return nil
	}
	var out []Named
	for _, h := range db.index[indexKey(ecosystem, name)] {
		a := &db.advs[h.adv]
		if a.Withdrawn != nil {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Advisory == a {
			out[n-1].Affected = append(out[n-1].Affected, &a.Affected[h.aff])
			continue
		}
		out = append(out, Named{Advisory: a, Affected: []*Affected{&a.Affected[h.aff]}})
	}
	return out
}

// Named is an advisory and its entries for one package.
type Named struct {
	Advisory *Advisory
	Affected []*Affected
}

// SemverRange renders the versions affected entries name as a node
// semver range ("<1.2.3 || >=2.0.0 <2.0.5 || 3.1.0"): what npm's audit
// matches installed versions with. Events are taken in the order they
// are written (OSV's ranges list them in order).
func SemverRange(affected []*Affected) string {
	var parts []string
	for _, af := range affected {
		for _, r := range af.Ranges {
			lo := ""
			open := false
			for _, e := range r.Events {
				switch {
				case e.Introduced != "":
					if e.Introduced == "0" {
						lo = ""
					} else {
						lo = ">=" + e.Introduced
					}
					open = true
				case e.Fixed != "" && open:
					parts = append(parts, strings.TrimSpace(lo+" <"+e.Fixed))
					open = false
				case e.LastAffected != "" && open:
					parts = append(parts, strings.TrimSpace(lo+" <="+e.LastAffected))
					open = false
				}
			}
			if open {
				if lo == "" {
					lo = "*"
				}
				parts = append(parts, lo)
			}
		}
		parts = append(parts, af.Versions...)
	}
	return strings.Join(parts, " || ")
}
