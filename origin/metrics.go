package origin

// The figures an origin exports beside the request, GC and event metrics
// of shared/metrics: raft, storage, blob repair and, as this origin sees
// them in the log, the edge nodes. All are read when scraped.

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/depot-registry/depot/origin/app"
	"github.com/depot-registry/depot/shared/meta"
)

// collector is a prometheus.Collector of one function, called at each
// scrape, that sends the metrics of descs.
type collector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// registerMetrics registers the origin's own figures; the services they
// read (raft, the blob stores, the disk guard, the application) exist.
func (o *Origin) registerMetrics(a *app.App) {
	gauge := func(name, help string, read func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, read)
	}
	counter := func(name, help string, read func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, read)
	}
	o.node.OnLeaderChange(o.metrics.Raft.LeaderChanges.Inc)
	o.metrics.Registry.MustRegister(
		gauge("depot_raft_leader", "1 when this origin leads the cluster, else 0.",
			func() float64 { return map[bool]float64{true: 1}[o.node.IsLeader()] }),
		gauge("depot_raft_term", "The raft term this origin is in.", func() float64 { return o.node.Stat("term") }),
		gauge("depot_raft_commit_index", "The last log index this origin knows to be committed.",
			func() float64 { return o.node.Stat("commit_index") }),
		gauge("depot_raft_applied_index", "The last log index applied to this origin's store.",
			func() float64 { return float64(o.store.LastApplied()) }),
		gauge("depot_raft_fault_tolerance", "How many more voters the cluster can lose and keep a quorum, as this origin sees them.",
			func() float64 { n, _ := o.faultTolerance(); return float64(n) }),

		gauge("depot_storage_free_bytes", "Free bytes of the data directory's filesystem (what the origin may still use).",
			func() float64 { return float64(o.space.Status().Free) }),
		gauge("depot_storage_total_bytes", "Size of the data directory's filesystem.",
			func() float64 { return float64(o.space.Status().Total) }),
		gauge("depot_storage_min_free_bytes", "--min-free-bytes: below this much free space uploads are refused.",
			func() float64 { return float64(o.space.Status().MinFree) }),
		collector{descs: []*prometheus.Desc{blobsDesc, blobBytesDesc}, collect: o.collectBlobs},

		gauge("depot_blob_repair_missing", "Blobs placed on this origin that it lacks, as the last repair pass counted them, less those fetched since.",
			func() float64 { return float64(o.blobs.RepairFigures().Missing) }),
		gauge("depot_blob_repair_running", "1 while a repair pass fetches the blobs this origin lacks.",
			func() float64 { return map[bool]float64{true: 1}[o.blobs.RepairStatus().Running] }),
		counter("depot_blob_repair_fetched_total", "Blobs the repair fetched from the other origins.",
			func() float64 { return float64(o.blobs.RepairFigures().Fetched) }),
		counter("depot_blob_repair_fetched_bytes_total", "Bytes of the blobs the repair fetched.",
			func() float64 { return float64(o.blobs.RepairFigures().FetchedBytes) }),
		counter("depot_blob_repair_failed_total", "Blobs the repair could fetch from no origin (looked for again by the next pass).",
			func() float64 { return float64(o.blobs.RepairFigures().Failed) }),

		collector{descs: []*prometheus.Desc{edgesDesc, edgeLagDesc, edgeContactDesc, edgeCachedDesc, edgeMissingDesc},
			collect: func(ch chan<- prometheus.Metric) { collectEdges(a, ch) }},
	)
	if o.directory != nil {
		o.metrics.Registry.MustRegister(
			gauge("depot_ldap_sync_running", "1 while this origin syncs the directory users (the leader does).",
				func() float64 { return map[bool]float64{true: 1}[o.directorySync.Status().Running] }),
			collector{descs: []*prometheus.Desc{ldapLastDesc, ldapOKDesc, ldapFailedDesc, ldapUsersDesc, ldapDisabledDesc},
				collect: o.collectDirectorySync},
		)
	}
}

