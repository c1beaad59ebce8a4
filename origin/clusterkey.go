package origin

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/depot-registry/depot/cluster/peerauth"
)

// clusterKey is the key raft peers must prove. Without a configured key, a
// node whose raft port only listens on loopback cannot have peers, so it
// makes one and keeps it in the data directory: the port is authenticated
// all the same. Anywhere else a key kept by one node would lock out the
// others, so it must be given.
func clusterKey(cfg Config) (peerauth.Key, error) {
	if cfg.ClusterKey != "" {
		k, err := peerauth.ParseKey(cfg.ClusterKey)
		if err != nil {
			return k, fmt.Errorf("DEPOT_CLUSTER_KEY / --cluster-key: %w (want 32 random bytes in standard base64, as 'depot keygen' prints)", err)
		}
		return k, nil
	}
	if !loopback(cfg.RaftAddr) || (cfg.GossipAddr != "" && !loopback(cfg.GossipAddr)) {
		return peerauth.Key{}, fmt.Errorf("raft address %q or gossip address %q is reachable from other hosts, so origin peers must prove a shared cluster key: "+
			"set DEPOT_CLUSTER_KEY (or --cluster-key) to the same key on every origin; 'depot keygen' prints a new one", cfg.RaftAddr, cfg.GossipAddr)
	}
	if cfg.Join != "" || cfg.BootstrapExpect > 1 {
		return peerauth.Key{}, fmt.Errorf("the origins of a cluster must share a cluster key: set DEPOT_CLUSTER_KEY (or --cluster-key) " +
			"to the same key on every origin; 'depot keygen' prints a new one")
	}
	if peers := keptPeers(cfg.DataDir); len(peers) > 0 {
		return peerauth.Key{}, fmt.Errorf("this origin has been a member of a cluster with %d other origin(s) (%s): start it with the cluster's key "+
			"in DEPOT_CLUSTER_KEY (or --cluster-key), as when it joined", len(peers), filepath.Join(cfg.DataDir, peersFile))
	}
	path := filepath.Join(cfg.DataDir, "cluster-key")
	s, err := persisted(path, "", func() string { return peerauth.NewKey().Encode() })
	if err != nil {
		return peerauth.Key{}, fmt.Errorf("cluster key: %w", err)
	}
	k, err := peerauth.ParseKey(s)
	if err != nil {
		return k, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// loopback reports whether addr (host:port) only listens on this host.
// Names other than localhost count as reachable: they may resolve anywhere.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
