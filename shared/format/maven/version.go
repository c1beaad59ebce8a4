package maven

import (
	"sort"
	"strings"
)

// Version ordering, close to Maven's ComparableVersion: numbers compare as
// numbers, "1.10" > "1.9"; known qualifiers order
// alpha < beta < milestone < rc < snapshot < (release) < sp, unknown ones
// after those, alphabetically; trailing zeros and "ga"/"final"/"release"
// do not count ("1.0" == "1"). It orders the <versions> of generated
// metadata and picks <latest> and <release>.

type vitem struct {
	sep byte   // '.' or '-' (a digit/letter change counts as '-')
	num bool   // numeric item (s holds digits without leading zeros)
	s   string // number or lowercase qualifier
}

func tokenize(v string) []vitem {
	v = strings.ToLower(v)
	var out []vitem
	sep := byte('.')
	i := 0
	for i < len(v) {
		c := v[i]
		if c == '.' || c == '-' || c == '_' {
			if c == '_' {
				c = '-'
			}
			sep = c
			i++
			continue
		}
		j := i
		isNum := c >= '0' && c <= '9'
		for j < len(v) && v[j] != '.' && v[j] != '-' && v[j] != '_' && (v[j] >= '0' && v[j] <= '9') == isNum {
			j++
		}
		s := v[i:j]
		if isNum {
			s = strings.TrimLeft(s, "0")
		} else if j < len(v) && v[j] >= '0' && v[j] <= '9' {
			// "a1", "b2", "m3" are alpha-1, beta-2, milestone-3.
			switch s {
			case "a":
				s = "alpha"
			case "b":
				s = "beta"
			case "m":
				s = "milestone"
			}
		}
		out = append(out, vitem{sep: sep, num: isNum, s: s})
		// A change between digits and letters is a '-' boundary.
		sep = '-'
		if j < len(v) && (v[j] == '.' || v[j] == '-' || v[j] == '_') {
			sep = v[j]
		}
		i = j
	}
	// Trailing nulls ("1.0.0", "1.0-final") do not count.
	for len(out) > 0 && isNull(out[len(out)-1]) {
		out = out[:len(out)-1]
	}
	return out
}

func isNull(it vitem) bool {
	if it.num {
		return it.s == ""
	}
	return qualifierRank(it.s) == qualifierRank("")
}

// qualifierRank orders the known qualifiers; unknown ones rank after all.
func qualifierRank(q string) int {
	switch q {
	case "alpha":
		return 0
	case "beta":
		return 1
	case "milestone":
		return 2
	case "rc", "cr":
		return 3
	case "snapshot":
		return 4
	case "", "ga", "final", "release":
		return 5
	case "sp":
		return 6
	}
	return 7
}

func compareNum(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func compareQualifier(a, b string) int {
	ra, rb := qualifierRank(a), qualifierRank(b)
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	case ra == 7:
		return strings.Compare(a, b)
	}
	return 0
}

// compareItem compares two items; a missing item (nil) is "null".
func compareItem(a, b *vitem) int {
	switch {
	case a == nil && b == nil:
		return 0
	case b == nil:
		if a.num {
			return compareNum(a.s, "")
		}
		return compareQualifier(a.s, "")
	case a == nil:
		return -compareItem(b, nil)
	case a.sep != b.sep:
		// A '.'-number beats a '-' sublist; a '.'-qualifier loses to it.
		dotNum := (a.sep == '.' && a.num) || (b.sep == '.' && b.num)
		if (a.sep == '.') == dotNum {
			return 1
		}
		return -1
	case a.num && b.num:
		return compareNum(a.s, b.s)
	case a.num:
		return 1 // numbers beat qualifiers: "1.1" > "1.a"
	case b.num:
		return -1
	}
	return compareQualifier(a.s, b.s)
}

// CompareVersions orders two Maven versions (-1, 0, 1).
func CompareVersions(a, b string) int {
	ta, tb := tokenize(a), tokenize(b)
	for i := 0; i < len(ta) || i < len(tb); i++ {
		var x, y *vitem
		if i < len(ta) {
			x = &ta[i]
		}
		if i < len(tb) {
			y = &tb[i]
		}
		if c := compareItem(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// SortVersions sorts versions ascending; equal ones ("1.0", "1") by text,
// so the order is total and the generated document deterministic.
func SortVersions(vs []string) {
	sort.SliceStable(vs, func(i, j int) bool {
		if c := CompareVersions(vs[i], vs[j]); c != 0 {
			return c < 0
		}
		return vs[i] < vs[j]
	})
}