var (
	ldapLastDesc     = prometheus.NewDesc("depot_ldap_sync_last_timestamp_seconds", "When the last directory sync ended (unix time).", nil, nil)
	ldapOKDesc       = prometheus.NewDesc("depot_ldap_sync_last_success_timestamp_seconds", "When the last directory sync without an error ended (unix time).", nil, nil)
	ldapFailedDesc   = prometheus.NewDesc("depot_ldap_sync_failed", "1 when the last directory sync ended with an error.", nil, nil)
	ldapUsersDesc    = prometheus.NewDesc("depot_ldap_sync_users", "Directory users the last sync looked up.", nil, nil)
	ldapDisabledDesc = prometheus.NewDesc("depot_ldap_sync_disabled_users", "Users the last directory sync disabled (gone from the directory).", nil, nil)
)

// collectDirectorySync sends the last syncs' results, as the log keeps
// them (every origin says the same).
func (o *Origin) collectDirectorySync(ch chan<- prometheus.Metric) {
	var last, ok *meta.DirectorySync
	_ = o.store.View(func(tx *meta.Tx) error { last, ok = tx.DirectorySyncs(); return nil })
	if ok != nil {
		ch <- prometheus.MustNewConstMetric(ldapOKDesc, prometheus.GaugeValue, float64(ok.EndedAt.Unix()))
	}
	if last == nil {
		return
	}
	failed := 0.0
	if last.Error != "" {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(ldapLastDesc, prometheus.GaugeValue, float64(last.EndedAt.Unix()))
	ch <- prometheus.MustNewConstMetric(ldapFailedDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(ldapUsersDesc, prometheus.GaugeValue, float64(last.Users))
	ch <- prometheus.MustNewConstMetric(ldapDisabledDesc, prometheus.GaugeValue, float64(last.Disabled))
}

var (
	blobsDesc     = prometheus.NewDesc("depot_blobs_stored", "Blobs this origin holds (absent until its store was counted, shortly after the start).", nil, nil)
	blobBytesDesc = prometheus.NewDesc("depot_blobs_stored_bytes", "Bytes of the blobs this origin holds.", nil, nil)

	edgesDesc       = prometheus.NewDesc("depot_edge_nodes", "Registered edge nodes, by status (online, stale, offline).", []string{"status"}, nil)
	edgeLabels      = []string{"edge_id", "edge_name"}
	edgeLagDesc     = prometheus.NewDesc("depot_edge_node_lag_entries", "Log entries an edge node is behind this origin, as of its last report.", edgeLabels, nil)
	edgeContactDesc = prometheus.NewDesc("depot_edge_node_last_contact_timestamp_seconds", "When an edge node last reported (unix time).", edgeLabels, nil)
	edgeCachedDesc  = prometheus.NewDesc("depot_edge_node_cached_bytes", "Bytes an edge node has cached, as of its last report.", edgeLabels, nil)
	edgeMissingDesc = prometheus.NewDesc("depot_edge_node_missing_blobs", "Blobs of its repositories an edge node has not cached yet, as of its last report.", edgeLabels, nil)
)

// collectBlobs sends the blob count and bytes once the store was counted.
func (o *Origin) collectBlobs(ch chan<- prometheus.Metric) {
	if n, b, ok := o.local.Usage(); ok {
		ch <- prometheus.MustNewConstMetric(blobsDesc, prometheus.GaugeValue, float64(n))
		ch <- prometheus.MustNewConstMetric(blobBytesDesc, prometheus.GaugeValue, float64(b))
	}
}

// collectEdges sends the edge nodes' figures as the log holds their last
// reports (every origin says the same of them).
func collectEdges(a *app.App, ch chan<- prometheus.Metric) {
	edges, err := a.EdgeNodeStates(context.Background())
	if err != nil {
		return
	}
	count := map[string]int{"online": 0, "stale": 0, "offline": 0}
	for _, e := range edges {
		count[e.Status]++
		if e.LastContact == nil {
			continue
		}
		labels := []string{e.ID, e.Name}
		ch <- prometheus.MustNewConstMetric(edgeContactDesc, prometheus.GaugeValue, float64(e.LastContact.Unix()), labels...)
		ch <- prometheus.MustNewConstMetric(edgeCachedDesc, prometheus.GaugeValue, float64(e.CachedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(edgeMissingDesc, prometheus.GaugeValue, float64(e.MissingBlobs), labels...)
		if e.Lag != nil {
			ch <- prometheus.MustNewConstMetric(edgeLagDesc, prometheus.GaugeValue, float64(*e.Lag), labels...)
		}
	}
	for status, n := range count {
		ch <- prometheus.MustNewConstMetric(edgesDesc, prometheus.GaugeValue, float64(n), status)
	}
}
