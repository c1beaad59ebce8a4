package leader

import (
	"fmt"

	"github.com/depot-registry/depot/cluster/membership"
	"github.com/depot-registry/depot/cluster/raftnode"
	"github.com/depot-registry/depot/shared/meta"
)

// Gate is the leader's check before it commits an encoded command: every
// voter must know the command's types (each origin gossips the set its
// build knows; a voter the pool has not heard say one runs a build from
// before, meta.Knows). During a rolling upgrade a command only the
// upgraded origins know is refused with meta.ErrUpgrading, rather than
// committed and then stopping every origin that cannot apply it.
func Gate(node *raftnode.Node, members func() []membership.Member) func(data []byte) error {
	return func(data []byte) error {
		types, err := meta.CommandTypesOf(data)
		if err != nil {
			return err
		}
		servers, err := node.Servers()
		if err != nil {
			return err
		}
		sets := map[string]string{}
		for _, m := range members() {
			sets[m.ID] = m.Commands
		}
		for _, s := range servers {
			if !s.Voter {
				continue
			}
			for _, t := range types {
				if !meta.Knows(sets[s.ID], t) {
					return fmt.Errorf("%w (origin %s cannot apply command type %d)", meta.ErrUpgrading, s.ID, t)
				}
			}
		}
		return nil
	}
}

// Upgraded reports whether a member's build knows every command type this
// one does: the leader makes only such origins voters, since an older
// build would stop at the first entry of a newer type in the log.
func Upgraded(m membership.Member) bool {
	for _, t := range meta.CommandTypes() {
		if !meta.Knows(m.Commands, t) {
			return false
		}
	}
	return true
}
