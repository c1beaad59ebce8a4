// Command searchlib measures Depot's own search indexes (the bbolt
// buckets of shared/meta that shared/search reads) against a search
// library, bleve, on the same generated data: build time, disk size, and
// the latency of the questions Depot's search API answers, as an admin
// (every repository readable) and as a user who reads some private
// repositories. It is its own module so that Depot does not depend on
// the library. See bench/searchlib/run.sh.
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/depot-registry/depot/shared/meta"
)

// limit is the results a search asks for (the quick search's default).
const limit = 10

func main() {
	artifacts := flag.Int("artifacts", 1_000_000, "artifacts to generate")
	repos := flag.Int("repos", 1000, "repositories to generate")
	dir := flag.String("dir", "", "work directory, empty or new (default: a temporary one, removed at the end)")
	n := flag.Int("n", 200, "queries per measured case")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("searchlib: ")
	if *artifacts < *repos || *repos < 1 || *n < 1 {
		log.Fatal("-artifacts must be at least -repos, -repos and -n at least 1")
	}
	work := *dir
	if work == "" {
		tmp, err := os.MkdirTemp("", "searchlib-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		work = tmp
	} else {
		if err := os.MkdirAll(work, 0o750); err != nil {
			log.Fatal(err)
		}
		if entries, _ := os.ReadDir(work); len(entries) > 0 {
			log.Fatalf("%s is not empty", work)
		}
	}
	if err := run(work, *artifacts, *repos, *n); err != nil {
		log.Fatal(err)
	}
}

// engineSummary is one engine's build.
type engineSummary struct {
	name  string
	build time.Duration
	disk  int64
	note  string
}

func run(work string, artifacts, repos, n int) error {
	g := &generator{repos: plan(artifacts, repos), artifacts: artifacts, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	sm := &samples{stride: max(1, artifacts/1000)}
	var admin, user, denied []string
	private, granted := 0, 0
	for _, p := range g.repos {
		admin = append(admin, p.ID)
		if p.Public || p.Granted {
			user = append(user, p.ID)
		} else {
			denied = append(denied, p.ID)
		}
		if !p.Public {
			private++
			if p.Granted {
				granted++
			}
		}
	}
	log.Printf("%d artifacts in %d repositories (%d private, the user granted %d); work directory %s",
		artifacts, repos, private, granted, work)

	start := time.Now()
	if err := g.each(nil, func(*batch) error { return nil }); err != nil {
		return err
	}
	genOnly := time.Since(start)

	// Depot.
	metaPath := filepath.Join(work, "meta.db")
	start = time.Now()
	st, err := buildDepot(metaPath, g, sm)
	if err != nil {
		return err
	}
	depotBuild := time.Since(start)
	if err := st.Close(); err != nil {
		return err
	}
	start = time.Now()
	buckets, pageSize, err := bucketSizes(metaPath)
	if err != nil {
		return err
	}
	statsTime := time.Since(start)
	if st, err = meta.Open(metaPath); err != nil {
		return err
	}
	defer st.Close()
	runtime.GC()

	// The library: the main index, then the ngram one.
	mainPath, gramPath := filepath.Join(work, "bleve"), filepath.Join(work, "bleve-ngram")
	// Each build: indexing, waiting for merges, closing.
	buildOne := func(path string, ngrams bool) (time.Duration, time.Duration, string, error) {
		idx, indexing, wait, err := buildBleve(path, g, ngrams)
		if err != nil {
			return 0, 0, "", err
		}
		segs := segments(idx)
		start := time.Now()
		if err := idx.Close(); err != nil {
			return 0, 0, "", err
		}
		return indexing + wait + time.Since(start), wait, segs, nil
	}
	bleveBuild, mainSettle, mainSegs, err := buildOne(mainPath, false)
	if err != nil {
		return err
	}
	gramBuild, gramSettle, gramSegs, err := buildOne(gramPath, true)
	if err != nil {
		return err
	}
	var idx, grams bleve.Index
	start = time.Now()
	if idx, err = bleve.Open(mainPath); err != nil {
		return err
	}
	defer idx.Close()
	if grams, err = bleve.Open(gramPath); err != nil {
		return err
	}
	defer grams.Close()
	openTime := time.Since(start)
	runtime.GC()

	d := depotEngine{st: st}
	b := bleveEngine{idx: idx, grams: grams, st: st}
	bd := b
	bd.deny = denied
	who := []struct {
		name            string
		depot, readable []string // readable: nil for the library's admin (no filter)
	}{{"admin", admin, nil}, {"user", user, user}}
	rot := func(list []string) func(i int) string { return func(i int) string { return list[i%len(list)] } }
	fixed := func(q string) func(int) string { return func(int) string { return q } }
	var prefixes, filePrefixes []string
	for _, w := range words {
		prefixes = append(prefixes, w+"-")
	}
	for _, f := range sm.files {
		filePrefixes = append(filePrefixes, f[:min(len(f), 10)])
	}
	lowerNames := make([]string, len(sm.names))
	for i, s := range sm.names {
		lowerNames[i] = strings.ToLower(s)
	}
	// An engine's answer to a case: Depot's, or the library's (asked with
	// each filter in turn for the user).
	type engineFn struct {
		engine string
		depot  func(readable []string, q string) int
		bleve  func(e bleveEngine, readable []string, q string) int
	}
	dep := func(fn func([]string, string) int) engineFn { return engineFn{engine: "depot", depot: fn} }
	lib := func(name string, fn func(bleveEngine, []string, string) int) engineFn {
		return engineFn{engine: name, bleve: fn}
	}
	exact := func(fn func(bleveEngine, []string, string, bool) int, exact bool) func(bleveEngine, []string, string) int {
		return func(e bleveEngine, r []string, q string) int { return fn(e, r, q, exact) }
	}
	cases := []struct {
		name    string
		query   func(int) string
		engines []engineFn
	}{
		{"quick `parser`", fixed("parser"), []engineFn{dep(d.quick), lib("bleve", bleveEngine.quick)}},
		{"quick: a whole name", rot(sm.names), []engineFn{dep(d.quick), lib("bleve", bleveEngine.quick)}},
		{"name exact", rot(lowerNames), []engineFn{
			dep(func(r []string, q string) int { return d.names(r, q, true) }), lib("bleve", exact(bleveEngine.names, true))}},
		{"name prefix `<word>-`", rot(prefixes), []engineFn{
			dep(func(r []string, q string) int { return d.names(r, q, false) }), lib("bleve", exact(bleveEngine.names, false))}},
		{"name contains `arser`", fixed("arser"), []engineFn{
			dep(d.containing), lib("bleve (wildcard)", bleveEngine.containing), lib("bleve-ngram", bleveEngine.containingGrams)}},
		{"term `parser`", fixed("parser"), []engineFn{
			dep(func(r []string, q string) int { return d.terms(r, q, true) }), lib("bleve", exact(bleveEngine.terms, true))}},
		{"term prefix `pars`", fixed("pars"), []engineFn{
			dep(func(r []string, q string) int { return d.terms(r, q, false) }), lib("bleve", exact(bleveEngine.terms, false))}},
		{"file name exact", rot(sm.files), []engineFn{
			dep(func(r []string, q string) int { return d.files(r, q, true) }), lib("bleve", exact(bleveEngine.files, true))}},
		{"file name prefix (10 bytes)", rot(filePrefixes), []engineFn{
			dep(func(r []string, q string) int { return d.files(r, q, false) }), lib("bleve", exact(bleveEngine.files, false))}},
		{"suggest `pars`", fixed("pars"), []engineFn{dep(d.suggest), lib("bleve", bleveEngine.suggest)}},
		{"checksum sha256", rot(sm.checksums), []engineFn{dep(d.checksum), lib("bleve", bleveEngine.checksum)}},
	}
	var rows []row
	record := func(c, who, engine string, query func(int) string, fn func(readable []string, q string) int, readable []string) {
		r := measure(n, func(i int) int { return fn(readable, query(i)) })
		r.Case, r.Who, r.Engine = c, who, engine
		rows = append(rows, r)
		log.Printf("%-28s %-5s %-30s p50 %7.3f ms  p99 %7.3f ms  results %.1f", c, who, engine, ms(r.P50), ms(r.P99), r.Results)
	}
	for _, c := range cases {
		for _, w := range who {
			for _, e := range c.engines {
				if e.depot != nil {
					record(c.name, w.name, e.engine, c.query, e.depot, w.depot)
					continue
				}
				record(c.name, w.name, e.engine, c.query, func(r []string, q string) int { return e.bleve(b, r, q) }, w.readable)
				if w.readable != nil {
					record(c.name, w.name, e.engine+", deny filter", c.query, func(r []string, q string) int { return e.bleve(bd, r, q) }, w.readable)
				}
			}
		}
	}

	// Sizes.
	metaSize := fileSize(metaPath)
	var indexPages, indexInUse int64
	var indexNames []string
	for _, bs := range buckets {
		if searchBuckets[bs.Name] {
			indexPages += bs.Pages
			indexInUse += bs.InUse
			indexNames = append(indexNames, bs.Name)
		}
	}
	slices.Sort(indexNames)
	summaries := []engineSummary{
		{"depot", depotBuild, metaSize, fmt.Sprintf("the whole meta.db (records, change feed, events and every index); "+
			"its search buckets alone (%s) take %.1f MB of pages (%.1f MB in use)",
			strings.Join(indexNames, ", "), mb(indexPages), mb(indexInUse))},
		{"bleve", bleveBuild, dirSize(mainPath), fmt.Sprintf("packages and artifacts, no ngrams; %s of it waiting for merges (%s file segments at the end)",
			secs(mainSettle), mainSegs)},
		{"bleve-ngram", gramBuild, dirSize(gramPath), fmt.Sprintf("packages' name trigrams alone, besides the main index; %s of it waiting for merges (%s file segments)",
			secs(gramSettle), gramSegs)},
	}

	fmt.Printf("\n%d artifacts in %d repositories; %d queries a case; the user reads %d of %d repositories; load average %s\n\n",
		artifacts, repos, n, len(user), repos, loadAverage())
	fmt.Println("| case | reader | engine | p50 ms | p99 ms | mean ms | results |")
	fmt.Println("| --- | --- | --- | ---: | ---: | ---: | ---: |")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %.3f | %.3f | %.3f | %.1f |\n", r.Case, r.Who, r.Engine, ms(r.P50), ms(r.P99), ms(r.Mean), r.Results)
	}
	fmt.Println()
	fmt.Println("| engine | build s | disk MB | what |")
	fmt.Println("| --- | ---: | ---: | --- |")
	for _, s := range summaries {
		fmt.Printf("| %s | %.1f | %.1f | %s |\n", s.name, s.build.Seconds(), mb(s.disk), s.note)
	}
	fmt.Printf("\nGenerating the data alone takes %s of each build. Reading the bbolt page statistics took %s (page size %d). "+
		"Opening both bleve indexes took %s.\n", secs(genOnly), secs(statsTime), pageSize, secs(openTime))
	fmt.Print(`
How each engine answers:
  depot: search.Quick, search.Suggest and search.Checksum (limit 10) for quick, suggest and checksum;
    the other rows walk one index (PackagesByName, PackagesContaining, PackagesByTerm, FilesByName)
    to the first 10 readable entries, in a read transaction each.
  bleve: quick is one disjunction of the quick search's tiers (exact name, exact file name, name prefix,
    exact term, file name prefix, *q* wildcard on names, term prefix), boosted in that order, scored, the
    10 best hits then read from the store as search.Quick reads its results (no name@version tier).
    The other rows are unscored queries of size 10 on one field; suggest asks for 40 name-prefix hits
    and a 100-term facet on the terms of the packages with a term of that prefix, cut to the prefix;
    checksum reads the hits' artifacts from the store. bleve-ngram is the conjunction of the query's
    trigrams on the name-trigram index (40 hits, checked against the name).
  readers: depot is given the readable repository ids (all for the admin). bleve runs the admin's
    queries unfiltered; the user's with an unscored boolean filter holding one term query on the
    repository field per readable repository, and again ("deny filter") with a must-not of one per
    repository the user may not read.
  checksums: one sha256 per artifact, unique; real uploads also carry md5, sha1 and sha512, which
    Depot's checksum index holds too.
`)
	fmt.Println("\nLargest meta.db buckets (MB of pages, MB in use, keys):")
	for _, bs := range buckets[:min(len(buckets), 12)] {
		mark := ""
		if searchBuckets[bs.Name] {
			mark = " (search)"
		}
		fmt.Printf("  %-22s %8.1f %8.1f %10d%s\n", bs.Name, mb(bs.Pages), mb(bs.InUse), bs.Keys, mark)
	}
	return nil
}

// row is one measured case of one engine for one reader.
type row struct {
	Case, Who, Engine string
	P50, P99, Mean    time.Duration
	Results           float64 // mean results per query
}

// measure runs fn n times (after a few unmeasured runs) with the query
// index i, and returns its percentiles.
func measure(n int, fn func(i int) int) row {
	for i := range min(n, 5) {
		fn(i)
	}
	times := make([]time.Duration, n)
	var total time.Duration
	results := 0
	for i := range n {
		start := time.Now()
		results += fn(i)
		times[i] = time.Since(start)
		total += times[i]
	}
	slices.Sort(times)
	pct := func(p float64) time.Duration { return times[min(n-1, int(float64(n)*p))] }
	return row{P50: pct(0.50), P99: pct(0.99), Mean: total / time.Duration(n), Results: float64(results) / float64(n)}
}

var lastProgress = map[string]int{}

// progress logs a build's progress every tenth of the artifacts.
func progress(what string, done, total int) {
	tenth := done * 10 / total
	if tenth > lastProgress[what] {
		lastProgress[what] = tenth
		log.Printf("%s: %d of %d artifacts", what, done, total)
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mb(b int64) float64 { return float64(b) / 1e6 }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], " ")
}
